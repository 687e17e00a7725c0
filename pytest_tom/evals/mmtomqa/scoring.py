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
from pytest_tom.record import Outcome, Record
from pytest_tom.request import GenerationSettings, Message, Request

SYSTEM = "You are a helpful assistant."
"""The chat path's system message (spec §3.2)."""
SUFFIX = "\nAnswer: "
MAX_TOKENS = 5
"""The official `max_tokens` of every call; greedy (temperature 0), one try (spec §3.6)."""
_LETTER = re.compile(r"[ab](?![a-z])", re.I)


def official(response: str | None) -> str | None:
    """The official letter: the first character after stripping newlines, then spaces, lower-cased; None when empty."""
    text = (response or "").strip("\n").strip(" ").lower()
    return text[0] if text else None


def word_letter(response: str | None) -> bool:
    """The official letter is a or b but only as a word's first letter ("Based ...", "Answer: b"), not a standalone one."""
    text = (response or "").strip("\n").strip(" ")
    return official(response) in ("a", "b") and _LETTER.match(text) is None


def prompt(sample: MMToMSample, shots: int, context: str) -> str:
    r"""The official prompt: the few-shot prefix, the record's text (or from `\nQuestion:` on), then "\nAnswer: "."""
    body = render(sample)
    if context == "question":  # the official video-only cut (spec §3.4): a no-context ablation for a text model
        body = "\nQuestion:" + body.split("\nQuestion:")[-1]
    return SHOTS[shots] + body + SUFFIX


def request(sample: MMToMSample, shots: int, system: str, context: str, max_new_tokens: int) -> Request:
    """One greedy call; `system` helpful: the official chat messages, none: the prompt alone as the user message."""
    user = Message("user", prompt(sample, shots, context))
    messages = (Message("system", SYSTEM), user) if system == "helpful" else (user,)
    return Request(messages=messages, settings=GenerationSettings(max_new_tokens=max_new_tokens),
                   answer_labels=("a", "b"))


def solve(sample: MMToMSample, shots: int, system: str, context: str, max_new_tokens: int) -> Program:
    (response,) = yield [req := request(sample, shots, system, context, max_new_tokens)]
    return score(sample, response.text, req.key)


def score(sample: MMToMSample, text: str | None, key: str = "") -> Record:
    """Correct iff the official letter is the gold; no letter a or b is unparseable (not correct, in the denominator)."""
    letter = official(text)
    got = letter if letter in ("a", "b") else None
    outcome, word = Outcome.judge(got, sample.gold_label), word_letter(text)
    message = ""
    if outcome is not Outcome.CORRECT:
        x, gold = sample.extra, sample.gold_label
        read = (f"{letter!r}" if letter else "nothing (empty answer)") + (", a letter a or b is needed" if got is None else "")
        message = "\n".join([
            f"MMToM-QA {sample.id} (type {x.qtype}, {sample.source}): {outcome.value}",
            f"question: {sample.question}", f"gold: ({gold}) {sample.choice(gold).text}",
            f"answer: {(text or '')[:200]!r}; official first character: {read}"
            + ("; read off the first letter of a word" if word else ""),
        ])
    return Record.of(sample, outcome, parsed=got, gold=sample.gold_label, responses=(text,),
                     request_keys=(key,) if key else (), details={"letter": letter, "word_letter": word}, message=message)
