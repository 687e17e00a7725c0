"""The run's end, as a user hits it: the report path, the benchmark list, and reports written under xdist.

Issue 8: an unusable `--tom-report` path used to cost the whole run and then a
traceback (summary lost, a `.tmp` left, exit 1 on a green run); `--tom-benchmark=a,a`
ran everything twice and `--tom-benchmark=,` ran nothing without a word. Each case
counts the model calls with a model that logs them to a file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_tom.run.setup import REPORT_NOT_WRITTEN

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
QUESTIONS, STORIES, REQUESTS = 42, 10, 180
"""The bundled ToMBench fixtures: questions, coherence items, unique requests (5 tries each, deduplicated)."""

COUNTING_ORACLE = """
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, {tests!r})
from helpers.tombench_oracle import Oracle


class Counting(Oracle):
    def __call__(self, batch, settings):
        with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
            log.write("x\\n" * len(batch))
        return super().__call__(batch, settings)


@pytest.fixture(scope="session")
def tom_model():
    return Counting(Path({data!r}), wrong={wrong!r})
"""

SABOTAGE = """

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    # After every test ran, before pytest-tom writes the report: the path goes bad (a race, a full disk).
    import shutil
    target = Path({target!r})
    {action}
"""

LOGGING_MODEL = r"""
import os

def answer(batch, settings):
    with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
        log.write("x\n" * len(batch))
    return ["[[B]]" for _ in batch]
answer.tom_fingerprint = "logging-model"
"""



@pytest.fixture
def base(tom_args: list[str]) -> list[str]:
    """ToMBench on the bundled fixtures (the shared `tom_args`, a deliberately partial release), without the cache."""
    return [*tom_args, "--tom-no-cache"]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The number of conversations the model was asked so far (read from its log)."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("TOM_TEST_CALL_LOG", str(log))
    return lambda: len(log.read_text().splitlines()) if log.exists() else 0


def oracle(pytester: pytest.Pytester, wrong: tuple[str, ...] = (), extra: str = "") -> None:
    pytester.makeconftest(COUNTING_ORACLE.format(tests=str(REPO / "tests"), data=str(FIXTURES), wrong=wrong) + extra)


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.tmp"))


# -- 1. an unusable report path: refused at configure time ---------------------------------------------------

@pytest.mark.parametrize(
    ("make", "report", "message"),
    [
        ("dir", "out", "--tom-report=*out: is a directory; give a file path, e.g. *out/report.json"),
        ("file", "out/r.json", "--tom-report=*out/r.json: *out is a file, not a folder"),
        ("file", "out/deeper/r.json", "--tom-report=*out/deeper/r.json: *out is a file, not a folder"),
    ],
    ids=["a directory", "parent is a file", "an ancestor is a file"],
)
def test_an_unusable_report_path_is_a_usage_error_before_any_model_call(
    pytester: pytest.Pytester, base: list[str], calls, make: str, report: str, message: str
) -> None:
    oracle(pytester)
    (pytester.path / "out").mkdir() if make == "dir" else (pytester.path / "out").write_text("a file")
    result = pytester.runpytest(*base, f"--tom-report={report}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: {message}"])
    assert calls() == 0
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert leftovers(pytester.path) == []


def test_the_ini_report_path_is_checked_too(pytester: pytest.Pytester, base: list[str], calls) -> None:
    oracle(pytester)
    (pytester.path / "out").mkdir()
    pytester.makeini("[pytest]\ntom_report = out\n")
    result = pytester.runpytest(*base)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: --tom-report=*out: is a directory*"])
    assert calls() == 0


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root may write in any folder, so a folder without write permission cannot stop it")
def test_a_folder_without_write_permission_is_a_usage_error(pytester: pytest.Pytester, base: list[str], calls) -> None:
    oracle(pytester)
    locked = pytester.path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = pytester.runpytest(*base, "--tom-report=locked/sub/r.json")
    finally:
        locked.chmod(0o700)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: --tom-report=*locked/sub/r.json: no permission to write in *locked"])
    assert calls() == 0


def test_a_missing_report_folder_is_created(pytester: pytest.Pytester, base: list[str], calls) -> None:
    oracle(pytester)
    result = pytester.runpytest(*base, "--tom-report=new/deeper/r.json", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert json.loads((pytester.path / "new/deeper/r.json").read_text())["engine"]["model_requests"] == REQUESTS
    assert calls() == REQUESTS
    assert leftovers(pytester.path) == []


# -- 1. the path goes bad during the run: one line, the summary kept, no .tmp, a red exit status ------------

@pytest.mark.parametrize(
    ("action", "why"),
    [
        ("shutil.rmtree(target.parent); target.parent.write_text('now a file')", "*out is a file, not a folder"),
        ("target.mkdir()", "is a directory; give a file path*"),
    ],
    ids=["its folder became a file", "the target became a directory"],
)
@pytest.mark.parametrize(("wrong", "status"), [((), REPORT_NOT_WRITTEN), (("Where will Xiao Zhou look for the cookies",), 1)],
                         ids=["passing run", "failing run"])
def test_a_report_that_cannot_be_written_at_the_end_keeps_the_summary_and_fails_the_run(
    pytester: pytest.Pytester, base: list[str], calls, action: str, why: str, wrong: tuple[str, ...], status: int
) -> None:
    target = pytester.path / "out" / "r.json"
    target.parent.mkdir()
    oracle(pytester, wrong, SABOTAGE.format(target=str(target), action=action))
    result = pytester.runpytest(*base, "--tom-report=out/r.json", "--tb=no")
    # A passing run must not look green in CI; a failing one keeps its own status.
    assert result.ret == status
    text = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*pytest-tom summary*",
        f"tombench (tombench, {QUESTIONS} questions)",
        "*coherence groups:*",
        f"pytest-tom: ERROR: the report was not written to *out/r.json: {why}",
        f"*{QUESTIONS + STORIES - len(wrong) * 2} passed*",
    ])
    assert text.count("the report was not written") == 1
    assert "Traceback" not in text + result.stderr.str()
    assert calls() == REQUESTS
    assert leftovers(pytester.path) == []
    assert not target.is_file()


def test_without_a_terminal_the_report_error_goes_to_stderr(pytester: pytest.Pytester, base: list[str], calls) -> None:
    target = pytester.path / "out" / "r.json"
    target.parent.mkdir()
    oracle(pytester, extra=SABOTAGE.format(target=str(target), action="target.mkdir()"))
    result = pytester.runpytest(*base, "--tom-report=out/r.json", "-p", "no:terminal")
    assert result.ret == REPORT_NOT_WRITTEN
    result.stderr.fnmatch_lines(["pytest-tom: ERROR: the report was not written to *out/r.json: is a directory*"])
    assert calls() == REQUESTS


def test_a_report_that_cannot_be_built_loses_neither_the_counts_nor_the_exit_status(
    pytester: pytest.Pytester, base: list[str], calls
) -> None:
    breaking = """

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    from pytest_tom.run.session import tom_session

    def boom():
        raise RuntimeError("metric exploded")
    tom_session(session.config).records.report = boom
