"""pytest-xdist: same outcomes, one merged summary and report, workers split the model work."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("xdist")

LOGGING_MODEL = """
import os

def answer(batch, settings):
    with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
        for conversation in batch:
            log.write("call\\n")
    return ["[[B]]" for _ in batch]
answer.tom_fingerprint = "logging-model"
"""


@pytest.mark.slow
def test_workers_agree_with_a_single_process(pytester: pytest.Pytester, tom_args: list[str], monkeypatch, tmp_path) -> None:
    pytester.makepyfile(logging_model=LOGGING_MODEL)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    log = tmp_path / "calls.log"
    monkeypatch.setenv("TOM_TEST_CALL_LOG", str(log))
    args = [*tom_args, "--tom-model=python:logging_model:answer", "--tom-no-cache", "-q", "--tb=no"]
    single = pytester.runpytest_subprocess(*args, "--tom-report=single.json")
    unique = len(log.read_text().splitlines())
    log.unlink()
    multi = pytester.runpytest_subprocess(*args, "-n", "2", "--tom-report=multi.json")
    assert single.parseoutcomes() == multi.parseoutcomes()
    multi.stdout.fnmatch_lines(["*pytest-tom summary*", "tombench (tombench, 42 questions)"])
    a = json.loads((pytester.path / "single.json").read_text())
    b = json.loads((pytester.path / "multi.json").read_text())
    assert {i["nodeid"]: i["outcome"] for i in a["items"]} == {i["nodeid"]: i["outcome"] for i in b["items"]}
    assert len(b["groups"]) == 10
    # Each worker answers what xdist queued on it: without consistency groups (whose
    # members may have run on the other worker) no request is answered twice.
    log.unlink()
    questions_only = pytester.runpytest_subprocess(*args, "-n", "2", "-k", "not coherence")
    questions_only.assert_outcomes(passed=10, failed=32)
    assert len(log.read_text().splitlines()) == unique
