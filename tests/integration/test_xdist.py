"""pytest-xdist: same outcomes, one merged summary and report, and every request answered once."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("xdist")

LOGGING_MODEL = r"""
import hashlib
import json
import os

def answer(batch, settings):
    with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
        for conversation in batch:
            log.write(hashlib.sha256(json.dumps(conversation).encode()).hexdigest() + "\n")
    return ["[[B]]" for _ in batch]
answer.tom_fingerprint = "logging-model"
"""


@pytest.mark.slow
def test_workers_agree_with_a_single_process_and_answer_each_request_once(
    pytester: pytest.Pytester, tom_args: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    pytester.makepyfile(logging_model=LOGGING_MODEL)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    log = tmp_path / "calls.log"
    monkeypatch.setenv("TOM_TEST_CALL_LOG", str(log))
    args = [*tom_args, "--tom-model=python:logging_model:answer", "--tom-no-cache", "-q", "--tb=no"]
    single = pytester.runpytest_subprocess(*args, "--tom-report=single.json")
    once = sorted(log.read_text().splitlines())
    log.unlink()
    multi = pytester.runpytest_subprocess(*args, "-n", "2", "--tom-report=multi.json")
    assert single.parseoutcomes() == multi.parseoutcomes()
    # Consistency tests included: the controller judges them, so no worker answers another's questions.
    assert sorted(log.read_text().splitlines()) == once
    multi.stdout.fnmatch_lines(["*pytest-tom summary*", "tombench (tombench, 42 questions)", "*coherence groups: */10 passed*"])
    a = json.loads((pytester.path / "single.json").read_text())
    b = json.loads((pytester.path / "multi.json").read_text())
    assert {i["nodeid"]: i["outcome"] for i in a["items"]} == {i["nodeid"]: i["outcome"] for i in b["items"]}
    assert sorted(a["groups"], key=lambda g: g["nodeid"]) == sorted(b["groups"], key=lambda g: g["nodeid"])
    assert a["suites"][0]["metrics"] == b["suites"][0]["metrics"]
    assert b["engine"]["model_requests"] == a["engine"]["model_requests"] == len(once)
    assert set(b["responses"]) == set(a["responses"])


@pytest.mark.slow
def test_a_partial_selection_under_xdist_skips_consistency_tests_like_one_process(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    args = [*tom_args, "--tom-model=random:1", "--tom-no-cache", "-m", "en and fbt and not second_order_beliefs", "-rs", "--tb=no"]
    single = pytester.runpytest_subprocess(*args)
    multi = pytester.runpytest_subprocess(*args, "-n", "2")
    # xdist's controller does not count the workers' deselections
    assert {k: v for k, v in single.parseoutcomes().items() if k != "deselected"} == multi.parseoutcomes()
    assert multi.parseoutcomes()["skipped"] == 2
    multi.stdout.fnmatch_lines(["*only 4 of 6 questions are selected*"])