"""
    oracle(pytester, extra=breaking)
    result = pytester.runpytest(*base, "--tom-report=r.json")
    assert result.ret == REPORT_NOT_WRITTEN
    result.stdout.fnmatch_lines([
        "pytest-tom: the summary could not be built: RuntimeError: metric exploded",
        "pytest-tom: ERROR: the report was not written to *r.json: RuntimeError: metric exploded",
        f"*{QUESTIONS + STORIES} passed*",
    ])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "r.json").exists() and leftovers(pytester.path) == []
    assert calls() == REQUESTS


def test_a_failure_to_close_the_cache_is_one_warning_and_the_report_is_still_written(
    pytester: pytest.Pytester, base: list[str], calls
) -> None:
    breaking = """

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    from pytest_tom.run.session import tom_session

    def boom():
        raise OSError(28, "No space left on device")
    tom_session(session.config).planner.close = boom
"""
    oracle(pytester, extra=breaking)
    result = pytester.runpytest(*base, "--tom-report=r.json")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "*pytest-tom summary*",
        "pytest-tom: warning: closing the engine or the response cache failed: OSError: *No space left on device",
        f"*{QUESTIONS + STORIES} passed*",
    ])
    assert json.loads((pytester.path / "r.json").read_text())["engine"]["model_requests"] == REQUESTS
    assert calls() == REQUESTS


# -- 2. the benchmark list ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["tombench,tombench", " tombench , tombench,"])
def test_a_benchmark_named_twice_runs_once(pytester: pytest.Pytester, base: list[str], calls, value: str) -> None:
    oracle(pytester)
    result = pytester.runpytest(*base, f"--tom-benchmark={value}", "-q")
    assert result.parseoutcomes() == {"passed": QUESTIONS + STORIES}
    assert calls() == REQUESTS


def test_a_benchmark_named_on_the_command_line_and_by_flag_runs_once(
    pytester: pytest.Pytester, base: list[str], calls
) -> None:
    oracle(pytester)
    result = pytester.runpytest(*base, "tombench", "-q")
    assert result.parseoutcomes() == {"passed": QUESTIONS + STORIES}
    assert calls() == REQUESTS


@pytest.mark.parametrize("value", [",", " , ,", " "])
def test_a_benchmark_list_without_a_name_is_a_usage_error(
    pytester: pytest.Pytester, base: list[str], calls, value: str
) -> None:
    oracle(pytester)
    result = pytester.runpytest(*base, f"--tom-benchmark={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: --tom-benchmark (ini tom_benchmark) is *: it names no benchmark*"])
    assert calls() == 0


def test_the_ini_benchmark_list_is_deduplicated_and_checked(pytester: pytest.Pytester, base: list[str], calls) -> None:
    oracle(pytester)
    args = [a for a in base if not a.startswith("--tom-benchmark")]
    pytester.makeini("[pytest]\ntom_benchmark = tombench, tombench\n")
    assert pytester.runpytest(*args, "-q").parseoutcomes() == {"passed": QUESTIONS + STORIES}
    assert calls() == REQUESTS
    pytester.makeini("[pytest]\ntom_benchmark = ,\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: --tom-benchmark (ini tom_benchmark) is ',': it names no benchmark*"])
    assert calls() == REQUESTS
    # An empty flag overrides the ini list: no benchmark, which is not an error.
    pytester.makeini("[pytest]\ntom_benchmark = tombench\n")
    assert pytester.runpytest(*args, "--tom-benchmark=").ret == pytest.ExitCode.NO_TESTS_COLLECTED


# -- 3. a report written under pytest-xdist replays like a one-process report ---------------------------------

@pytest.mark.slow
def test_an_xdist_report_equals_a_one_process_report_and_replays_every_item(
    pytester: pytest.Pytester, base: list[str], calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(logging_model=LOGGING_MODEL)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(pytester.path), os.environ.get("PYTHONPATH")])))
    args = [*base, "--tom-model=python:logging_model:answer", "-q", "--tb=no"]
    multi = pytester.runpytest_subprocess(*args, "-n", "2", "--tom-report=x.json")
    assert calls() == REQUESTS
    single = pytester.runpytest_subprocess(*args, "--tom-report=one.json")
    assert calls() == 2 * REQUESTS
    assert multi.parseoutcomes() == single.parseoutcomes()
    x = json.loads((pytester.path / "x.json").read_text())
    one = json.loads((pytester.path / "one.json").read_text())

    assert x["engine"] and x["model"]["fingerprint"] and x["responses"]
    assert x["model"] == one["model"]
    assert x["responses"] == one["responses"]
    timing = {"model_seconds", "waves"}  # per process: each worker times and counts its own engine rounds
    assert {k: v for k, v in x["engine"].items() if k not in timing} == {k: v for k, v in one["engine"].items() if k not in timing}
    assert x["engine"]["model_requests"] == REQUESTS and x["engine"]["errors"] == 0
    # In collection order, as one process writes them, not in the order the workers finished.
    assert x["items"] == one["items"]
    assert x["groups"] == one["groups"]
    assert x["suites"] == one["suites"]

    replay = pytester.runpytest_subprocess(*base, "--tom-model=replay:x.json", "--tom-report=again.json", "-q", "--tb=no")
    assert calls() == 2 * REQUESTS  # the replay asks the logging model nothing
    assert replay.parseoutcomes() == single.parseoutcomes()
    again = json.loads((pytester.path / "again.json").read_text())
    assert again["engine"]["errors"] == 0 and again["engine"]["model_requests"] == REQUESTS
    assert [(i["nodeid"], i["outcome"]) for i in again["items"]] == [(i["nodeid"], i["outcome"]) for i in x["items"]]


RULE_BUG_CONFTEST = '''
from pytest_tom import Benchmark, Derived, GenerationSettings, Message, Outcome, Record, Request, Sample, Story


def broken(derived, members):
    raise ZeroDivisionError("a bug in the rule")


class Sums(Benchmark):
    name = "sums"
    description = "Four sums and one aggregate assertion whose rule has a bug"
    rules = {"broken": broken}

    def load(self, source):
        return [Sample(benchmark="sums", id=f"q{i}", context=Story(f"{i}+{i}"), question="Sum?", choices=(), gold=str(2 * i),
                       characters=(), facets={}, marks=(), extra=None, source=f"sums q{i}") for i in range(4)]

    def program(self, sample):
        (r,) = yield [Request(messages=(Message("user", sample.context.render()),), settings=GenerationSettings(max_new_tokens=4))]
        return Record(benchmark="sums", sample_id=sample.id, outcome=Outcome.CORRECT, facets={}, parsed=r.text,
                      gold=sample.gold, responses=(r.text,))

    def derived(self, samples):
        return [Derived(benchmark="sums", id="all", kind="broken", members=tuple(s.id for s in samples))]


def pytest_tom_add_benchmarks(registry):
    registry.add(Sums)
'''


@pytest.mark.slow
def test_a_rule_bug_on_the_xdist_controller_keeps_the_summary_and_fails_the_run(
    pytester: pytest.Pytester, calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    pytester.makeconftest(RULE_BUG_CONFTEST)
    pytester.makepyfile(logging_model=LOGGING_MODEL)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(pytester.path), os.environ.get("PYTHONPATH")])))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--tom-no-cache", "--tom-benchmark=sums",
                                           "--tom-model=python:logging_model:answer", "-n", "2", "--tom-report=r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*pytest-tom summary*", "sums (sums, 4 questions)",
                                 "pytest-tom: ERROR: judging aggregate assertions on the xdist controller failed*"
                                 "ZeroDivisionError: a bug in the rule", "*4 passed*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert calls() == 4
    assert len(json.loads((pytester.path / "r.json").read_text())["items"]) == 4
