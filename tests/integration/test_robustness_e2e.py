"""Robustness end to end: hypothesis catches a position-keyed and a name-keyed model, shrunk to a minimal change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.user_models import install

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")

MODELS = f'''
import json, os, re
import pytest_tom

NAMES = set()
for line in open({str(FIXTURES / "simpletom" / "story-data" / "test.jsonl")!r}):
    NAMES.add(json.loads(line)["entities"]["Person X"])


def _log():
    with open(os.environ["RB_CALLS"], "a") as f:
        f.write("1\\n")


@pytest_tom.per_prompt
def always_a(messages, settings):
    _log()
    return "(A)"


@pytest_tom.per_prompt
def knows_names(messages, settings):
    """Right on every mental-state question (the gold is always "No"), but only for the names it has seen."""
    _log()
    text = messages[-1]["content"]
    no = re.search(r"\\(([AB])\\) No\\b", text)
    yes = re.search(r"\\(([AB])\\) Yes\\b", text)
    if not (no and yes):
        return "(A)"
    known = any(re.search(r"(?<!\\w)" + re.escape(n) + r"(?!\\w)", text) for n in NAMES)
    return "(" + (no[1] if known else yes[1]) + ")"


always_a.tom_fingerprint = "always-a"
knows_names.tom_fingerprint = "knows-names"
'''


@pytest.fixture
def calls(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return install(pytester, monkeypatch, tmp_path / "calls.log", "rb_models", MODELS, "RB_CALLS")


def n_calls(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def run(pytester: pytest.Pytester, model: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, "--tom-benchmark=simpletom", f"--tom-data-dir={FIXTURES}",
                              "--tom-set=simpletom.partial=true", f"--tom-model=python:rb_models:{model}",
                              "--tom-robustness-profile=tom-ci", "--tom-report=report.json", *args)


def test_a_position_keyed_model_is_caught_by_the_permutation_property(pytester: pytest.Pytester, calls: Path) -> None:
    result = run(pytester, "always_a", "--tom-robustness=permute", "-m", "tom_robustness and mental_state")
    # Always "(A)": the swap moves the gold of every one of the 10 mental-state questions; right or wrong, it flips.
    result.assert_outcomes(failed=10)
    result.stdout.fnmatch_lines([
        "*_ simpletom: permute robustness of jam_jar_sev1-ms _*",
        "invariance permute broken on jam_jar_sev1-ms after 1 perturbation(s); minimal example (2 edit(s)): options "
        "reordered to (A) * (B) *; gold * -> *",
        "  original:  'A' (*)",
        "  perturbed: 'A' (*",
        "  original options:  (A) * (B) *; gold *",
        "  perturbed options: (A) * (B) *; gold *",
    ])
    result.stdout.fnmatch_lines(["*robustness permute (invariance): 10 questions, 10 perturbations tried; one broke 10 "
                                 "(100.0%); robust accuracy 0.0% (originals 50.0%)*"])
    report = json.loads((pytester.path / "report.json").read_text())
    summary = report["suites"][0]["robustness"]["permute"]
    assert (summary["questions"], summary["broken"], summary["flip_rate"]) == (10, 10, 1.0)
    minimal = next(g for g in report["groups"] if g["gid"] == "jam_jar_sev1-ms-permute")["details"]["minimal"]
    assert minimal["strategy"] == "permute" and minimal["size"] == 2
    first = n_calls(calls)
    assert first == 10 + 10  # each original, and its one swap
    run(pytester, "always_a", "--tom-robustness=permute", "-m", "tom_robustness and mental_state")
    assert n_calls(calls) == first  # the second run is answered from the cache


def test_a_name_keyed_model_is_caught_by_renaming_with_one_name_changed(pytester: pytest.Pytester, calls: Path) -> None:
    result = run(pytester, "knows_names", "--tom-robustness=rename,whitespace", "--tom-robustness-examples=4",
                 "-m", "tom_robustness and mental_state")
    # whitespace never breaks it (10 pass), every rename does (10 fail), each shrunk to a single rename
    result.assert_outcomes(failed=10, passed=10)
    result.stdout.fnmatch_lines([
        "invariance rename broken on jam_jar_sev1-ms after * perturbation(s); minimal example (1 edit(s)): renamed "
        "Priya -> Robin",
        "  original:  'B' (right, gold 'B')",
        "  perturbed: 'A' (wrong, gold 'B') (expected the same correctness as on the original; got 'A' (wrong, gold 'B'))",
        "  original question:  Is Priya likely to be aware that *",
        "  perturbed question: Is Robin likely to be aware that *",
    ])
    result.stdout.fnmatch_lines(["*robustness rename (invariance): 10 questions, * perturbations tried; one broke 10 "
                                 "(100.0%); robust accuracy 0.0% (originals 100.0%)*",
                                 "*robustness whitespace (invariance): 10 questions, * perturbations tried; one broke 0 "
                                 "(0.0%); robust accuracy 100.0% (originals 100.0%)*"])


def test_robustness_rates_are_gates(pytester: pytest.Pytester, calls: Path) -> None:
    result = run(pytester, "knows_names", "--tom-robustness=rename,witness", "--tom-robustness-examples=3",
                 "-m", "tom_robustness and mental_state", "--tom-threshold=simpletom.flip_rate.rename<=0.2",
                 "--tom-threshold=simpletom.robust_accuracy.witness>=0")
    assert result.ret == 1
    assert result.parseoutcomes()["failed"] == 1  # a gate run: only the failing gate fails
    result.stdout.fnmatch_lines(["*simpletom.flip_rate.rename = 100.0% (95% interval *, n=10, 10 clusters; *) misses "
                                 "the threshold <= 20.0%*"])
    assert "PASS simpletom.robust_accuracy.witness:point>=0" in result.stdout.str()


def test_failing_examples_are_saved_and_replayed_first(pytester: pytest.Pytester, calls: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    monkeypatch.delenv("CI", raising=False)
    args = (*QUIET, "--tom-benchmark=simpletom", f"--tom-data-dir={FIXTURES}", "--tom-set=simpletom.partial=true",
            "--tom-model=python:rb_models:knows_names", "--tom-robustness=rename", "--tom-no-cache",
            "--tom-robustness-profile=tom-dev", "simpletom_robustness[jam_jar_sev1-ms-rename]")
    first = pytester.runpytest_subprocess(*args)
    first.assert_outcomes(failed=1)
    assert any((pytester.path / ".hypothesis" / "examples").rglob("*")), "the failing example is in the database"
    calls.write_text("")
    second = pytester.runpytest_subprocess(*args)
    second.assert_outcomes(failed=1)
    second.stdout.fnmatch_lines(["*minimal example (1 edit(s)): renamed Priya -> Robin*"])
    assert n_calls(calls) <= 3  # the original and the stored example first: no new search


@pytest.mark.parametrize(("flag", "message"), [
    ("--tom-robustness=swap", "unknown robustness strategy 'swap'; known: *"),
    ("--tom-robustness-profile=nope", "--tom-robustness-profile='nope': no hypothesis settings profile*"),
])
def test_bad_robustness_options_are_usage_errors(pytester: pytest.Pytester, calls: Path, flag: str, message: str) -> None:
    result = pytester.runpytest(*QUIET, "--tom-benchmark=simpletom", f"--tom-data-dir={FIXTURES}",
                                "--tom-set=simpletom.partial=true", "--tom-model=random", "--tom-robustness=rename", flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest-tom: {message}"])


def test_a_sample_keeps_the_robustness_items_of_its_questions_only(pytester: pytest.Pytester, calls: Path) -> None:
    result = run(pytester, "always_a", "--tom-robustness=permute", "--tom-sample=4", "--collect-only", "-q")
    questions = sorted(line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::simpletom[" in line)
    robust = sorted(line.split("[", 1)[1].removesuffix("-permute]") for line in result.outlines
                    if "::simpletom_robustness[" in line)
    assert len(questions) == 4 and robust == questions


def test_the_tom_ci_profile_writes_no_hypothesis_folder(pytester: pytest.Pytester, calls: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Documented as using no example database: hypothesis' own pytest plugin on, nothing under `.hypothesis/`."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join((str(pytester.path), str(FIXTURES.parent))))
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tom-benchmark=simpletom", f"--tom-data-dir={FIXTURES}",
        "--tom-set=simpletom.partial=true", "--tom-model=python:rb_models:knows_names", "--tom-robustness=rename",
        "--tom-no-cache", "--tom-robustness-profile=tom-ci", "simpletom_robustness[jam_jar_sev1-ms-rename]")
    result.assert_outcomes(failed=1)
    assert not (pytester.path / ".hypothesis").exists(), sorted(str(p) for p in (pytester.path / ".hypothesis").rglob("*"))
