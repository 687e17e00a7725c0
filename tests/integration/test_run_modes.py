"""One session, three run modes: without xdist, `-n 0` and `-n 2` agree on everything a user reads.

The session is ToMBench's and FANToM's bundled fixtures with two threshold gates (one passes, one
fails), the coherence groups and the FANToM set assertions, answered by a `python:` model that
logs every conversation it is asked and answers from a hash of it: a mix of right, wrong and
unparseable answers that is the same in every process. Each mode is compared with a run without
xdist; that mode is also compared with itself, so a normaliser that hid too little would show there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"

LOGGING_MODEL = r"""
import hashlib
import json
import os

ANSWERS = ["[[A]]", "[[B]]", "[[C]]", "(a)", "Yes", "No"]


def answer(batch, settings):
    out = []
    with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
        for conversation in batch:
            digest = hashlib.sha256(json.dumps(conversation).encode()).hexdigest()
            log.write(digest + "\n")
            out.append(ANSWERS[int(digest, 16) % len(ANSWERS)])
    return out
answer.tom_fingerprint = "hashing-logging-model"
"""

STATUS_CONFTEST = """
import json


def pytest_addoption(parser):
    parser.addoption("--statuses-to", default=None)


def pytest_terminal_summary(terminalreporter, config):
    # What the terminal counted, per node id and phase: pytest-tom's own statuses (wrong, unparseable,
    # inconsistent) included. Only the process that reports: the controller under xdist.
    target = config.getoption("--statuses-to")
    if target is None or hasattr(config, "workerinput"):
        return
    statuses = sorted([r.nodeid, r.when, category] for category, reports in terminalreporter.stats.items()
                      for r in reports if category and getattr(r, "when", None))
    with open(target, "w") as out:
        json.dump(statuses, out)
"""

SESSION = [
    "-p", "no:cacheprovider", "--tom-no-cache", "--tom-benchmark=tombench,fantom", f"--tom-data-dir={FIXTURES}",
    "--tom-set=tombench.partial=true", "--tom-set=fantom.embedder=none", "--tom-model=python:logging_model:answer",
    "--tom-threshold=tombench.accuracy:lower>=0.1", "--tom-threshold=fantom.accuracy>=0.9", "-q", "--tb=no",
]
NO_XDIST = ("-p", "no:xdist")
MODES = {"no xdist": NO_XDIST, "-n 0": ("-n", "0"), "-n 2": ("-n", "2")}
TIMING = {"model_seconds", "waves"}  # per process: each worker times and counts its own engine rounds


def _report(raw: dict[str, Any]) -> dict[str, Any]:
    """The report minus its timestamp and per-process timings (the run's paths are the same in every mode)."""
    return {**{k: v for k, v in raw.items() if k != "created"},
            "engine": {k: v for k, v in raw["engine"].items() if k not in TIMING}}


def _summary(lines: list[str]) -> list[str]:
    """From pytest-tom's summary header to the line before the last (which holds the run's duration).

    Compared with the engine's time and the baseline's file name masked."""
    start = next((i for i, line in enumerate(lines) if line.startswith("=") and " pytest-tom summary " in line), len(lines))
    return lines[start:-1]


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str, mode: tuple[str, ...]) -> dict[str, Any]:
    """Run the session in `mode`; what it showed and wrote, and the requests the model was asked."""
    log = pytester.path / f"{name}.calls"
    monkeypatch.setenv("TOM_TEST_CALL_LOG", str(log))
    result = pytester.runpytest_subprocess(*SESSION, *mode, f"--tom-report={name}.json", f"--tom-baseline-save={name}.base.json",
                                           f"--statuses-to={name}.statuses.json", timeout=120)
    text = result.stdout.str()
    assert "INTERNALERROR" not in text + result.stderr.str()
    baseline = json.loads((pytester.path / f"{name}.base.json").read_text())
    return {
        "exit": result.ret,
        "counts": result.parseoutcomes(),
        "statuses": json.loads((pytester.path / f"{name}.statuses.json").read_text()),
        "gate lines": [line for line in text.splitlines() if line.startswith(("  PASS ", "  FAIL "))],
        # The summary tables, the gates and the baseline note, printed once (by the controller under xdist);
        # the last line holds the run's duration.
        "summary": [re.sub(r" in [0-9.]+ s,", " in T s,", line.replace(f"/{name}.base.json", "/BASELINE"))
                    for line in _summary(text.splitlines())],
        "report": _report(json.loads((pytester.path / f"{name}.json").read_text())),
        "baseline": {k: v for k, v in baseline.items() if k != "created"},
        "calls": sorted(log.read_text().splitlines()),
    }


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_every_run_mode_agrees_with_a_run_without_xdist(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                        mode: str) -> None:
    if MODES[mode] != NO_XDIST:
        pytest.importorskip("xdist")
    pytester.makepyfile(logging_model=LOGGING_MODEL)
    pytester.makeconftest(STATUS_CONFTEST)
    pytester.makeini("[pytest]\n")
    monkeypatch.setenv("PYTHONPATH", str(pytester.path), prepend=":")
    reference = _run(pytester, monkeypatch, "reference", NO_XDIST)
    run = _run(pytester, monkeypatch, "mode", MODES[mode])

    # The session is representative: every status, both gate verdicts, coherence groups and FANToM sets.
    assert {category for _, _, category in reference["statuses"]} >= {"passed", "failed", "wrong", "unparseable", "inconsistent"}
    assert [line.split()[0] for line in reference["gate lines"]] == ["FAIL", "PASS"]
    assert {"tombench (tombench, 42 questions)", "fantom (fantom, 66 questions)"} <= set(reference["summary"])
    assert any(line.startswith("  coherence groups: ") for line in reference["summary"])
    assert {suite["benchmark"] for suite in reference["report"]["suites"]} == {"tombench", "fantom"}
    assert {g["nodeid"].split("::")[0] for g in reference["report"]["groups"]} >= {"tombench", "fantom"}
    # Each request answered once, in every process together.
    for r in (reference, run):
        assert len(r["calls"]) == len(set(r["calls"])) == r["report"]["engine"]["model_requests"] > 0
        assert r["exit"] == pytest.ExitCode.TESTS_FAILED  # the failing gate

    for key in ("exit", "counts", "statuses", "gate lines", "summary", "calls"):
        assert run[key] == reference[key], key
    for key in reference["report"]:  # one key at a time: a difference names its part of the report
        assert run["report"][key] == reference["report"][key], key
    assert run["report"] == reference["report"]
    assert run["baseline"] == reference["baseline"]
