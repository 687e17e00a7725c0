"""SimpleToM's mental-state reminder across an interrupted run (issue 11).

Under the reminder, a behavior or judgment question depends on the model's own
answer to its story's mental-state question: a second stage. A run stopped in the
middle (Ctrl-C inside the model, or a model that starts failing) must resume
without asking again anything that was answered, and every second stage must show
the first stage's recorded answer, even when the model would now answer the
mental-state question differently. The model below logs every conversation it
answers and answers "(A)" in the first run and "(B)" in the second, so a
re-asked mental-state question would show up both in the call counts and in the
reminders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"

MODEL = r'''
import json
import os
import re


def answer(batch, settings):
    log = os.environ["TOM_TEST_CALL_LOG"]
    out = []
    for conversation in batch:
        with open(log) as f:
            done = sum(1 for _ in f)
        stop_after = int(os.environ.get("TOM_TEST_STOP_AFTER", "-1"))
        if 0 <= stop_after <= done:
            if os.environ["TOM_TEST_STOP"] == "interrupt":
                raise KeyboardInterrupt
            with open(log + ".errors", "a") as f:
                f.write("error\n")
            raise RuntimeError("the model is gone")
        prompt = conversation[-1]["content"]
        story = re.search(r"Story:\s*(.*)", prompt).group(1)
        shown = re.search(r"\nAnswer: (.*)\n", prompt)
        last_question = prompt.rsplit("Question: ", 1)[1]
        entry = {"ms": "likely to be aware that" in last_question, "story": story,
                 "shown": shown.group(1) if shown else None}
        with open(log, "a") as f:
            f.write(json.dumps(entry) + "\n")
        out.append(os.environ["TOM_TEST_ANSWER"])
    return out


answer.tom_fingerprint = "simpletom-resume-model"
answer.tom_batch_size = 1
'''


class Work:
    """A folder with the logging model; runs pytest there in a subprocess and reads back what the model saw."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "resume_model.py").write_text(MODEL)
        self.log = root / "calls.jsonl"
        self.log.touch()

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "TOM_TEST_"))}
        base.update(PYTHONPATH=str(self.root), TOM_TEST_CALL_LOG=str(self.log), **env)
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tom-benchmark=simpletom",
                   f"--tom-data-dir={FIXTURES}", "--tom-set=simpletom.partial=true", "--tom-set=simpletom.intervention=reminder",
                   "--tom-model=python:resume_model:answer", "--tom-batch-size=1", "-q", "--tb=short", "-rN", *args]
        return subprocess.run(command, cwd=self.root, env=base, capture_output=True, text=True, timeout=300, check=False)

    def calls(self) -> list[dict[str, Any]]:
        """The conversations answered since the last call of this method."""
        entries = [json.loads(line) for line in self.log.read_text().splitlines()]
        self.log.write_text("")
        return entries

    def errors(self) -> int:
        path = self.root / "calls.jsonl.errors"
        n = len(path.read_text().splitlines()) if path.exists() else 0
        path.unlink(missing_ok=True)
        return n


def _report(path: Path) -> dict[str, dict[str, Any]]:
    return {item["qid"]: item for item in json.loads(path.read_text())["items"]}


