"""Issue 20: a bad baseline is refused before the first model request, and spends none.

Every run here counts the model's calls (the oracle appends one line per batch to a log):
a baseline that is not a regular file, too large, not JSON, not a baseline, or that does
not cover the run's selected questions must end the run with a usage error (exit 4) that
names the file, having asked the model nothing. Runs that could hang (a FIFO) or eat memory
(/dev/zero) go through a subprocess with a timeout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
QUESTIONS = 42

CONFTEST = """
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, {tests!r})
from helpers.tombench_oracle import Oracle


class Counting(Oracle):
    def __call__(self, batch, settings):
        with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
            log.write(f"{{len(batch)}}\\n")
        return super().__call__(batch, settings)


@pytest.fixture(scope="session")
def tom_model():
    return Counting(Path({data!r}))
"""


@pytest.fixture
def run(pytester: pytest.Pytester, tom_args: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Run the fixtures' ToMBench with the counting oracle; `run.calls()` is the requests asked since the last reset."""
    pytester.makeconftest(CONFTEST.format(tests=str(REPO / "tests"), data=str(FIXTURES)))
    log = tmp_path / "calls.log"
    monkeypatch.setenv("TOM_TEST_CALL_LOG", str(log))

    def go(*args: str, subprocess: bool = False) -> pytest.RunResult:
        argv = (*tom_args, "--tom-no-cache", *args)
        return pytester.runpytest_subprocess(*argv, timeout=120) if subprocess else pytester.runpytest(*argv)

    def calls() -> int:
        return sum(int(n) for n in log.read_text().split()) if log.exists() else 0

    def reset() -> None:
        log.unlink(missing_ok=True)

    go.calls = calls  # type: ignore[attr-defined]
    go.reset = reset  # type: ignore[attr-defined]
    return go


@pytest.fixture
def saved(run, pytester: pytest.Pytester) -> dict[str, Any]:
    """A good baseline of the whole fixture run at base.json (its content returned); the call log starts empty."""
    assert run("--tom-baseline-save=base.json").ret == 0
    run.reset()
    return json.loads((pytester.path / "base.json").read_text())  # type: ignore[no-any-return]


