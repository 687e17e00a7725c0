"""A ToMValley "model" with a fixed answer plan per question kind, for metrics computed by hand.

It reads the fixture files with the json module only (nothing from pytest_tom, so a loader bug
cannot hide behind it), recognises the context from the main character's name in the prompt,
and replies with one JSON object, as the official protocol asks. The plan per context maps a
question-id family (and, for understanding, the item) to "c" (the gold letter), "w" (another
valid letter), "x" (a value that is not a letter of the question) or "-" (key left out).
Under the one-question protocol it answers that question's letter alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tomvalley"
MAIN = {"Mara Quinn": "trial7001", "Ines Park": "trial7002"}
ITEMS = ("belief", "emotion", "intention", "action")
PLAN = {
    "trial7001": {"type_a_what": "c", "type_c_how": "c", "type_d_whether": "w", "type_d_why": "w", "type_d_how": "w"},
    "trial7002": {"type_a_what:belief": "c", "type_a_what": "w", "type_c_how": "c", "type_d_whether": "c",
                  "type_d_why": "-", "type_d_how": "x"},
}
"""The hand-computed expectations in the tests follow from this table."""


def questions() -> dict[str, dict[str, Any]]:
    out = {"trial7001": json.loads((FIXTURES / "trial7001" / "question_new.json").read_text(encoding="utf-8"))}
    release = json.loads((FIXTURES / "DynToM.json").read_text(encoding="utf-8"))
    out["trial7002"] = release["trial7002"]["question"]
    return out


def _what(context: str, qid: str, q: dict[str, Any]) -> str:
    family = qid.rsplit("_", 1)[0]
    plan = PLAN[context]
    item = re.search(r"the (belief|emotion|intention|action) of", q["question"])
    if family == "type_a_what" and item and f"{family}:{item[1]}" in plan:
        return plan[f"{family}:{item[1]}"]
    return plan[family]


def value(context: str, qid: str, q: dict[str, Any]) -> str | None:
    what = _what(context, qid, q)
    gold = q["true answer"]
    if what == "c":
        return str(gold)
    if what == "w":
        return "b" if gold == "a" else "a"
    if what == "x":
        return "zz"
    return None


def reply(context: str) -> str:
    answers = {}
    for qid, q in questions()[context].items():
        v = value(context, qid, q)
        if v is not None:
            answers[qid] = v
    return "```json\n" + json.dumps(answers) + "\n```"


def _context_of(text: str) -> str:
    for name, context in MAIN.items():
        if f"**Main Character**: {name}," in text:
            return context
    raise AssertionError("unknown context in the prompt")


def model(conversations: list[list[dict[str, str]]], settings: dict[str, Any]) -> list[str]:
    out = []
    for conv in conversations:
        text = "\n".join(m["content"] for m in conv)
        context = _context_of(text)
        if "answer the floowing question" in text:
            qid = re.findall(r"\{'(type_[a-z_]+_\d+)': \{'question'", text)[-1]
            v = value(context, qid, questions()[context][qid])
            out.append(v if v is not None else "I am not sure.")
        else:
            out.append(reply(context))
    return out


model.tom_fingerprint = "tomvalley-oracle:v1"  # type: ignore[attr-defined]
