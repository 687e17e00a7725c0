"""What a user reads when something goes wrong: a few clear lines, never pytest's or pluggy's internals (issue 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FBT = ["-m", "en and fbt and not coherence", "--tom-set=tombench.tries=1", "--tom-progress=off", "--tom-no-cache"]
"""12 English false-belief questions, one try each: 12 requests, one batch of the user's callable (batch size 16)."""

USER_MODELS = r'''
import json
import os

import pytest_tom


def _log(n):
    with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
        log.write(json.dumps(n) + "\n")


def _check_tokenizer(prompt):
    raise ValueError("the tokenizer is not loaded")


def raising(batch, settings):
    _log(len(batch))
    return [_check_tokenizer(p) for p in batch]


def gives_str(batch, settings):
    _log(len(batch))
    return "[[A]]" * len(batch)


def too_few(batch, settings):
    _log(len(batch))
    return ["[[A]]"] * (len(batch) - 1)


def gives_ints(batch, settings):
    _log(len(batch))
    return [42] * len(batch)


def single(messages):
    _log(1)
    return "[[A]]"


@pytest_tom.per_prompt
def single_marked(messages):
    _log(1)
    return "[[A]]"


@pytest_tom.per_prompt
def single_with_settings(messages, settings):
    _log(1)
    assert settings["temperature"] == 0.0
    return "[[A]]"
'''


