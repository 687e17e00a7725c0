"""MMToM-QA's prompts byte for byte (0, 1 and 2 shots, both system settings, the question-only cut), its decoding, and
the official first-character rule case by case (spec §3.7's table), with the unreadable and word-letter reports.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.evals.mmtomqa import MMToMQA
from pytest_tom.evals.mmtomqa.scoring import official, request, score, word_letter
from pytest_tom.framework.base import DataSource
from pytest_tom.record import Outcome

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
RAW = [json.loads(line) for line in (FIXTURES / "mmtomqa" / "Benchmark" / "questions.json").read_text().splitlines()]
ITEMS = MMToMQA({"partial": True}).load(DataSource(FIXTURES, False, FIXTURES / ".cache"))
PREFIX = {  # spec Appendix A: length and sha256 of one_shot_prompt and two_shot_prompt
    1: (1960, "6a9c333469a63944dc130384a2e9a37ef4e29e19013b645345a0f14c61e8b6f5"),
    2: (3532, "4c9d358d00b6d9ca37508a3ac984658ad9c6bb53eb8d802c0006cd8b028ef35c"),
}


def test_zero_shot_is_the_record_text_and_answer_suffix_under_the_official_system_message() -> None:
    for s, rec in zip(ITEMS, RAW, strict=True):
        sent = [m.to_dict() for m in request(s, 0, "helpful", "full", 5).messages]
        assert sent == [{"role": "system", "content": "You are a helpful assistant."},
                        {"role": "user", "content": rec["question"] + "\nAnswer: "}]
        alone = request(s, 0, "none", "full", 5).messages
        assert [m.to_dict() for m in alone] == sent[1:]
    settings = request(ITEMS[0], 0, "helpful", "full", 5).settings
    assert (settings.max_new_tokens, settings.temperature) == (5, 0.0)
    assert request(ITEMS[0], 0, "helpful", "full", 5).answer_labels == ("a", "b")


@pytest.mark.parametrize("shots", [1, 2])
def test_few_shot_prompts_are_the_official_prefix_then_the_zero_shot_prompt(shots: int) -> None:
    size, digest = PREFIX[shots]
    for s, rec in zip(ITEMS, RAW, strict=True):
        text = request(s, shots, "helpful", "full", 5).messages[-1].content
        prefix, rest = text[:size], text[size:]
        assert hashlib.sha256(prefix.encode()).hexdigest() == digest and rest == rec["question"] + "\nAnswer: "
    assert prefix.endswith("Please respond with either a or b. \nAnswer: " + "ba"[shots - 1] + ". \n\n\n")
    if shots == 2:  # the 20 spaces of the official string literal's line continuation
        assert prefix[1960:1981] == " " * 20 + "W"


def test_the_question_only_cut_drops_scene_and_actions_as_the_official_video_only_path() -> None:
    for s, rec in zip(ITEMS, RAW, strict=True):
        text = request(s, 0, "helpful", "question", 5).messages[-1].content
        assert text == "\nQuestion:" + rec["question"].split("\nQuestion:")[-1] + "\nAnswer: "
        assert text.startswith("\nQuestion: If ") or text.startswith("\nQuestion: Which ")


def test_the_settings_reach_the_request_and_are_checked() -> None:
    bench = MMToMQA({"partial": True, "shots": "2", "system": "none", "max_new_tokens": "7"})
    req = next(bench.program(ITEMS[0]))[0]
    assert [m.role for m in req.messages] == ["user"] and req.settings.max_new_tokens == 7
    assert len(req.messages[0].content) == 3532 + len(RAW[0]["question"]) + len("\nAnswer: ")
    with pytest.raises(TomConfigError, match="shots='3': '3' is not one of 0, 1, 2"):
        MMToMQA({"shots": "3"})
    with pytest.raises(TomConfigError, match="max_new_tokens='0': must be at least 1"):
        MMToMQA({"max_new_tokens": "0"})
    assert MMToMQA().describe()["settings"] | {"shots": "0", "system": "helpful", "context": "full"} == \
        MMToMQA().describe()["settings"]


@pytest.mark.parametrize(("response", "letter", "word"), [
    ("b", "b", False), ("b.", "b", False), ("B", "b", False), ("b) ...", "b", False), ("B. Mark thinks ...", "b", False),
    ("\n\nb", "b", False), ("  b", "b", False), ("(b)", "(", False), ("(b) Mark thinks that ...", "(", False),
    ("Answer: b", "a", True), ("Based on the actions, (a)", "b", True), ("As Mark is about to ...", "a", True),
    ("The answer is b", "t", False), (" \nb", "\n", False), ("\tb", "\t", False), ("", None, False),
    (" \n ", "\n", False), ("\n \n", None, False), (None, None, False), ("a-b", "a", False), ("A\n", "a", False),
])
def test_the_official_first_character_and_the_word_letter_flag(response: str | None, letter: str | None,
                                                                word: bool) -> None:
    assert official(response) == letter
    assert word_letter(response) is word


def test_scoring_reads_the_official_letter_and_reports_what_it_cannot_read() -> None:
    s = ITEMS[2]  # gold b
    assert score(s, "b").outcome is Outcome.CORRECT and score(s, "Based on it").outcome is Outcome.CORRECT
    assert score(s, "Based on it").details == {"letter": "b", "word_letter": True}
    wrong = score(s, "Answer: b")
    assert wrong.outcome is Outcome.INCORRECT and wrong.parsed == "a" and "first letter of a word" in wrong.message
    for text in ("(b)", "", " \nb", "The answer is b"):
        r = score(s, text)
        assert r.outcome is Outcome.UNPARSEABLE and r.parsed is None and r.parse_rate == 0.0
        assert "a letter a or b is needed" in r.message or "nothing (empty answer)" in r.message
    assert score(s, "a").message.splitlines()[0] == f"MMToM-QA 1.2-e7-t9 (type 1.2, {s.source}): incorrect"
    assert "gold: (b) Ann thinks that the cupcake is inside the stove." in score(s, "a").message
