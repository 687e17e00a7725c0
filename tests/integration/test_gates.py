"""Regression gates end to end, as a CI pipeline meets them: every exit path of a gate run.

The model is an oracle that knows the fixtures' gold answers and gets the questions
matching `wrong` wrong on purpose, so each test knows exactly which answers flip.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
QUESTIONS, STORIES = 42, 10

CONFTEST = """
import sys
from pathlib import Path

import pytest

sys.path.insert(0, {tests!r})
from helpers.tombench_oracle import Oracle


def pytest_addoption(parser):
    parser.addoption("--wrong", default="")


@pytest.fixture(scope="session")
def tom_model(request):
    wrong = request.config.getoption("--wrong")
    return Oracle(Path({data!r}), wrong=tuple(w for w in wrong.split("|") if w) if wrong != "ALL" else ("",))
"""


@pytest.fixture
def run(pytester: pytest.Pytester, tom_args: list[str]):
    """Run pytest on the fixtures with the oracle; `wrong` names the questions it gets wrong ("ALL": every one)."""
    pytester.makeconftest(CONFTEST.format(tests=str(REPO / "tests"), data=str(FIXTURES)))

    def go(*args: str, wrong: str = "") -> pytest.RunResult:
        return pytester.runpytest(*tom_args, "--tom-no-cache", f"--wrong={wrong}", "-rf", *args)

    return go


# -- thresholds ---------------------------------------------------------------------------------------------------

def test_a_gate_run_records_wrong_answers_and_exits_by_its_gates(run) -> None:
    result = run("--tom-threshold=tombench.accuracy:lower>=0.4", wrong="Where")
    result.stdout.fnmatch_lines(["*PASS tombench.accuracy:lower>=0.4: 85.7% [[]*] n=42 in * clusters; the lower bound *% is >= 40.0% as required"])
    # The 36 right answers pass; the wrong ones are their own status, neither passed nor failed.
    result.stdout.fnmatch_lines(["tombench wwwwwwi....*"])
    outcomes = result.parseoutcomes()
    assert outcomes["wrong"] == 6 and outcomes["passed"] == QUESTIONS - 6 + STORIES - outcomes["inconsistent"] + 1
    assert result.ret == 0


def test_a_plain_run_still_fails_wrong_answers(run) -> None:
    result = run(wrong="Where")
    # 6 wrong answers and the one story they break fail; everything else passes.
    assert result.ret == 1 and result.parseoutcomes() == {"failed": 7, "passed": QUESTIONS - 6 + STORIES - 1}


def test_a_failing_threshold_shows_value_interval_threshold_and_n(run) -> None:
    result = run("--tom-threshold=tombench.accuracy>=0.9", wrong="Where")
    assert result.ret == 1
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and outcomes["wrong"] == 6
    result.stdout.fnmatch_lines([
        "*_ tom_gate[[]tombench.accuracy:point>=0.9[]] _*",
        "*tombench.accuracy = 85.7% (95% interval *-*, n=42, * clusters; *) misses the threshold >= 90.0%*",
        "FAILED tom_gate[[]tombench.accuracy:point>=0.9[]]*",
    ])


def test_a_glob_gates_each_ability_and_a_typo_lists_the_metrics(run) -> None:
    result = run("--tom-threshold=tombench.ability.*>=0", "--tom-threshold=tombench.acuracy>=0.5")
    outcomes = result.parseoutcomes()
    assert result.ret == 1 and outcomes["failed"] == 1
    result.stdout.fnmatch_lines(["*PASS tombench.ability.faux_pas:point>=0*",
                                 "*the gate 'tombench.acuracy>=0.5' names no metric of this run; metrics: *tombench.accuracy*"])


def test_a_malformed_threshold_is_a_usage_error_before_any_model_call(run) -> None:
    result = run("--tom-threshold=tombench.accuracy > half")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tom-threshold 'tombench.accuracy > half': expected METRIC*"])


def test_errors_and_consistency_rates_are_gateable(run) -> None:
    result = run("--tom-threshold=tombench.errors<=0", "--tom-threshold=tombench.coherence>=0.95", wrong="cookies")
    result.stdout.fnmatch_lines(["*PASS tombench.errors:point<=0*", "*FAIL tombench.coherence:point>=0.95: 90.0%*"])
    assert result.ret == 1


def test_a_suite_declares_its_own_gates(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.format(tests=str(REPO / "tests"), data=str(FIXTURES)))
    pytester.makepyfile(test_tom=f"""
        import pytest_tom
        quick = pytest_tom.suite("tombench", data_dir={str(FIXTURES)!r}, partial=True, languages="en",
                                 gates=["accuracy:lower>=0.1", "ability.*>=0"])
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--tom-no-cache", "--wrong=Where")
    result.stdout.fnmatch_lines(["*PASS quick.accuracy:lower>=0.1*", "*PASS quick.ability.white_lies:point>=0*"])
    assert result.ret == 0 and result.parseoutcomes()["wrong"] == 6