@pytest.fixture
def user_models(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The user's model module on the path; returns the calls it received (the batch size of each call)."""
    pytester.makepyfile(user_models=USER_MODELS)
    monkeypatch.syspath_prepend(str(pytester.path))
    log = tmp_path / "calls.log"
    monkeypatch.setenv("TOM_TEST_CALL_LOG", str(log))

    def calls() -> list[int]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    return calls


def _section(result: pytest.RunResult, name: str) -> list[str]:
    """The lines of one `===== name =====` section of the output, without its header."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.startswith("=") and f" {name} " in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("====")), len(lines))
    return lines[start + 1 : end]


# -- a model that raises ------------------------------------------------------------------------------------


def test_a_raising_callable_shows_the_users_frames_once_in_a_few_lines(
    pytester: pytest.Pytester, tom_args: list[str], user_models
) -> None:
    result = pytester.runpytest(*tom_args, *FBT, "--tom-model=python:user_models:raising")
    result.assert_outcomes(errors=12)
    assert user_models() == [12]
    out = result.stdout.str() + result.stderr.str()
    errors = _section(result, "ERRORS")
    # 9 headers; the first item: its message, the traceback (6 lines of the user's frames in 3.11, 8 in all) and a
    # closing note; the 8 others one line each.
    assert len(errors) - errors.count("    return [_check_tokenizer(p) for p in batch]") * 2 <= 9 + 8 + 8, "\n".join(errors)
    assert len(result.outlines) < 80, out
    result.stdout.fnmatch_lines([
        "*ERROR at setup of tombench: en-false_belief_task-0001*",
        "tombench/data/False Belief Task.jsonl line 1: model error: ValueError: the tokenizer is not loaded",
        "Traceback (your code only, most recent call last):",
        '  File "*user_models.py", line *, in raising',
        "    return [[]_check_tokenizer(p) for p in batch[]]",
        '  File "*user_models.py", line *, in _check_tokenizer',
        '    raise ValueError("the tokenizer is not loaded")',
        "ValueError: the tokenizer is not loaded",
    ])
    assert out.count('raise ValueError("the tokenizer is not loaded")') == 1
    # counted in the ERRORS section: pytest's short summary repeats each line, untruncated when `CI` is set; the
    # first three errors of each of the three abilities are shown, the other three counted (`run.bounded`)
    assert "\n".join(errors).count("same error as tombench::tombench[en-false_belief_task-0001]: model error: "
                                    "ValueError: the tokenizer is not loaded") == 8
    result.stdout.fnmatch_lines(["*pytest-tom: 3 more failures not shown*"])
    shown = "\n".join(errors)
    for internal in ("pluggy", "_pytest", "pytest_tom/", "collect.py", "def setup"):
        assert internal not in shown


def test_a_raising_tom_model_fixture_shows_the_conftest_frames_once(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    pytester.makeconftest("""
        import pytest

        def load_weights():
            raise FileNotFoundError("weights.bin")

        @pytest.fixture(scope="session")
        def tom_model():
            return load_weights()
    """)
    result = pytester.runpytest(*tom_args, *FBT)
    result.assert_outcomes(errors=12)
    result.stdout.fnmatch_lines([
        "fixture setup failed: FileNotFoundError: weights.bin",
        "Traceback (your code only, most recent call last):",
        '  File "*conftest.py", line *, in tom_model',
        '  File "*conftest.py", line *, in load_weights',
        "FileNotFoundError: weights.bin",
    ])
    errors = _section(result, "ERRORS")
    assert "\n".join(errors).count("same error as tombench::tombench[en-false_belief_task-0001]: fixture setup failed") == 11
    assert len(errors) == 12 + 8 + 11
    assert "pluggy" not in "\n".join(errors) and "_pytest" not in "\n".join(errors)


@pytest.mark.slow
def test_under_xdist_each_worker_shows_the_traceback_at_most_once(
    pytester: pytest.Pytester, tom_args: list[str], user_models, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    result = pytester.runpytest_subprocess(*tom_args, *FBT, "--tom-model=python:user_models:raising", "-n", "2",
                                           "--tom-detail=full")  # every item listed: the count below is per item
    result.assert_outcomes(errors=12)
    assert sorted(user_models()) == [6, 6]  # each worker answers its own block, in one call
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "pluggy" not in "\n".join(_section(result, "ERRORS"))
    errors = _section(result, "ERRORS")
    assert errors.count("Traceback (your code only, most recent call last):") == 2
    assert sum(line.startswith("same error as") for line in errors) == 10


# -- a callable that returns the wrong thing or takes the wrong arguments ---------------------------------


@pytest.mark.parametrize(("target", "message"), [
    ("gives_str", "model error: python:user_models:gives_str returned a str ('[[A]][[A]][[A]][[A]][[A]][[A]][[A]][[A]][[A]]"
                  "[[A]][[A][...]), expected a list of str, one answer per conversation in order; a function that "
                  "answers one conversation at a time needs @pytest_tom.per_prompt"),
    ("too_few", "model error: python:user_models:too_few returned 11 answers for 12 conversations: a batched callable "
                "returns one str per conversation, in order"),
    ("gives_ints", "model error: python:user_models:gives_ints returned a list whose item 0 is an int (42), expected str "
                   "(one answer per conversation)"),
], ids=["str-not-list", "wrong-length", "not-str-items"])
def test_a_callable_returning_the_wrong_shape_is_one_clear_error_never_a_score(
    pytester: pytest.Pytester, tom_args: list[str], user_models, target: str, message: str
) -> None:
    result = pytester.runpytest(*tom_args, *FBT, f"--tom-model=python:user_models:{target}", "--tom-report=r.json")
    result.assert_outcomes(errors=12)  # never passed or failed: nothing was scored
    assert user_models() == [12]
    errors = _section(result, "ERRORS")
    assert errors[1] == f"tombench/data/False Belief Task.jsonl line 1: {message}"
    # three errors shown per ability (three abilities), the rest counted in one line each (`run.bounded`)
    assert len(errors) == 9 + 1 + 8 and sum(line.startswith("same error as") for line in errors) == 8
    report = json.loads((pytester.path / "r.json").read_text())
    assert {item["outcome"] for item in report["items"]} == {"error"}


def test_a_one_argument_function_without_the_decorator_is_a_usage_error_suggesting_it(
    pytester: pytest.Pytester, tom_args: list[str], user_models
) -> None:
    result = pytester.runpytest(*tom_args, *FBT, "--tom-model=python:user_models:single")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: pytest-tom: python:user_models:single takes one argument (messages): if it answers one conversation "
        "(a list of chat messages) with one str, decorate it with @pytest_tom.per_prompt; a batched callable takes "
        "(conversations, settings) and returns one str per conversation",
    ])
    assert user_models() == []
    assert "Exit" not in result.stdout.str() + result.stderr.str()


def test_the_same_check_applies_to_a_conftest_callable(pytester: pytest.Pytester, tom_args: list[str], user_models) -> None:
    pytester.makeconftest("""
        import pytest
        from user_models import single

        @pytest.fixture(scope="session")
        def tom_model():
            return single
    """)
    result = pytester.runpytest(*tom_args, *FBT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: python:user_models:single takes one argument (messages): *"
                                 "@pytest_tom.per_prompt*"])
    assert user_models() == []


@pytest.mark.parametrize("target", ["single_marked", "single_with_settings"])
def test_a_per_prompt_function_takes_the_messages_and_optionally_the_settings(
    pytester: pytest.Pytester, tom_args: list[str], user_models, target: str
) -> None:
    result = pytester.runpytest(*tom_args, *FBT, f"--tom-model=python:user_models:{target}", "--tb=no")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 12 and "errors" not in outcomes
    assert user_models() == [1] * 12


# -- run-stopping errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    ((), "no model to test: pass --tom-model=URI*"),
    (("--tom-model=python:no_such_module:fn",), "--tom-model python:no_such_module:fn: cannot import 'no_such_module'*"),
    (("--tom-model=hf:./no-such-folder",), "--tom-model hf:./no-such-folder: no such folder: *"),
], ids=["no-model", "bad-import", "missing-folder"])
def test_a_run_stopping_error_reads_as_one_usage_error_line(
    pytester: pytest.Pytester, tom_args: list[str], args: tuple[str, ...], message: str
) -> None:
    result = pytester.runpytest(*tom_args, *FBT, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: {message}"])
    out = result.stdout.str() + result.stderr.str()
    assert "_pytest.outcomes.Exit" not in out and "!!!" not in out and "Traceback" not in out
    assert out.count("pytest-tom: ") == 1


# -- failure headers and wording ---------------------------------------------------------------------------

TWO_SUITES = """
import pytest_tom

DATA = {data!r}
tombench = pytest_tom.suite("tombench", data_dir=DATA, languages="en", partial=True)
tombench_quick = pytest_tom.suite("tombench", data_dir=DATA, languages="en", tries=1, sample=10, seed=1, partial=True)
"""


def test_failure_headers_name_the_suite_and_one_try_is_no_vote(pytester: pytest.Pytester, fixtures_dir: Path) -> None:
    pytester.makepyfile(test_tom=TWO_SUITES.format(data=str(fixtures_dir)))
    # random:1 answers this question wrongly in both suites (the draw hashes each request's key: if the keys of
    # ToMBench's requests change, pick another seed that fails both)
    result = pytester.runpytest("--tom-model=random:1", "--tom-no-cache", "--tom-progress=off", "-p", "no:cacheprovider",
                                "-k", "false_belief_task-0004", "--tom-detail=full")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*_ tombench: en-false_belief_task-0004 _*",
        "final answer (majority of 5 tries, lenient extraction): *",
        "*_ tombench_quick: en-false_belief_task-0004 _*",
        "final answer (one try, lenient extraction): *",
    ])
    assert "majority of 1 tries" not in result.stdout.str()


# -- output volume -----------------------------------------------------------------------------------------


def _wrong_once(oracle_conftest) -> None:
    oracle_conftest(wrong=("Where will Xiao Zhou look for the cookies",))


def test_a_wrong_answer_is_two_lines_by_default(pytester: pytest.Pytester, tom_args: list[str], oracle_conftest) -> None:
    _wrong_once(oracle_conftest)
    result = pytester.runpytest(*tom_args, *FBT)
    result.assert_outcomes(passed=11, failed=1)
    header, *body = _section(result, "FAILURES")
    assert "_ tombench: en-false_belief_task-0002 _" in header
    assert body == [
        "incorrect: answer C (Fridge), gold B (Blue jar)",
        "  response: 'Let me think. [[B]]' -> C",
        "  (wrong answers are shown in short; -v or --tom-detail=full shows the prompt and every try, as the "
        "--tom-report JSON does)",
    ]
    result.stdout.fnmatch_lines(["FAILED tombench::tombench[[]en-false_belief_task-0002[]] - incorrect: answer C*"])
    assert "story:" not in result.stdout.str()


@pytest.mark.parametrize("how", [["-v"], ["--tom-detail=full"], ["--tb=long"], ["-o", "tom_detail=full"]],
                         ids=["-v", "option", "tb-long", "ini"])
def test_the_full_detail_comes_with_v_the_option_or_tb_long(
    pytester: pytest.Pytester, tom_args: list[str], oracle_conftest, how: list[str]
) -> None:
    _wrong_once(oracle_conftest)
    result = pytester.runpytest(*tom_args, *FBT, *how)
    result.stdout.fnmatch_lines([
        "ToMBench en False Belief Task / Location false beliefs (False Belief Task.jsonl line 2): incorrect",
        "story: *", "question: Where will Xiao Zhou look for the cookies when he returns?", "gold: B. Blue jar",
        "final answer (one try, lenient extraction): C",
    ])


def test_tb_line_is_one_line_at_the_data_row_and_tb_no_none(pytester: pytest.Pytester, tom_args: list[str], oracle_conftest) -> None:
    _wrong_once(oracle_conftest)
    line = pytester.runpytest(*tom_args, *FBT, "--tb=line")
    assert _section(line, "FAILURES") == [
        "tombench/data/False Belief Task.jsonl:2: incorrect: answer C (Fridge), gold B (Blue jar)"]
    no = pytester.runpytest(*tom_args, *FBT, "--tb=no")
    assert "FAILURES" not in no.stdout.str()
    no.stdout.fnmatch_lines(["*pytest-tom summary*", "*1 failed, 11 passed*"])
    short = pytester.runpytest(*tom_args, *FBT, "--tb=short", "-v")
    assert "story:" not in short.stdout.str()


def test_an_unknown_detail_level_is_a_usage_error(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-detail=everything")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: --tom-detail='everything' (ini tom_detail): expected short or full"])


def test_the_report_keeps_the_full_explanation(pytester: pytest.Pytester, tom_args: list[str], oracle_conftest) -> None:
    _wrong_once(oracle_conftest)
    pytester.runpytest(*tom_args, *FBT, "--tom-report=r.json")
    report = json.loads((pytester.path / "r.json").read_text())
    wrong = [i for i in report["items"] if i["outcome"] == "incorrect"]
    assert len(wrong) == 1 and "story: " in wrong[0]["message"] and "try 1 [shown" in wrong[0]["message"]


def test_without_a_test_file_the_progress_is_dots(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, *FBT, "--tom-model=random", "--tb=no")
    result.stdout.re_match_lines([r"^tombench [.F]{12} +\[100%\]$"])


def test_the_pytest_tom_summary_closes_the_run_after_the_list_of_failures(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, *FBT, "--tom-model=random", "--tb=no")
    lines = result.outlines
    short = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    tom = next(i for i, line in enumerate(lines) if "pytest-tom summary" in line)
    assert short < tom < len(lines) - 1 and "failed" in lines[-1]
