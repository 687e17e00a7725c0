"""From answers to a record: the reference parser, the mental-state reminder as a dependent stage, messages.

Parsing follows the authors' `process_answer` (spec section 2.3). A direct answer: "answer:" removed, then the first of
"(A)".."(D)" present, in that order; else "(A"/"(B" or a bare capital A-D when exactly one occurs (case-sensitive, as
upstream). A chain of thought: only the text after the LAST "the answer is", where the label that comes first wins.
Departures, both on answers breaking the "Therefore, the answer is:" contract: a chain of thought without it is
unparseable (upstream scans the reasoning), and "the answer is (B), not (A)" reads B (upstream: A). An unreadable answer
or a label the question does not offer is UNPARSEABLE, never INCORRECT; the paper's accuracy counts it wrong and reports
`na_frac`. An extra option (`extra_options`, (C)/(D)) is offered but never the gold: picking it is INCORRECT.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_tom.evals.simpletom.data import SimpleToMSample
from pytest_tom.evals.simpletom.prompts import MENTAL_STATE, PAPER_NAMES, PromptConfig, Reminder, build_request
from pytest_tom.framework.base import Program
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Request

PARSE_LABELS = "ABCD"
"""The labels the reference parser looks for (a C or D answer to a two-option question is unparseable)."""
_DIRECT_PREFIX = re.compile(r"(?i)answer:?")
_CONCLUSION = re.compile(r"(?i)the answer is:?")


def _fallback(text: str) -> str | None:
    """Upstream's second and third passes: "(X" then a bare X, each only when exactly one label occurs."""
    for pattern in ("({}", "{}"):
        found = [label for label in PARSE_LABELS if pattern.format(label) in text]
        if found:
            return found[0] if len(found) == 1 else None
    return None


def parse_answer(text: str | None, cot: bool) -> str | None:
    """The label an answer gives ("A".."D"), or None when it cannot be read (see the module docstring)."""
    if text is None:
        return None
    if cot:
        conclusions = list(_CONCLUSION.finditer(text))
        if not conclusions:
            return None
        tail = text[conclusions[-1].end() :].strip()
        positions = [(tail.find(f"({label})"), label) for label in PARSE_LABELS if f"({label})" in tail]
        return min(positions)[1] if positions else _fallback(tail)
    body = _DIRECT_PREFIX.sub("", text).strip()
    for label in PARSE_LABELS:
        if f"({label})" in body:
            return label
    return _fallback(body)


def mental_state_request(sample: SimpleToMSample, config: PromptConfig) -> Request:
    """The story's mental-state question exactly as its own item asks it: the engine dedupes and caches it."""
    x = sample.extra
    if not x.ms_question or len(x.ms_choices) != 2:
        raise ValueError(f"{sample.id} has no mental-state question to remind the model of")
    return build_request(sample.context.render(), x.ms_question, x.ms_choices, config, MENTAL_STATE)


def question_request(sample: SimpleToMSample, config: PromptConfig, reminder: Reminder | None = None) -> Request:
    return build_request(sample.context.render(), sample.question, sample.choices, config,
                         sample.extra.question_type, reminder)


def reminder_from(sample: SimpleToMSample, text: str | None, config: PromptConfig) -> tuple[Reminder, dict[str, Any]]:
    """The reminder built from the model's own mental-state answer, and what the record keeps of it.

    A readable answer (an extra option included) is shown as "(A)" (the paper's `Answer: (A)`), an unreadable one as
    written (stripped).
    """
    x = sample.extra
    raw = text or ""
    letter = parse_answer(raw, cot=False)
    labels = [c.label for c in config.shown(x.ms_choices)]
    readable = letter in labels
    shown = f"({letter})" if readable else raw.strip()
    info: dict[str, Any] = {"question": x.ms_question, "response": raw, "parsed": letter if readable else None,
                            "shown": shown, "correct": readable and letter == x.ms_gold}
    return Reminder(question=x.ms_question, choices=x.ms_choices, answer=shown), info


