"""Running: outcomes, messages, models, cache, replay, report, errors."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pytest_tom.output.report import schema


def test_a_perfect_model_passes_every_question_and_story(pytester: pytest.Pytester, tom_args: list[str], oracle_conftest) -> None:
    oracle_conftest()
    result = pytester.runpytest(*tom_args)
    result.assert_outcomes(passed=52)
    result.stdout.fnmatch_lines(["*pytest-tom summary*", "*tombench en (paper aggregation): task AVG 100.0*", "*coherence groups: 10/10 passed*"])


def test_a_wrong_answer_fails_with_everything_needed_to_judge_it(pytester: pytest.Pytester, tom_args: list[str], oracle_conftest) -> None:
    oracle_conftest(wrong=("Where will Xiao Zhou look for the cookies",))
    result = pytester.runpytest(*tom_args, "-m", "en", "--tom-detail=full")
    result.assert_outcomes(passed=20 + 4, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*ToMBench en False Belief Task / Location false beliefs (False Belief Task.jsonl line 2): incorrect",
            "story: Xiao Lin and Xiao Zhou are in the kitchen.*",
            "question: Where will Xiao Zhou look for the cookies when he returns?",
            "options (original order):",
            "  B. Blue jar",
            "gold: B. Blue jar",
            "final answer (majority of 5 tries, lenient extraction): *",
            "  try 1 [[]shown *[]]: 'Let me think. [[]*[]]' -> * -> *",
        ]
    )
    result.stdout.fnmatch_lines(["*coherence group en-false_belief_task-story001: 1 of 6 questions failed", "  en-false_belief_task-0002: incorrect (answer *, gold 'B')"])


def test_unreadable_answers_are_unparseable_not_wrong(pytester: pytest.Pytester, tom_args: list[str], oracle_conftest) -> None:
    oracle_conftest(garble=("Is what the brother says true?",))
    result = pytester.runpytest(*tom_args, "-m", "en and sst and not coherence", "--tom-report=r.json", "--tom-detail=full")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*: unparseable", "*final answer*: unparseable", "*'I would rather not say.' -> unparseable"])
    report = json.loads((pytester.path / "r.json").read_text())
    row = report["suites"][0]["tables"][0]["rows"][0]
    assert row["unparseable"] == 1 and row["parse_rate"] == 0.5 and row["correct"] == 1


def test_model_errors_are_errors_and_a_budget_tolerates_them(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(scope="session")
        def tom_model():
            def flaky(batch, settings):
                raise TimeoutError("upstream API timed out after 3 retries")
            return flaky
        """
    )
    result = pytester.runpytest(*tom_args, "-m", "en and frt")
    result.assert_outcomes(errors=5)
    result.stdout.fnmatch_lines(["*model error: TimeoutError: upstream API timed out after 3 retries*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    tolerated = pytester.runpytest(*tom_args, "-m", "en and frt", "--tom-max-errors=10", "-rs")
    tolerated.assert_outcomes(skipped=5)
    assert tolerated.ret == pytest.ExitCode.OK


def test_the_python_uri_loads_the_users_callable(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    pytester.makepyfile(my_model="def generate(batch, settings):\n    return ['[[A]]' for _ in batch]\n")
    pytester.syspathinsert()
    result = pytester.runpytest(*tom_args, "--tom-model=python:my_model:generate", "-m", "en and not coherence", "-q", "--tb=no")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 21
    result.stdout.fnmatch_lines(["model: python:my_model:generate*"])


def test_a_missing_model_is_one_clear_usage_error(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: no model to test: pass --tom-model=URI*"])


def test_second_run_is_answered_from_the_cache(pytester: pytest.Pytester, tom_args: list[str], tmp_path: Path) -> None:
    args = [*tom_args, "--tom-model=random:5", f"--tom-cache-dir={tmp_path / 'c'}", "-q", "--tb=no"]
    first = pytester.runpytest(*args)
    first.stdout.fnmatch_lines(["engine: 42 questions, 210 requests (* unique), 0 from cache, * sent to the model*"])
    second = pytester.runpytest(*args)
    second.stdout.fnmatch_lines(["engine: 42 questions, 210 requests (* unique), * from cache, 0 sent to the model*"])
    assert first.parseoutcomes() == second.parseoutcomes()
    fresh = pytester.runpytest(*args[:-2], "--tom-no-cache", "-q", "--tb=no")
    fresh.stdout.fnmatch_lines(["engine: *, 0 from cache, * sent to the model*"])


def test_report_validates_and_replay_reproduces_the_run(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    first = pytester.runpytest(*tom_args, "--tom-model=random:9", "--tom-report=run1.json", "--tom-no-cache", "-q", "--tb=no")
    report = json.loads((pytester.path / "run1.json").read_text())
    jsonschema.validate(report, schema())
    item = next(i for i in report["items"] if i["qid"] == "en-false_belief_task-0001")
    assert item["nodeid"] == "tombench::tombench[en-false_belief_task-0001]"
    assert len(item["request_keys"]) == 5 and len(item["responses"]) == 5 and item["parsed"] in "ABCD"
    assert report["model"]["uri"] == "random:9"
    replay = pytester.runpytest(*tom_args, "--tom-model=replay:run1.json", "--tom-report=run2.json", "--tom-no-cache", "-q", "--tb=no")
    assert replay.parseoutcomes() == first.parseoutcomes()
    again = json.loads((pytester.path / "run2.json").read_text())
    assert [i["outcome"] for i in again["items"]] == [i["outcome"] for i in report["items"]]


def test_replay_of_changed_prompts_errors_instead_of_guessing(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    pytester.runpytest(*tom_args, "--tom-model=random:9", "--tom-report=run1.json", "--tom-no-cache", "-q", "--tb=no")
    result = pytester.runpytest(*tom_args, "--tom-model=replay:run1.json", "--tom-set=tombench.prompt=cot", "--tom-no-cache", "-q", "--tb=no")
    assert result.parseoutcomes().get("errors") == 42 + 10


def test_partial_story_selection_skips_the_coherence_test(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-model=random", "-m", "en and fbt and not second_order_beliefs", "-rs", "--tb=no")
    result.stdout.fnmatch_lines(["*only 4 of 6 questions are selected; a consistency assertion is never computed on a partial group*"])
    assert result.parseoutcomes()["skipped"] == 2


def test_loglikelihood_scoring_and_disagreement(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-model=random:2", "--tom-set=tombench.scoring=both", "-q", "--tb=no")
    result.stdout.fnmatch_lines(["  tombench en log-likelihood scoring: % of items it disagrees with generation on * | % of questions right *"])
