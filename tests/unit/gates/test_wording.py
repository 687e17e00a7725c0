"""Gate lines say in words what passed or failed, and a metric too small to test says so (issue 19)."""

from __future__ import annotations

from pytest_tom.gates.metrics import MetricData
from pytest_tom.gates.result import GateResult
from pytest_tom.gates.thresholds import check_threshold, parse_threshold
from pytest_tom.gates.wording import line, untestable, verdict
from pytest_tom.output.markdown import render_markdown
from pytest_tom.stats import compare_paired


def baseline_gate(base: list[float], new: list[float], *, over: int = 52, alpha: float = 0.05) -> GateResult:
    """A baseline gate as `compare` builds it: the decision is the test's, the words are `wording`'s."""
    c = compare_paired(base, new, [f"s{i // 2}" for i in range(len(base))], alpha=alpha)
    return GateResult("tombench.ability.x:baseline", "baseline", "tombench.ability.x", not c.regressed, None, "message",
                      comparison=c, details={"alpha": alpha, "holm_over": over, "higher_is_better": True, "unit": "question"})


def test_a_comparison_says_now_vs_baseline_the_interval_of_the_change_and_holm_over_how_many() -> None:
    gate = baseline_gate([1.0] * 30 + [0.0] * 10, [1.0] * 28 + [0.0] * 12)
    assert gate.passed and untestable(gate) is None
    text = line(gate)
    assert text.startswith("PASS tombench.ability.x:baseline: 70.0% now vs 75.0% in the baseline (-5.0 points; "
                           "95% interval of the change ")
    assert "after Holm over 52 metrics: not a significant drop); 2 questions went right->wrong, 0 wrong->right" in text
    assert verdict(gate) == "pass"


def test_a_significant_drop_is_named_as_such() -> None:
    gate = baseline_gate([1.0] * 40, [1.0] * 20 + [0.0] * 20, over=1)
    assert not gate.passed
    assert line(gate).startswith("FAIL tombench.ability.x:baseline: 50.0% now vs 100.0% in the baseline (-50.0 points;")
    assert "p<0.001 after Holm over 1 metric: a significant drop); 20 questions went right->wrong" in line(gate)
    assert verdict(gate) == "significant drop"


def test_too_few_units_is_not_testable_instead_of_a_degenerate_interval() -> None:
    gate = baseline_gate([1.0, 1.0], [0.0, 0.0])  # both right->wrong: the interval would read -100.0 to -100.0
    assert gate.passed  # the decision is unchanged: two questions cannot show a drop at alpha 0.05
    assert untestable(gate) == "n=2"
    assert line(gate) == ("PASS tombench.ability.x:baseline: not testable (n=2): 0.0% now vs 100.0% in the baseline "
                          "(-100.0 points), too few questions to show a drop at alpha 0.05; "
                          "2 questions went right->wrong, 0 wrong->right")
    assert "interval" not in line(gate)
    assert verdict(gate) == "pass: not testable (n=2)"
    rows = [r for r in render_markdown([gate], model_uri="m", baseline="b").splitlines() if r.startswith("| `")]
    assert rows[0].endswith("| −100.0 pts, not testable (n=2); 2 right→wrong, 0 wrong→right of 2 | 0.250 "
                            "| ⚪ pass: not testable (n=2) |")


def test_what_is_testable_depends_on_alpha() -> None:
    """Four pairs all worse give an exact p of 1/16: below alpha 0.1, above 0.05."""
    assert untestable(baseline_gate([1.0] * 4, [0.0] * 4)) == "n=4"
    assert untestable(baseline_gate([1.0] * 4, [0.0] * 4, alpha=0.1)) is None


def _threshold(text: str, values: list[float]) -> GateResult:
    metric = MetricData("accuracy", tuple(f"q{i}" for i in range(len(values))), tuple(values),
                        tuple(f"s{i // 3}" for i in range(len(values))), "accuracy")
    return check_threshold(parse_threshold(text), metric, "tombench.accuracy")


def test_threshold_lines_say_which_bound_was_compared_with_what() -> None:
    passing = _threshold("tombench.accuracy:upper>=0.25", [1.0] * 6 + [0.0] * 15)
    est = passing.estimate
    assert est is not None
    assert line(passing) == (f"PASS tombench.accuracy:upper>=0.25: 28.6% [{est.low:.1%}-{est.high:.1%}] n=21 in 7 clusters; "
                             f"the upper bound {est.high:.1%} is >= 25.0% as required")
    failing = _threshold("tombench.accuracy>=0.5", [1.0] * 6 + [0.0] * 15)
    assert line(failing).endswith("; the value 28.6% is below 50.0%, but must be >= 50.0%")
    assert verdict(failing) == "fail"
