"""FANToM samples: one per question and context, with the old item ids, marks and facets.

Everything a prompt shows lives in the sample's generic fields (the conversation
as speaker turns, the question, the two belief options in the official order),
so a renamed or permuted sample is asked as rewritten; `FantomExtra` carries the
rest. The question order, the dropped `no:long` questions of the short context
and the full context's re-tagged scenarios are upstream's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_tom.evals.fantom.data import DATA_FILE, FAMILIES, FAMILY, FORMAT, BeliefQA, FantomExtra, FantomSet
from pytest_tom.framework.base import slug
from pytest_tom.sample import Choice, Conversation, Sample


def choice_options(belief: BeliefQA) -> tuple[str, str, str]:
    """(option a, option b, gold letter) in the official order."""
    if belief.correct_last:
        return belief.wrong, belief.correct, "b"
    return belief.correct, belief.wrong, "a"


def unit_of(s: FantomSet, field: str) -> str:
    return {"set": s.set_id, "part": s.part_id, "conversation": s.conversation_id}[field]


def set_characters(s: FantomSet, conversations: Sequence[Conversation]) -> tuple[str, ...]:
    """Every name a consistent rename must replace: speakers, the list questions' names, the yes/no characters."""
    names: list[str] = []
    for conv in conversations:
        names += conv.speakers
    for family in FAMILIES:
        lq = s.lists(family)
        names += [*lq.correct, *lq.wrong]
        names += [b.character for b in s.binaries(family)]
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class _Planned:
    s: FantomSet
    qtype: str
    index: int
    accessibility: str
    upstream: str


def _plan(s: FantomSet, context: str, with_free: bool) -> list[_Planned]:
    """The questions of one set in one context, in upstream's order, with the scenario tags upstream scores them by.

    The short context drops `no:long` yes/no questions; the full context re-tags list and yes/no questions.
    """
    planned = [_Planned(s, "fact", -1, "", "fact")]
    for i, b in enumerate(s.beliefs):
        if with_free:
            planned.append(_Planned(s, "belief_free", i, b.accessibility, b.question_type))
        planned.append(_Planned(s, "belief_choice", i, b.accessibility, b.question_type + ":multiple-choice"))
    for family in FAMILIES:
        lq, bins = s.lists(family), s.binaries(family)
        list_tag, yn_tags = lq.accessibility, [b.accessibility for b in bins]
        if context == "full":  # upstream re-tags the full context's list and yes/no questions
            list_tag = "inaccessible" if lq.wrong else lq.accessibility
            yn_tag = "inaccessible" if not bins or any(b.gold != "yes" for b in bins) else bins[0].accessibility
            yn_tags = [yn_tag] * len(bins)
        planned.append(_Planned(s, f"{family}_list", -1, list_tag, lq.question_type))
        for j, (bq, tag) in enumerate(zip(bins, yn_tags, strict=True)):
            if context == "short" and bq.gold == "no:long":
                continue  # upstream drops these in the short setting: the character is not in the context
            planned.append(_Planned(s, f"{family}_yn", j, tag, bq.question_type))
    return planned


def build_samples(sets: Sequence[FantomSet], context: str, aggregation: str, *, with_free: bool,
                  benchmark: str = "fantom") -> list[Sample[FantomExtra]]:
    """Every question of `sets` in one context, as samples with the old item ids, marks and facets."""
    planned = [p for s in sets for p in _plan(s, context, with_free)]
    sizes: Counter[tuple[str, str]] = Counter()
    for p in planned:
        if p.qtype != "fact":
            sizes[(unit_of(p.s, aggregation), p.accessibility)] += 1
    conversations: dict[str, tuple[Conversation, tuple[str, ...]]] = {}
    out = []
    for p in planned:
        s = p.s
        if s.set_id not in conversations:
            short, full = Conversation.parse(s.short_context), Conversation.parse(s.full_context)
            conversations[s.set_id] = (short if context == "short" else full, set_characters(s, (full, short)))
        conv, characters = conversations[s.set_id]
        unit = unit_of(s, aggregation)
        out.append(_sample(p, context, conv, characters, unit, sizes[(unit, p.accessibility)] if p.qtype != "fact" else 0,
                           benchmark))
    return out


def _sample(p: _Planned, context: str, conv: Conversation, characters: tuple[str, ...], unit: str, unit_size: int,
            benchmark: str) -> Sample[FantomExtra]:
    s, qtype = p.s, p.qtype
    family = FAMILY[qtype]
    base: dict[str, Any] = {
        "context": context, "set_id": s.set_id, "qtype": qtype, "index": p.index, "accessibility": p.accessibility,
        "joining_speaker": s.joining_speaker, "fact_question": s.fact_question,
        "fact_answer": s.fact_answer, "unit": unit, "unit_size": unit_size,
    }
    qid = f"{context}-{s.set_id}-{qtype}"
    choices: tuple[Choice, ...] = ()
    character = ""
    tom_type = ""
    gold: str | tuple[str, ...]
    if qtype == "fact":
        question, gold = s.fact_question, s.fact_answer
    elif qtype in ("belief_free", "belief_choice"):
        b = s.beliefs[p.index]
        qid += f"-{p.index + 1}"
        question, tom_type, character = b.question, b.tom_type, b.character
        base.update(belief_wrong=b.wrong)
        if qtype == "belief_choice":
            a, bb, gold = choice_options(b)
            choices = (Choice("a", a), Choice("b", bb))
        else:
            gold = b.correct
    elif qtype.endswith("_list"):
        lq = s.lists(family)
        question, gold = lq.question, tuple(lq.correct)
        base.update(list_correct=tuple(lq.correct), list_wrong=tuple(lq.wrong))
    else:
        bq = s.binaries(family)[p.index]
        qid += f"-{slug(bq.character) or p.index}"
        question, gold, character = bq.question, bq.gold.split(":")[0], bq.character.lower()
        lq = s.lists(family)  # who knows, per the set's list: what a counterfactual about another character needs
        base.update(binary_gold=bq.gold, binary_character=bq.character, list_correct=tuple(lq.correct),
                    list_wrong=tuple(lq.wrong))
    order = tom_type.split(":")[0].replace("-", "_") if tom_type else ""
    cyclicity = tom_type.split(":")[1] if tom_type.count(":") == 1 and tom_type.split(":")[1] in ("cyclic", "acyclic") else ""
    facets = {
        "context": context, "set": s.set_id, "part": s.part_id, "conversation": s.conversation_id,
        "family": family, "format": FORMAT[qtype], "question_type": qtype,
        "accessibility": p.accessibility or "n/a", "upstream_type": p.upstream, "tom_type": tom_type,
        "tom_order": order, "cyclicity": cyclicity, "character": character, "unit": unit,
    }
    marks = [benchmark, context, family, FORMAT[qtype]]
    if order in ("first_order", "second_order"):
        marks.append(order)
    if cyclicity:
        marks.append(cyclicity)
    if p.accessibility:
        marks.append(p.accessibility)
    return Sample(
        benchmark=benchmark, id=qid, context=conv, question=question, choices=choices, gold=gold,
        characters=characters, facets=facets, marks=tuple(marks), extra=FantomExtra(tom_type=tom_type, **base),
        source=f"fantom/{DATA_FILE} set {s.set_id} ({context} context)",
    )
