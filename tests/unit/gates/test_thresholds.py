"""Thresholds against a published row (`METRIC>=ref:MODEL[-N%|-Npts]`): parsing, the required value, the verdict and
what it names, and the check before a run that such a row exists under the run's settings."""

from __future__ import annotations

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.framework.metric import Metric
from pytest_tom.framework.reference import ReferenceRow
from pytest_tom.gates.thresholds import check_reference, parse_threshold, reference_problem

ROW = ReferenceRow("tombench", "ChatGLM3-6B", (("prompt", "vanilla"), ("tries", "5")), "languages.en.task_avg", 0.403,
                   "Chen et al. 2024 (ToMBench, ACL 2024), Table 2", 18)
VANILLA = {"prompt": "vanilla", "tries": 5, "aggregation": "paper", "partial": True}


@pytest.mark.parametrize(("text", "model", "margin", "bound", "op"), [
    ("tombench.languages.en.task_avg>=ref:gpt-4o", "gpt-4o", "", "point", ">="),
    ("tombench.languages.en.task_avg >= ref:GPT-4o mini-5%", "GPT-4o mini", "-5%", "point", ">="),
    ("tombench.languages.en.task_avg>=ref:GPT-4", "GPT-4", "", "point", ">="),  # a bare -4 is part of the name
    ("simpletom.average:lower>=REF:GPT-4 0613 (June) - 3pts", "GPT-4 0613 (June)", "-3pts", "lower", ">="),
    ("tomato.all.accuracy<=ref:Llama3 8B+2.5%", "Llama3 8B", "+2.5%", "point", "<="),
])
def test_a_ref_rule_reads_model_margin_bound_and_op(text: str, model: str, margin: str, bound: str, op: str) -> None:
    rule = parse_threshold(text)
    assert (rule.reference, rule.margin, rule.bound, rule.op, rule.text) == (model, margin, bound, op, text.strip())


def test_fixed_value_rules_read_as_before() -> None:
    rule = parse_threshold("tombench.accuracy:lower>=45%")
    assert (rule.pattern, rule.value, rule.bound, rule.reference, rule.margin) == ("tombench.accuracy", 0.45, "lower", "", "")
    with pytest.raises(TomConfigError, match="ref:gpt-4o-5%"):  # the error shows the new form too
        parse_threshold("tombench.accuracy>=high")


@pytest.mark.parametrize(("margin", "unit", "published", "bar"), [
    ("", "rate", 0.403, 0.403), ("-5%", "rate", 0.4, 0.38), ("+10%", "percent", 44.0, 48.4),
    ("-3pts", "rate", 0.403, 0.373), ("-3pts", "percent", 44.0, 41.0),
])
def test_the_bar_is_the_published_value_moved_by_a_relative_or_point_margin(margin: str, unit: str, published: float,
                                                                          bar: float) -> None:
    rule = parse_threshold(f"x>=ref:m{margin}")
    assert rule.bar(published, unit) == pytest.approx(bar)


def metric(value: object, interval: tuple[float, float] | None = None, unit: str = "rate") -> Metric:
    return Metric(("languages", "en", "task_avg"), value, "task AVG", unit, "tombench en", interval)  # type: ignore[arg-type]


def test_a_passing_and_a_failing_gate_name_the_row_its_source_and_settings() -> None:
    passed = check_reference(parse_threshold("tombench.languages.en.task_avg>=ref:chatglm3-6b-50%"), metric(0.271), ROW,
                             "tombench.languages.en.task_avg")
    assert passed.passed and passed.name == "tombench.languages.en.task_avg:point>=ref:ChatGLM3-6B-50%"
    assert passed.message == ("tombench.languages.en.task_avg = 27.1% meets the threshold >= ChatGLM3-6B's published "
                              "40.3%, -50% of it: 20.2% (Chen et al. 2024 (ToMBench, ACL 2024), Table 2; prompt=vanilla, "
                              "tries=5)")
    assert passed.threshold == pytest.approx(0.2015) and passed.estimate is None
    assert passed.to_dict()["details"]["reference"] == {
        "model": "ChatGLM3-6B", "value": 0.403, "source": "Chen et al. 2024 (ToMBench, ACL 2024), Table 2",
        "settings": {"prompt": "vanilla", "tries": "5"}, "metric": "languages.en.task_avg", "margin": "-50%",
        "required": pytest.approx(0.2015), "unit": "rate", "got": 0.271}
    failed = check_reference(parse_threshold("tombench.languages.en.task_avg>=ref:chatglm3-6b"), metric(0.271), ROW,
                             "tombench.languages.en.task_avg")
    assert not failed.passed and "27.1% misses the threshold >= ChatGLM3-6B's published 40.3% (Chen" in failed.message


def test_a_percent_metric_is_compared_in_its_own_unit() -> None:
    row = ReferenceRow("fantom", "GPT-4o-2024-05-13", (), "contexts.short.fantom.inaccessible:set:ALL", 2.0, "README")
    got = check_reference(parse_threshold("fantom.*>=ref:gpt-4o-2024-05-13-1pts"), metric(1.5, unit="percent"), row, "f")
    assert got.passed and got.threshold == pytest.approx(1.0) and "f = 1.5% meets" in got.message


@pytest.mark.parametrize(("value", "bound", "why"), [
    (None, "point", "it has no value (nothing was scored)"),
    (0.5, "lower", "it has no lower bound"),
])
def test_a_metric_without_the_value_compared_fails_saying_why(value: object, bound: str, why: str) -> None:
    rule = parse_threshold(f"x:{bound}>=ref:chatglm3-6b")
    result = check_reference(rule, metric(value), ROW, "x")
    assert not result.passed and why in result.message
    assert not check_reference(rule, None, ROW, "x").passed


def test_the_lower_bound_of_a_metric_with_an_interval_is_compared() -> None:
    result = check_reference(parse_threshold("x:lower>=ref:chatglm3-6b"), metric(0.5, (0.41, 0.6)), ROW, "x")
    assert result.passed and result.message.startswith("the lower bound of x = 41.0% meets")


SUITES = [("tombench", "tombench", VANILLA)]


def test_before_the_run_a_ref_rule_must_name_a_row_under_the_run_settings() -> None:
    assert reference_problem(parse_threshold("tombench.languages.en.task_avg>=ref:chatglm3-6b"), SUITES) is None
    assert reference_problem(parse_threshold("tombench.languages.*.task_avg>=ref:chatglm3-6b"), SUITES) is None
    assert reference_problem(parse_threshold("languages.en.task_avg>=ref:chatglm3-6b"), SUITES, own=True) is None
    wrong_metric = reference_problem(parse_threshold("tombench.accuracy>=ref:chatglm3-6b"), SUITES)
    assert wrong_metric is not None and "ChatGLM3-6B's rows for tombench name: tombench.languages.zh.task_avg" in wrong_metric
    other = reference_problem(parse_threshold("tombench.languages.en.task_avg>=ref:chatglm3-6b"),
                              [("tombench", "tombench", {**VANILLA, "tries": 1})])
    assert other is not None and "no published ChatGLM3-6B row for tombench with tries=1 (published: tries=5)" in other
    # a row of another benchmark's suite does not count
    assert reference_problem(parse_threshold("tombench.languages.en.task_avg>=ref:chatglm3-6b"),
                             [("fantom", "fantom", {})]) is not None