@pytest.fixture
def work(tmp_path: Path) -> Work:
    if not (FIXTURES / "simpletom").is_dir():
        pytest.skip("the SimpleToM fixtures are not there")
    root = tmp_path / "work"
    root.mkdir()
    return Work(root)


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["interrupt", "error"])
@pytest.mark.parametrize("stage", ["first", "second"])
def test_an_interrupted_reminder_run_resumes_without_asking_again(work: Work, stage: str, stop: str) -> None:
    # A whole run without the cache: how many conversations there are, and how many are mental-state ones.
    whole = work.run("--tom-no-cache", "--tom-report=whole.json", TOM_TEST_ANSWER="(A)")
    assert whole.returncode in (0, 1), whole.stdout[-3000:]
    everything = work.calls()
    total, first_stage = len(everything), sum(e["ms"] for e in everything)
    assert 0 < first_stage < total
    assert Counter(e["story"] for e in everything if e["ms"]).most_common(1)[0][1] == 1  # each story's MS once
    items = _report(work.root / "whole.json")
    second = sum(1 for i in items.values() if i["facets"]["question_type"] != "mental_state")
    assert total == first_stage + second  # every second stage once, every mental-state question once

    # Run 1 stops after `answered` conversations: in the middle of the mental-state wave, or of the second one.
    answered = first_stage // 2 if stage == "first" else first_stage + second // 2
    cache = f"--tom-cache-dir={work.root / 'cache'}"
    first = work.run(cache, "--tom-report=run1.json", TOM_TEST_ANSWER="(A)", TOM_TEST_STOP=stop,
                     TOM_TEST_STOP_AFTER=str(answered))
    run1 = work.calls()
    assert len(run1) == answered, first.stdout[-3000:]
    if stop == "interrupt":
        assert first.returncode == 2, first.stdout[-3000:]  # pytest's "interrupted"
        assert work.errors() == 0
    else:
        # A failing model: every unanswered conversation of the waves it reached is an error, never an answer;
        # a question whose mental-state answer errored never asks its second stage.
        assert first.returncode == 1, first.stdout[-3000:]
        asked_ms_ok = {e["story"] for e in run1 if e["ms"]}
        attempts = work.errors()
        expected_attempts = (first_stage - answered + sum(1 for i in items.values() if i["facets"]["question_type"] !=
                             "mental_state" and _story_text(i) in asked_ms_ok)) if stage == "first" else total - answered
        assert attempts == expected_attempts
        report1 = _report(work.root / "run1.json")
        assert sum(i["outcome"] == "error" for i in report1.values()) > 0

    # Run 2 answers "(B)": a re-asked mental-state question would change the reminders.
    resumed = work.run(cache, "--tom-report=run2.json", TOM_TEST_ANSWER="(B)")
    assert resumed.returncode in (0, 1), resumed.stdout[-3000:]
    run2 = work.calls()
    assert len(run2) == total - answered  # nothing answered is asked again
    answered_ms = {e["story"] for e in run1 if e["ms"]}
    assert not answered_ms & {e["story"] for e in run2 if e["ms"]}
    assert work.errors() == 0

    report = _report(work.root / "run2.json")
    assert all(i["outcome"] != "error" for i in report.values())
    ms_answer = {i["details"]["story"]: i["responses"][0] for i in report.values()
                 if i["facets"]["question_type"] == "mental_state"}
    shown_to_model = {e["story"]: e["shown"] for e in run1 + run2 if not e["ms"]}
    for item in report.values():
        if item["facets"]["question_type"] == "mental_state":
            continue
        used = item["details"]["reminder"]
        story = item["details"]["story"]
        # The first stage's recorded answer: run 1's "(A)" where run 1 answered it, else run 2's "(B)".
        expected = "(A)" if _story_text(item) in answered_ms else "(B)"
        assert used["response"] == expected, item["qid"]
        if story in ms_answer:
            assert used["response"] == ms_answer[story]
        assert used["shown"] == expected
        assert shown_to_model[_story_text(item)] == expected
        assert len(item["request_keys"]) == 2  # the first stage and the question


def _stories() -> dict[str, str]:
    """Story id (the release id without its _aware/_action/_judge suffix) -> the story text the model saw."""
    out: dict[str, str] = {}
    for config in ("mental-state-qa", "behavior-qa", "judgment-qa"):
        path = FIXTURES / "simpletom" / config / "test.jsonl"
        for line in path.read_text().splitlines() if path.exists() else ():
            row = json.loads(line)
            out[row["id"].rsplit("_", 1)[0]] = row["story"]
    return out


def _story_text(item: dict[str, Any]) -> str:
    """The story the model saw for a report item (the log knows stories by their text)."""
    return _stories()[item["details"]["story"]]
