"""Reading answers: one JSON object for a whole context, or one answer for one question.

The official scorer NFKC-normalises the reply, strips ```json fences or keeps the first "{" to the first
"}", `json.loads` it and compares each question's value with the gold letter exactly. Here: a reply with
no readable object is unparseable for every question of the context (never "wrong"); a missing key or a
value that is not one of the question's letters is unparseable for that question alone; the object read
is the first holding one of the context's question ids (a brace in the reasoning does not fail the
reply); a value reads as a letter alone or followed by ".", ")" or the option text, in either case.
Deviations are recorded in README; the metrics count unparseable as not correct, as the paper does.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from pytest_tom.evals.tomvalley.data import ToMValleySample, letter
from pytest_tom.evals.tomvalley.prompts import PromptConfig, request_for
from pytest_tom.framework.base import Program
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Response

_VALUE = re.compile(r"^\s*\(?\s*([A-Za-z])\s*(?:\)|\.|:|$|\s)")
_SINGLE_LEAD = re.compile(r"^\s*(?:\*\*)?\(?([A-Za-z])(?:\)|\.|:)?(?:\*\*)?(?:\s|$)")
_SINGLE_CONCLUSION = re.compile(r"answer(?: is)?\s*[:：]?\s*\(?\**([A-Za-z])\**\)?(?![A-Za-z])", re.IGNORECASE)


def answer_object(text: str, qids: Sequence[str]) -> dict[str, Any] | None:
    """The first JSON object in `text` holding one of `qids`, or None when there is none."""
    text = unicodedata.normalize("NFKC", text)
    decoder = json.JSONDecoder()
    wanted = set(qids)
    pos = text.find("{")
    while pos != -1:
        try:
            obj, _ = decoder.raw_decode(text, pos)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and wanted & set(obj):
            return obj
        pos = text.find("{", pos + 1)
    return None


def read_value(value: Any, n_options: int) -> str | None:
    """The letter a JSON value names, if it is one of the question's `n_options` letters."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    m = _VALUE.match(value) if isinstance(value, str) else None
    got = m.group(1).lower() if m else None
    return got if got in {letter(i) for i in range(n_options)} else None


def read_single(text: str, qid: str, n_options: int) -> tuple[str | None, str]:
    """(letter, how it was read) for a one-question reply: a JSON object with the id, a leading letter, or "answer is x"."""
    obj = answer_object(text, [qid])
    if obj is not None:
        return read_value(obj.get(qid), n_options), "json"
    flat = unicodedata.normalize("NFKC", text)
    m = _SINGLE_LEAD.match(flat)
    if m and (got := read_value(m.group(1), n_options)):
        return got, "leading letter"
    found = _SINGLE_CONCLUSION.findall(flat)
    if found:
        return read_value(found[-1], n_options), "answer is"
    return None, "none"


def solve(sample: ToMValleySample, config: PromptConfig) -> Program:
    request = request_for(sample, config)
    (response,) = yield [request]
    return score(sample, config, response, request.key)


def score(sample: ToMValleySample, config: PromptConfig, response: Response, key: str = "") -> Record:
    text = response.text or ""
    n = len(sample.choices)
    qid = sample.extra.qid
    details: dict[str, Any] = {"context": sample.extra.context_id, "qid": qid, "protocol": config.protocol,
                               "style": config.style, "options": n}
    if config.protocol == "context":
        obj = answer_object(text, [q.qid for q in sample.extra.questions])
        if obj is None:
            parsed, why = None, "no JSON object with this context's question ids in the reply"
        elif qid not in obj:
            parsed, why = None, f"the reply's JSON object has no key {qid!r} ({len(obj)} keys)"
        else:
            raw = obj[qid]
            parsed = read_value(raw, n)
            details["value"] = raw
            why = f"value {raw!r} is not one of the letters a-{letter(n - 1)}" if parsed is None else ""
        details["answered_in_reply"] = 0 if obj is None else len(obj)
    else:
        parsed, how = read_single(text, qid, n)
        details["read"] = how
        why = "" if parsed is not None else f"no letter a-{letter(n - 1)} could be read from the reply"
    if parsed is None:
        details["why"] = why
    outcome = Outcome.judge(parsed, sample.gold)
    return Record.of(sample, outcome, parsed=parsed, gold=sample.gold, responses=(response.text,),
                     request_keys=(key,) if key else (), details=details,
                     message="" if outcome is Outcome.CORRECT else explain(sample, parsed, text, why))


def explain(sample: ToMValleySample, parsed: str | None, text: str, why: str) -> str:
    x = sample.extra

    def option(label: str) -> str:
        return f'({label}) "{sample.choice(label).text}"'

    answer = f"answered {option(parsed)}" if parsed is not None else f"unparseable answer: {why}"
    where = f"scenario {x.scenario}" if x.subtype in ("understanding", "influence") else (
        f"scenarios {x.scenario}-{x.scenario + 1}" if x.scenario else "all scenarios")
    flat = text.strip().replace("\n", " ")
    shown = flat if len(flat) <= 300 else flat[:300] + f" [... {len(flat) - 300} more characters]"
    return "\n".join([
        f"ToMValley {x.subtype} question on the {x.item} of the main character ({where}): {answer}; "
        f"gold {option(sample.gold_label)}",
        f"context {x.context_id}, question {x.qid}: {sample.question}",
        f"{len(sample.choices)} options: " + " ".join(f"({c.label}) {c.text}" for c in sample.choices),
        f"response: {shown!r}",
    ])