def solve(sample: SimpleToMSample, config: PromptConfig) -> Program:
    """Ask the question; under the reminder, first ask (or reuse) the story's mental-state question.

    The second stage shows the first stage's response as recorded (fresh or cached); a model error on the
    first stage makes the item an ERROR without asking the question.
    """
    reminder: Reminder | None = None
    info: dict[str, Any] | None = None
    if config.reminder and sample.extra.question_type != MENTAL_STATE:
        first = yield [mental_state_request(sample, config)]
        reminder, info = reminder_from(sample, first[0].text, config)
    second = yield [question_request(sample, config, reminder)]
    return score(sample, config, second[0].text, info)


def applied(config: PromptConfig, question_type: str) -> str:
    """The intervention a question was asked under: the mental-state questions as in the baseline, except with CoT."""
    return "none" if question_type == MENTAL_STATE and config.cot(question_type) is None else config.intervention


def _extra(config: PromptConfig, label: str | None) -> str | None:
    """The extra option ("either", "neither") a label picks, None for the question's own options.

    Extra options follow the release's two options, which the loader checks every question has.
    """
    index = ord(label) - ord("A") - 2 if label else -1
    return config.extra_options[index] if 0 <= index < len(config.extra_options) else None


def score(sample: SimpleToMSample, config: PromptConfig, text: str | None,
          reminder: Mapping[str, Any] | None = None) -> Record:
    x = sample.extra
    cot = config.cot(x.question_type) is not None
    letter = parse_answer(text, cot)
    labels = [c.label for c in config.shown(sample.choices)]
    parsed = letter if letter in labels else None
    outcome = Outcome.judge(parsed, sample.gold_label)
    details: dict[str, Any] = {"story": x.story_id, "question_type": x.question_type,
                               "intervention": applied(config, x.question_type), "persona": config.persona,
                               "layout": config.layout, "cot": cot, "read": letter}
    if config.extra_options:  # only then, so default records keep their fields
        details["extra_options"] = list(config.extra_options)
        details["extra_option"] = _extra(config, parsed)
    if reminder is not None:
        details["reminder"] = dict(reminder)
    return Record.of(
        sample, outcome, parsed=parsed, gold=sample.gold, responses=(text,), details=details,
        message="" if outcome is Outcome.CORRECT else explain(sample, config, text, letter, parsed, reminder))


def _option(sample: SimpleToMSample, label: str, config: PromptConfig) -> str:
    text = next(c.text for c in config.shown(sample.choices) if c.label == label)
    return f'({label}) "{text}"' + (" (an extra option: never the answer)" if _extra(config, label) else "")


def _clip(text: str, limit: int, tail: bool) -> str:
    flat = text.strip().replace("\n", " ")
    if len(flat) <= limit:
        return flat
    return "[...] " + flat[-limit:] if tail else flat[:limit] + " [...]"


def explain(sample: SimpleToMSample, config: PromptConfig, text: str | None, letter: str | None, parsed: str | None,
            reminder: Mapping[str, Any] | None) -> str:
    """Everything needed to judge a failure without opening the data: answer vs gold first, then the prompt's parts."""
    x = sample.extra
    cot = config.cot(x.question_type) is not None
    kind = x.question_type.replace("_", "-")  # "mental-state"
    if parsed is not None:
        answer = f"answered {_option(sample, parsed, config)}"
    elif letter is not None:
        answer = f"answered ({letter}), not an option"
    elif cot and text is not None and not _CONCLUSION.search(text):
        answer = 'unparseable answer (no "the answer is" in the chain of thought)'
    else:
        answer = "unparseable answer"
    applied_now = applied(config, x.question_type)
    lines = [
        f"SimpleToM {kind} question: {answer}; gold {_option(sample, sample.gold_label, config)}",
        f"story {x.story_id} ({x.scenario}, severity {x.severity}): {sample.context.render()}",
        f"question: {sample.question.strip()}",
        "options: " + " ".join(f"({c.label}) {c.text}" for c in config.shown(sample.choices)),
        f"asked with: intervention {applied_now} ({PAPER_NAMES.get(applied_now, '?')}), persona {config.persona}",
    ]
    if reminder is not None:
        verdict = "right" if reminder["correct"] else ("unreadable" if reminder["parsed"] is None else "wrong")
        lines.append(f"reminder: Answer: {reminder['shown']} (the model's own mental-state answer, {verdict}; "
                     f"gold ({x.ms_gold}))")
    raw = "(no text)" if text is None else repr(_clip(text, 300, tail=cot))
    lines.append(f"response: {raw}")
    return "\n".join(lines)