def _refused(result: pytest.RunResult, run: Any, *patterns: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: *{p}*" if i == 0 else f"*{p}*" for i, p in enumerate(patterns)])
    assert run.calls() == 0


def _write(pytester: pytest.Pytester, raw: Any, name: str = "bad.json") -> Path:
    path = pytester.path / name
    path.write_text(json.dumps(raw))
    return path


def _without(raw: dict[str, Any], drop: Iterable[str]) -> dict[str, Any]:
    """The baseline with these questions removed everywhere, consistently (items and every metric's units)."""
    drop = set(drop)
    suite = raw["suites"][0]
    suite["items"] = {k: v for k, v in suite["items"].items() if k not in drop}
    for m in suite["metrics"].values():
        keep = [i for i, uid in enumerate(m["ids"]) if uid not in drop]
        for key in ("ids", "values", "clusters"):
            m[key] = [m[key][i] for i in keep]
        m["n"] = len(keep)
        m["value"] = sum(m["values"]) / len(keep) if keep else None
    return raw


def _trimmed(raw: dict[str, Any], metric: str = "accuracy", keep: int = 1) -> dict[str, Any]:
    """One metric cut down to its first `keep` units, its n and value made to agree (a careful hand edit)."""
    m = raw["suites"][0]["metrics"][metric]
    for key in ("ids", "values", "clusters"):
        m[key] = m[key][:keep]
    m["n"], m["value"] = keep, sum(m["values"]) / keep
    return raw


# -- the file ------------------------------------------------------------------------------------------------------

def test_a_symlink_to_dev_zero_is_refused_without_reading_it(run, pytester: pytest.Pytester) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    (pytester.path / "base.json").symlink_to("/dev/zero")
    result = run("--tom-baseline=base.json", subprocess=True)
    _refused(result, run, "base.json (a symlink to /dev/zero): is a character device, not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_waiting_for_a_writer(run, pytester: pytest.Pytester) -> None:
    os.mkfifo(pytester.path / "base.json")
    result = run("--tom-baseline=base.json", subprocess=True)  # the timeout fails the test if it blocks
    _refused(result, run, "base.json: is a FIFO (named pipe)*not a regular file")


def test_a_folder_is_refused(run, pytester: pytest.Pytester) -> None:
    (pytester.path / "base.json").mkdir()
    _refused(run("--tom-baseline=base.json"), run, "base.json: is a directory, not a regular file")


def test_a_baseline_over_the_size_limit_is_refused(run, saved, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOM_BASELINE_MAX_MB", "0.001")
    _refused(run("--tom-baseline=base.json"), run,
             "base.json: * KiB is over the limit of 1.0 KiB for a baseline*raise the limit with $TOM_BASELINE_MAX_MB")
    monkeypatch.setenv("TOM_BASELINE_MAX_MB", "lots")
    _refused(run("--tom-baseline=base.json"), run, "$TOM_BASELINE_MAX_MB='lots': expected a size in MiB")


def test_invalid_json_and_duplicate_keys_are_refused(run, saved, pytester: pytest.Pytester) -> None:
    (pytester.path / "bad.json").write_text('{"baseline_version": 1,')
    _refused(run("--tom-baseline=bad.json"), run, "baseline *bad.json: not valid JSON: * at line 1")
    text = (pytester.path / "base.json").read_text().replace('"baseline_version":1,', '"baseline_version":1,"baseline_version":1,', 1)
    (pytester.path / "bad.json").write_text(text)
    _refused(run("--tom-baseline=bad.json"), run, "bad.json: not a valid baseline: the key 'baseline_version' appears twice")


def test_a_schema_violation_is_refused_naming_the_json_path(run, saved, pytester: pytest.Pytester) -> None:
    saved["suites"][0]["metrics"]["accuracy"]["values"][0] = 2
    _write(pytester, saved)
    _refused(run("--tom-baseline=bad.json"), run, "bad.json: invalid baseline: * (at $.suites[[]0[]].metrics.accuracy.values[[]0[]])")


def test_a_metric_whose_numbers_disagree_with_its_units_is_refused(run, saved, pytester: pytest.Pytester) -> None:
    m = saved["suites"][0]["metrics"]["accuracy"]
    for key in ("ids", "values", "clusters"):
        m[key] = m[key][:1]  # trimmed, n and value left as they were
    _write(pytester, saved)
    _refused(run("--tom-baseline=bad.json"), run, "metric 'accuracy' says n=42 but lists 1 unit (at $.suites[[]0[]].metrics.accuracy.n)")


# -- coverage ------------------------------------------------------------------------------------------------------

def test_a_metric_trimmed_to_one_unit_is_refused_before_the_run(run, saved, pytester: pytest.Pytester) -> None:
    _write(pytester, _trimmed(saved))
    _refused(run("--tom-baseline=bad.json"), run, "the baseline *bad.json does not cover this run, so no question was asked",
             "  - tombench.accuracy: the baseline holds 1 of the 42 questions this run selects; missing * and 38 more",
             "*--tom-compare-fail='[*].accuracy:partial'*")


def test_missing_questions_are_refused_naming_how_many_it_covers(run, saved, pytester: pytest.Pytester) -> None:
    ids = sorted(saved["suites"][0]["items"])
    _write(pytester, _without(saved, ids[:2]))
    _refused(run("--tom-baseline=bad.json", "--tom-compare-fail=tombench.accuracy:1pts"), run,
             "does not cover this run", f"tombench.accuracy: the baseline holds 40 of the 42 questions this run selects; missing {ids[0]}, {ids[1]}")


def test_a_suite_or_metric_the_baseline_lacks_is_refused(run, saved, pytester: pytest.Pytester) -> None:
    del saved["suites"][0]["metrics"]["ability.faux_pas"]
    _write(pytester, saved)
    _refused(run("--tom-baseline=bad.json", "--tom-compare-fail=tombench.ability.*"), run,
             "does not cover this run", "tombench.ability.faux_pas is not in the baseline (it holds 0 of the * questions")
    saved["suites"][0]["id"] = "other"
    _write(pytester, saved)
    _refused(run("--tom-baseline=bad.json"), run, "does not cover this run", "suite tombench is not in the baseline (its suites: other)")


def test_partial_opt_in_compares_on_the_intersection_and_says_so(run, saved, pytester: pytest.Pytester) -> None:
    ids = sorted(saved["suites"][0]["items"])
    _write(pytester, _without(saved, ids[:2]))
    result = run("--tom-baseline=bad.json", "--tom-compare-fail=tombench.accuracy:partial", "--tom-report=report.json",
                 "--tom-markdown=summary.md")
    assert result.ret == 0
    assert "; compared on 40 of 42 questions" in (pytester.path / "summary.md").read_text()
    assert run.calls() > 0
    result.stdout.fnmatch_lines(["*PASS tombench.accuracy:baseline: 100.0% now vs 100.0% in the baseline *; compared on 40 of 42 questions",
                                 "pytest-tom: tombench.accuracy: compared on 40 of 42 questions (the baseline lacks the others)"])
    [gate] = json.loads((pytester.path / "report.json").read_text())["gates"]
    assert gate["details"]["coverage"] == {"paired": 40, "only_in_baseline": 0, "only_in_run": 2}
    assert gate["details"]["partial"] is True and "compared on 40 of 42 questions" in gate["message"]


def test_coverage_is_of_what_marks_and_samples_select(run, pytester: pytest.Pytester) -> None:
    assert run("-m", "zh", "--tom-baseline-save=zh.json").ret == 0
    run.reset()
    assert run("-m", "zh", "--tom-baseline=zh.json").ret == 0  # the same selection: covered
    zh_only = run.calls()
    assert zh_only > 0
    run.reset()
    assert run("-m", "zh", "--tom-sample=5", "--tom-baseline=zh.json").ret == 0  # a sample of it: covered
    run.reset()
    _refused(run("--tom-baseline=zh.json"), run, "zh.json does not cover this run",
             "tombench.accuracy: the baseline holds 21 of the 42 questions this run selects")
    _refused(run("-k", "en- or zh-", "--tom-baseline=zh.json"), run, "does not cover this run", "holds 21 of the 42 questions")


# -- refusals that used to come after the run ----------------------------------------------------------------------

def test_a_missing_baseline_is_refused_before_the_run(run) -> None:
    _refused(run("--tom-baseline=nowhere.json"), run, "no baseline at *nowhere.json*--tom-baseline-save=*nowhere.json*")


def test_other_settings_are_refused_before_the_run_unless_forced(run, pytester: pytest.Pytester) -> None:
    assert run("--tom-baseline-save=base.json", "--tom-set=tombench.tries=1").ret == 0
    run.reset()
    _refused(run("--tom-baseline=base.json"), run, "suite tombench: refusing to compare with the baseline", "*tries: 1 -> 5*")
    assert run("--tom-baseline=base.json", "--tom-baseline-force").ret == 0


def test_update_creates_a_missing_file_refuses_a_fifo_and_rewrites_a_partial_one(run, saved, pytester: pytest.Pytester) -> None:
    assert run("--tom-baseline=new.json", "--tom-baseline-update").ret == 0
    assert (pytester.path / "new.json").is_file()
    run.reset()
    if hasattr(os, "mkfifo"):
        os.mkfifo(pytester.path / "pipe.json")
        _refused(run("--tom-baseline=pipe.json", "--tom-baseline-update", subprocess=True), run, "pipe.json: exists and is not a regular file")
    ids = sorted(saved["suites"][0]["items"])
    _write(pytester, _without(saved, ids[:2]), "old.json")
    result = run("--tom-baseline=old.json", "--tom-baseline-update")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*compared on 40 of 42 questions*"])
    assert len(json.loads((pytester.path / "old.json").read_text())["suites"][0]["items"]) == QUESTIONS


@pytest.mark.slow
def test_under_xdist_a_file_problem_is_a_usage_error_and_a_gap_stops_the_run_before_any_request(run, saved,
                                                                                                pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    (pytester.path / "dir.json").mkdir()
    _refused(run("-n", "2", "--tom-baseline=dir.json"), run, "dir.json: is a directory")
    _write(pytester, _trimmed(saved))
    result = run("-n", "2", "--tom-baseline=bad.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED and run.calls() == 0
    result.stdout.fnmatch_lines(["*bad.json does not cover this run, so no question was asked*"])