def test_a_typo_in_a_suites_gate_fails_at_import(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_tom="""
        import pytest_tom
        quick = pytest_tom.suite("tombench", gates=["accuracy => 0.3"])
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--tom-model=random")
    result.stdout.fnmatch_lines(["*pytest_tom.suite('tombench', gates=...) 'accuracy => 0.3': expected METRIC*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


# -- baselines ----------------------------------------------------------------------------------------------------

def test_save_then_compare_the_same_model_passes(run, pytester: pytest.Pytester) -> None:
    saved = run("--tom-baseline-save", wrong="Where")
    assert saved.ret == 0
    saved.stdout.fnmatch_lines(["pytest-tom: baseline written to *tom-baseline.json (42 questions)"])
    data = json.loads((pytester.path / "tom-baseline.json").read_text())
    assert data["baseline_version"] == 1 and data["suites"][0]["id"] == "tombench"
    again = run("--tom-baseline=tom-baseline.json", "--tom-compare-fail=tombench.*", wrong="Where")
    again.stdout.fnmatch_lines(["gates: all * passed", "*PASS tombench.accuracy:baseline: 85.7% now vs 85.7% in the baseline (+0.0 points; *: not a significant drop); 0 questions went right->wrong, 0 wrong->right"])
    assert again.ret == 0


def test_a_real_regression_fails_and_lists_the_flipped_questions(run) -> None:
    assert run("--tom-baseline-save=base.json").ret == 0
    result = run("--tom-baseline=base.json", "--tom-compare-fail=tombench.accuracy:2%", wrong="?")
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*tom_gate[[]tombench.accuracy:baseline-2%[]]*",
        "*McNemar p = *(21 right->wrong, 0 wrong->right)*REGRESSION*",
        "right->wrong (21, first 20):",
        "  tombench::tombench[[]en-false_belief_task-0001[]]: *incorrect*",
        "*FAIL tombench.accuracy:baseline-2%: 50.0% now vs 100.0% in the baseline (-50.0 points; *after Holm over 1 metric: a significant drop beyond the tolerated 2 points); 21 questions went right->wrong, 0 wrong->right",
    ])


def test_one_flipped_question_is_noise_not_a_regression(run) -> None:
    assert run("--tom-baseline-save=base.json").ret == 0
    result = run("--tom-baseline=base.json", wrong="Where are the cookies now?")
    result.stdout.fnmatch_lines(["*PASS tombench.accuracy:baseline: 97.6% now vs 100.0% in the baseline (-2.4 points; 95% interval of the change -7.4 to +2.5, p=0.50 after Holm over 1 metric: not a significant drop); 1 question went right->wrong, 0 wrong->right"])
    assert result.ret == 0


def test_a_missing_baseline_is_a_usage_error_that_says_how_to_make_one(run) -> None:
    result = run("--tom-baseline=nowhere.json")  # issue 20: before the run (test_baseline_checks counts the calls)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no baseline at *nowhere.json*--tom-baseline-save=*nowhere.json*"])


def test_a_baseline_of_other_settings_is_refused_unless_forced(run) -> None:
    assert run("--tom-baseline-save=base.json", "--tom-set=tombench.tries=1").ret == 0
    refused = run("--tom-baseline=base.json")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR  # issue 20: before the run
    refused.stderr.fnmatch_lines(["*tries: 1 -> 5*"])
    forced = run("--tom-baseline=base.json", "--tom-baseline-force")
    assert forced.ret == 0


def test_update_rewrites_the_baseline_and_passes(run, pytester: pytest.Pytester) -> None:
    assert run("--tom-baseline-save=base.json").ret == 0
    updated = run("--tom-baseline=base.json", "--tom-baseline-update", wrong="ALL")
    assert updated.ret == 0
    updated.stdout.fnmatch_lines(["*--tom-baseline-update: not failing*", "pytest-tom: baseline written to *base.json*"])
    items = json.loads((pytester.path / "base.json").read_text())["suites"][0]["items"]
    assert {v["outcome"] for v in items.values()} == {"incorrect"}
    assert run("--tom-baseline=base.json", wrong="ALL").ret == 0


def test_compare_rules_need_a_baseline(run) -> None:
    result = run("--tom-compare-fail=tombench.accuracy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tom-compare-fail needs --tom-baseline=PATH*"])


# -- where the results go -----------------------------------------------------------------------------------------

def test_junit_markdown_and_report_carry_the_gates(run, pytester: pytest.Pytester) -> None:
    result = run("--tom-threshold=tombench.accuracy:lower>=0.4", "--junitxml=junit.xml", "--tom-markdown=summary.md",
                 "--tom-report=report.json", wrong="Where")
    assert result.ret == 0
    case = next(c for c in ET.parse(pytester.path / "junit.xml").iter("testcase") if "tom_gate" in c.get("name", "")
                or "tom_gate" in c.get("classname", ""))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["tom_gate_value"].startswith("0.857") and props["tom_gate_n"] == "42"
    assert "✅ **All 1 gate passed**" in (pytester.path / "summary.md").read_text()
    gates = json.loads((pytester.path / "report.json").read_text())["gates"]
    assert gates[0]["name"] == "tombench.accuracy:lower>=0.4" and gates[0]["passed"] is True


@pytest.mark.slow
def test_gates_under_xdist_are_judged_once_on_the_controller(run) -> None:
    one = run("--tom-threshold=tombench.accuracy>=0.9", wrong="Where")
    many = run("-n", "2", "--tom-threshold=tombench.accuracy>=0.9", wrong="Where")
    assert many.ret == one.ret == 1
    assert many.parseoutcomes() == one.parseoutcomes()
    many.stdout.fnmatch_lines(["*FAIL tombench.accuracy:point>=0.9: 85.7%*"])


def test_pytest_html_shows_the_gates(run, pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    result = run("--tom-threshold=tombench.accuracy>=0.9", "--html=report.html", "--self-contained-html", wrong="Where")
    assert result.ret == 1
    page = (pytester.path / "report.html").read_text()  # pytest-html embeds its rows as escaped JSON
    assert "tom_gate[tombench.accuracy:point&gt;=0.9]" in page
    assert "misses the threshold &amp;gt;= 90.0%&lt;/pre&gt;" in page  # the gate's message, as an html extra


def test_exitfirst_does_not_stop_on_wrong_answers_in_a_gate_run(run) -> None:
    result = run("-x", "--tom-threshold=tombench.accuracy>=0.9", wrong="Where")
    outcomes = result.parseoutcomes()
    assert result.ret == 1 and outcomes["failed"] == 1 and outcomes["wrong"] == 6  # every question ran, then the gate


def test_a_gate_run_judges_what_marks_select(run) -> None:
    result = run("-m", "zh", "--tom-threshold=tombench.accuracy>=0.9", wrong="Where")
    result.stdout.fnmatch_lines(["*PASS tombench.accuracy:point>=0.9: 100.0% * n=21*"])  # the wrong ones are English
    assert result.ret == 0
