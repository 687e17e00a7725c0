"""Scoring FANToM answers into records, with failure messages a user can act on without the data file.

The decisions are the shared scorers' (`pytest_tom.scoring`, `official` or `strict`); this module adds
FANToM's reading of them: which answer is the gold, why a wrong answer is wrong, the explanation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_tom import scoring as shared
from pytest_tom.evals.fantom.data import LABEL, FantomExtra
from pytest_tom.record import Outcome, Record
from pytest_tom.sample import Sample


def gold_int(gold: str) -> int:
    return 1 if gold == "yes" else 0


def record_gold(sample: Sample[FantomExtra]) -> Any:
    """The gold a record reports: the letter, the names, yes/no, the fact answer, or "personx-centric"."""
    if sample.extra.qtype == "belief_free":
        return "personx-centric"
    return list(sample.gold) if isinstance(sample.gold, tuple) else sample.gold


def result(sample: Sample[FantomExtra], raws: Sequence[str], outcome: Outcome, parsed: Any, details: dict[str, Any],
           mode: str, score: float | None = None, why: str = "") -> Record:
    details["unit_size"] = sample.extra.unit_size
    details["set_all_accessible"] = sample.extra.set_all_accessible  # the 2024 control ALL*/ALL set filter
    message = ""
    if outcome is not Outcome.CORRECT:
        message = explain(sample, raws, outcome, parsed, why, mode)
        if why:
            details["why"] = why
    return Record.of(sample, outcome, score=score, parsed=parsed, gold=record_gold(sample), responses=tuple(raws),
                     details=details, message=message)


def score(sample: Sample[FantomExtra], raws: Sequence[str], answer: str, mode: str, threshold: float) -> Record:
    """Score every question type but the free-response belief (which needs embeddings)."""
    qtype = sample.extra.qtype
    details: dict[str, Any] = {"answer": answer, "parsing": mode}
    if qtype == "fact":
        return _fact(sample, raws, answer, mode, threshold, details)
    if qtype == "belief_choice":
        return _choice(sample, raws, answer, mode, details)
    if qtype.endswith("_list"):
        return _list(sample, raws, answer, mode, details)
    return _yes_no(sample, raws, answer, mode, details)


def _fact(sample: Sample[FantomExtra], raws: Sequence[str], answer: str, mode: str, threshold: float,
          details: dict[str, Any]) -> Record:
    f1 = shared.token_f1(str(sample.gold).lower(), answer.lower())
    details.update(token_f1=f1, threshold=threshold)
    if not answer.strip():
        return result(sample, raws, Outcome.UNPARSEABLE, None, details, mode, 0.0, "the answer is empty")
    ok = f1 >= threshold
    why = "" if ok else f"token F1 {f1:.3f} against the full fact answer is below the pass threshold {threshold:g}"
    return result(sample, raws, Outcome.CORRECT if ok else Outcome.INCORRECT, clip(answer), details, mode, f1, why)


def _choice(sample: Sample[FantomExtra], raws: Sequence[str], answer: str, mode: str, details: dict[str, Any]) -> Record:
    options = [c.text for c in sample.choices]
    labels = "".join(c.label for c in sample.choices)
    gold = sample.gold_label
    letters = shared.letters_picked(answer, mode, options, labels)
    # official: upstream's pattern decides, any letter is readable; strict: exactly the gold letter, and only one
    ok, readable = ((shared.letter_official_correct(answer, gold), bool(letters)) if mode == "official"
                    else (letters == (gold,), len(letters) == 1))
    parsed = ",".join(letters) if letters else None
    details.update(options=options, letters=list(letters), gold_letter=gold)
    if ok:
        return result(sample, raws, Outcome.CORRECT, parsed, details, mode)
    if not readable:
        why = "no option letter found" if not letters else f"the answer picks both options ({', '.join(letters)})"
        return result(sample, raws, Outcome.UNPARSEABLE, parsed, details, mode, why=why)
    why = (f"chose ({letters[0]}), the omniscient-view answer: it uses information "
           f"{sample.extra.joining_speaker or 'the character'} could not have")
    return result(sample, raws, Outcome.INCORRECT, parsed, details, mode, why=why)


def _list(sample: Sample[FantomExtra], raws: Sequence[str], answer: str, mode: str, details: dict[str, Any]) -> Record:
    correct = tuple(sample.gold)
    wrong = sample.extra.list_wrong
    j = shared.judge_list(answer, correct, wrong, mode)
    details.update(named=list(j.named), excluded_aware=j.excluded_aware, included_unaware=j.included_unaware)
    names = sorted(j.named)
    if j.correct:
        return result(sample, raws, Outcome.CORRECT, names, details, mode)
    if not j.readable:
        return result(sample, raws, Outcome.UNPARSEABLE, None, details, mode, why="the answer names none of the characters")
    missing = [n for n in correct if n not in j.named]
    extra = [n for n in wrong if n in j.named]
    parts = (f"includes {', '.join(extra)}, who do{'es' if len(extra) == 1 else ''} not know" if extra else "",
             f"leaves out {', '.join(missing)}, who know{'s' if len(missing) == 1 else ''}" if missing else "")
    return result(sample, raws, Outcome.INCORRECT, names, details, mode, why="; ".join(filter(None, parts)))


def _yes_no(sample: Sample[FantomExtra], raws: Sequence[str], answer: str, mode: str, details: dict[str, Any]) -> Record:
    x = sample.extra
    value = shared.binary_official(answer) if mode == "official" else shared.binary_strict(answer)
    gold = str(sample.gold)
    details.update(binarized=value, gold_yes_no=gold, gold_raw=x.binary_gold)
    said = {1: "yes", 0: "no", -1: None}[value]
    if value == gold_int(gold):
        return result(sample, raws, Outcome.CORRECT, said, details, mode)
    if value == -1:
        return result(sample, raws, Outcome.UNPARSEABLE, None, details, mode,
                      why="no yes/no answer found (upstream calls this an irrelevant response)")
    who = x.binary_character
    why = (f"says {who} knows, but {who} does not (false positive: includes an unaware character)"
           if value == 1 else
           f"says {who} does not know, but {who} does (false negative: excludes an aware character)")
    return result(sample, raws, Outcome.INCORRECT, said, details, mode, why=why)


def score_free(sample: Sample[FantomExtra], raws: Sequence[str], answer: str, mode: str, embedder: str | None,
               vectors: Sequence[Sequence[float]] | None) -> Record:
    """Upstream's `evaluate_belief_q`: closer to PersonX-centric than omniscient (ties are wrong), plus token F1.

    `vectors`: embeddings of [answer, PersonX-centric, omniscient-view]; None for an empty answer.
    """
    correct, wrong = str(sample.gold), sample.extra.belief_wrong
    details: dict[str, Any] = {"answer": answer, "parsing": mode, "personx_centric": correct, "omniscient_view": wrong}
    if vectors is None:
        details["embedder"] = embedder
        return result(sample, raws, Outcome.UNPARSEABLE, None, details, mode, 0.0, "the answer is empty")
    ok, sim_correct, sim_wrong = shared.nearer(vectors[0], vectors[1], vectors[2])
    f1_correct = shared.token_f1(correct, answer)
    f1_wrong = shared.token_f1(wrong, answer)
    details.update(embedder=embedder, sim_personx=sim_correct, sim_omniscient=sim_wrong,
                   token_f1_personx=f1_correct, token_f1_omniscient=f1_wrong)
    value = f1_correct if ok else f1_wrong  # upstream's word_overlap
    parsed = "personx-centric" if ok else "omniscient-view"
    tie = sim_correct == sim_wrong
    why = "" if ok else (
        f"the answer is {'as close' if tie else 'closer'} to the omniscient-view answer "
        f"(cosine {sim_wrong:.3f}) {'as' if tie else 'than'} to the PersonX-centric one "
        f"({sim_correct:.3f}) with {embedder}: it attributes information the character could not have"
        + (" (a tie counts as wrong, as upstream)" if tie else "")
    )
    return result(sample, raws, Outcome.CORRECT if ok else Outcome.INCORRECT, parsed, details, mode, value, why)


def explain(sample: Sample[FantomExtra], raws: Sequence[str], outcome: Outcome, parsed: Any, why: str, mode: str) -> str:
    """Everything a user needs to judge a failure without opening the data file."""
    x = sample.extra
    ctx = sample.context.render()
    scenario = f", {x.accessibility}" if x.accessibility else ""
    lines = [
        f"FANToM {LABEL[x.qtype]}, set {x.set_id} ({x.context} context{scenario}; "
        f"{x.joining_speaker or 'a character'} missed part of it): {outcome.value}",
        f"context ({len(ctx.splitlines())} turns):",
        excerpt(ctx),
    ]
    if x.qtype.endswith("_list") or x.qtype.endswith("_yn"):
        if x.family == "answerability":
            lines.append(f"target: {x.fact_question}")
        else:
            lines.append(f"information: {x.fact_question} {x.fact_answer}")
    if x.qtype == "fact":
        lines += [f"question: {sample.question}", f"gold (full fact answer): {sample.gold}"]
    elif x.qtype in ("belief_free", "belief_choice"):
        lines.append(f"question ({x.tom_type}): {sample.question}")
        if x.qtype == "belief_choice":
            lines += [f"  ({c.label}) {c.text}" for c in sample.choices]
            lines.append(f"gold: ({sample.gold}), the PersonX-centric answer")
        else:
            lines += [f"gold (PersonX-centric): {sample.gold}", f"distractor (omniscient view): {x.belief_wrong}"]
    elif x.qtype.endswith("_list"):
        lines += [f"question: {sample.question}",
                  f"gold: {', '.join(sample.gold)} (not: {', '.join(x.list_wrong) or 'nobody'})"]
    else:
        lines += [f"question: {sample.question}", f"gold: {sample.gold}"]
    if len(raws) > 1:
        lines.append(f"reasoning: {clip(raws[0])!r}")
    lines.append(f"response: {clip(raws[-1])!r}")
    shown = "unparseable" if parsed is None else (", ".join(parsed) if isinstance(parsed, list) else str(parsed))
    lines.append(f"parsed ({mode}): {shown or 'nobody'}")
    if why:
        lines.append(f"why: {why}")
    return "\n".join(lines)


def excerpt(context: str, head: int = 3, tail: int = 3, width: int = 160) -> str:
    """The conversation's first and last turns, enough to recognise it in a failure message."""
    lines = [ln if len(ln) <= width else ln[: width - 5] + " [...]" for ln in context.split("\n")]
    if len(lines) > head + tail + 1:
        lines = [*lines[:head], f"[... {len(lines) - head - tail} more turns ...]", *lines[-tail:]]
    return "\n".join("    " + ln for ln in lines)


def clip(text: str, width: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 6] + " [...]"
