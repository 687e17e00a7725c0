"""From an answer to a record: the authors' first-line rule (spec §4.1), with §4.2's safe relaxations.

The first non-blank line decides, an `Answer:` token dropped: the container of `<L>. <container>` (lower-cased; the
letter is ignored, as upstream; text may follow) or a bare letter read through the choices. The rest is never
searched: a CoT explanation names many containers.
"""

from __future__ import annotations

import re

from pytest_tom.evals.hitom.data import HiToMSample, render
from pytest_tom.framework.base import Program
from pytest_tom.record import Outcome, Record
from pytest_tom.request import GenerationSettings, Message, Request

STRICT = re.compile(r"([A-O])\.\s+([A-Za-z_]+)")
LETTER = re.compile(r"\(?([A-O])\)?[.:)]?")
AUTHORS_MAX_TOKENS = 2000  # `max_tokens` of the authors' GPT-4 script (spec §3.3)


def first_line(text: str | None) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


def extract(response: str | None, choices: dict[str, str]) -> str | None:
    """The predicted container, or None when the first non-blank line is no answer; `choices`: letter -> container."""
    line = first_line(response).removeprefix("Answer:").strip()
    if m := STRICT.match(line):
        return m.group(2).lower()
    return choices[m.group(1)] if (m := LETTER.fullmatch(line)) else None


def request(sample: HiToMSample, max_new_tokens: int) -> Request:
    """The prompt file as the only user message, greedy; the random model answers a well-formed '<L>. <container>'."""
    return Request(messages=(Message("user", render(sample)),),
                   settings=GenerationSettings(max_new_tokens=max_new_tokens or AUTHORS_MAX_TOKENS),
                   answer_labels=tuple(f"{c.label}. {c.text}" for c in sample.choices))


def solve(sample: HiToMSample, max_new_tokens: int, gold: str) -> Program:
    (response,) = yield [req := request(sample, max_new_tokens)]
    return score(sample, response.text, gold, req.key)


def score(sample: HiToMSample, text: str | None, gold: str, key: str = "") -> Record:
    """Correct iff the extracted container is the gold's; unparseable counts as not correct in the metrics."""
    choices, x = {c.label: c.text for c in sample.choices}, sample.extra
    want, got = choices[sample.gold_label], extract(text, choices)
    outcome, message = Outcome.judge(got, want), ""
    if outcome is not Outcome.CORRECT:
        differ = (f"; the MC and CoT data files disagree (MC {x.gold_mc}, CoT {x.gold_cot}), gold={gold} reads "
                  f"{'the ' + x.style + ' file' if gold == 'own' else gold.upper()}") if x.gold_mc != x.gold_cot else ""
        message = "\n".join([
            f"Hi-ToM {x.path} (order {x.order}, length {x.length}, {x.tell}, {x.style}): {outcome.value}",
            f"question: {sample.question}", f"gold: {sample.gold_label}. {want}{differ}",
            f"first line of the answer: {first_line(text)[:200]!r} -> {got or 'unparseable'}",
        ])
    return Record.of(sample, outcome, parsed=got, gold=want, responses=(text,), request_keys=(key,) if key else (),
                     details={"gold_setting": gold}, message=message)
