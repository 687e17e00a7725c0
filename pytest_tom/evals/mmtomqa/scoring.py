r"""From an answer to a record: the official first-character rule of `testing_gpt.py` (spec §3.7), exactly.

`response.strip("\n").strip(" ").lower()[0]` is the answer; right iff it is the gold letter. What the official code
scores wrong without reading a letter (empty, `(b)`, `The answer is b`) is `unparseable` here: still not right, so the
accuracy is the official number; a letter read off the first letter of a word (`Based on...` -> b, `Answer: b` -> a)
counts as that letter, as officially, and is flagged in the record so the metrics can report how often it happened.
"""

from __future__ import annotations

import re

from pytest_tom.evals.mmtomqa.data import MMToMSample, render
from pytest_tom.evals.mmtomqa.shots import SHOTS
from pytest_tom.framework.base import Program
from pytest_tom.record import Outcome, Record, failure
from pytest_tom.request import GenerationSettings, Message, Request

SYSTEM = "You are a helpful assistant."  # the chat path's system message (spec §3.2)
SUFFIX = "\nAnswer: "
_LETTER = re.compile(r"[ab](?![a-z])", re.I)


def official(response: str | None) -> str | None:
    """The official letter: the first character after stripping newlines, then spaces, lower-cased; None when empty."""
    text = (response or "").strip("\n").strip(" ").lower()
    return text[0] if text else None


def word_letter(response: str | None) -> bool:
    """The official letter is a or b but only as a word's first letter ("Based ...", "Answer: b"), not a standalone one."""
    return official(response) in ("a", "b") and _LETTER.match((response or "").strip("\n").strip(" ")) is None


def request(sample: MMToMSample, shots: int, system: str, context: str, max_new_tokens: int) -> Request:
    r"""The official prompt (shots, the text or from `\nQuestion:` on, "\nAnswer: "), greedy; system none: no system message."""
    body = render(sample)
    if context == "question":  # the official video-only cut (spec §3.4): a no-context ablation for a text model
        body = "\nQuestion:" + body.split("\nQuestion:")[-1]
    user = Message("user", SHOTS[shots] + body + SUFFIX)
    messages = (Message("system", SYSTEM), user) if system == "helpful" else (user,)
    return Request(messages=messages, settings=GenerationSettings(max_new_tokens=max_new_tokens),
                   answer_labels=("a", "b"))


def solve(sample: MMToMSample, shots: int, system: str, context: str, max_new_tokens: int) -> Program:
    (response,) = yield [req := request(sample, shots, system, context, max_new_tokens)]
    return score(sample, response.text, req.key)


def score(sample: MMToMSample, text: str | None, key: str = "") -> Record:
    """Correct iff the official letter is the gold; no letter a or b is unparseable (not correct, in the denominator)."""
    letter, gold = official(text), sample.gold_label
    got = letter if letter in ("a", "b") else None
    outcome, word = Outcome.judge(got, gold), word_letter(text)
    read = (f"{letter!r}" if letter else "nothing (empty answer)") + (", a letter a or b is needed" if got is None else "")
    message = failure(f"MMToM-QA {sample.id} (type {sample.extra.qtype}, {sample.source})", outcome, sample.question,
                      f"gold: ({gold}) {sample.choice(gold).text}", f"answer: {(text or '')[:200]!r}; official first "
                      f"character: {read}" + ("; read off the first letter of a word" if word else ""))
    return Record.of(sample, outcome, parsed=got, gold=gold, responses=(text,),
                     request_keys=(key,) if key else (), details={"letter": letter, "word_letter": word}, message=message)
