"""FANToM data: the official file's records, checked (naming file, record and field), and the samples they make.

Everything a prompt shows lives in a sample's generic fields (the conversation as speaker turns, the question, the
two belief options in the official order), so a renamed or permuted sample is asked as rewritten; `FantomExtra`
carries the rest. The question order, the dropped `no:long` questions of the short context and the full context's
re-tagged scenarios are upstream's.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomDataError
from pytest_tom.fetch import check_extracted, fetch_archive
from pytest_tom.framework import fields
from pytest_tom.framework.base import DataSource, slug
from pytest_tom.framework.checks import distinct_options, read_json
from pytest_tom.framework.release import Release, partial_advice
from pytest_tom.sample import Choice, Conversation, Sample

OFFICIAL_URL = "https://storage.googleapis.com/ai2-mosaic-public/projects/fantom/fantom.tar.gz"
OFFICIAL_SHA256 = "1d08dfa0ea474c7f83b9bc7e3a7b466eab25194043489dd618b4c5223e1253a4"
"""Published in the official repository's task/dataset_loader.py."""
DATA_FILE = "fantom_v1.json"
CHOICE_SEED = 99
"""eval_fantom.py: `RANDOM_SEED = 99; random.seed(RANDOM_SEED)` at import."""

CONTEXTS = ("short", "full")
EVALUATORS = {"2024": "1cae6fa", "2023": "ebd35eb"}
"""Official evaluator revisions (skywalker023/fantom commits): the current one first (the default), then the paper's."""
EVALUATOR_ALIASES = {"current": "2024", "paper": "2023"}
SCENARIOS = ("inaccessible", "accessible")
FAMILIES = ("answerability", "info_accessibility")
_QUESTION_TYPES = {  # question type: (family, answer format, the paper's label)
    "fact": ("fact", "free_response", "FactQ"),
    "belief_free": ("belief", "free_response", "BeliefQ[Dist.] (free response)"),
    "belief_choice": ("belief", "choice", "BeliefQ[Choice]"),
    "answerability_list": ("answerability", "list", "AnswerabilityQ[List]"),
    "answerability_yn": ("answerability", "yes_no", "AnswerabilityQ[Y/N]"),
    "info_accessibility_list": ("info_accessibility", "list", "InfoAccessQ[List]"),
    "info_accessibility_yn": ("info_accessibility", "yes_no", "InfoAccessQ[Y/N]"),
}
QUESTION_TYPES = tuple(_QUESTION_TYPES)
TOM_TYPES = tuple(t for t in QUESTION_TYPES if t != "fact")
AGGREGATIONS = ("set", "part", "conversation")  # each also names the facet holding a question's unit
FAMILY, FORMAT, LABEL = ({q: row[i] for q, row in _QUESTION_TYPES.items()} for i in range(3))


@dataclass(frozen=True, slots=True)
class BeliefQA:
    """One belief question of a set; asked twice, free-response and as a two-option choice."""

    question: str
    question_type: str
    tom_type: str
    correct: str  # PersonX-centric (the gold)
    wrong: str  # omniscient view (the distractor)
    accessibility: str
    character: str  # whose belief is asked, lower case, as upstream's character analysis reads it
    correct_last: bool  # official option order: the correct answer is option (b)


@dataclass(frozen=True, slots=True)
class ListQA:
    question: str
    question_type: str
    correct: tuple[str, ...]  # who knows (must all be named)
    wrong: tuple[str, ...]  # who does not (must not be named)
    accessibility: str


@dataclass(frozen=True, slots=True)
class BinaryQA:
    question: str
    question_type: str
    gold: str  # "yes", "no" or "no:long" (a character absent from the short context)
    accessibility: str
    character: str  # as written in the question


@dataclass(frozen=True, slots=True)
class FantomSet:
    """One question set of `fantom_v1.json`: a piece of information a character missed, and its questions."""

    set_id: str
    part_id: str
    conversation_id: str
    index: int  # 0-based position in the file
    short_context: str
    full_context: str
    joining_speaker: str
    fact_question: str
    fact_answer: str  # FULL FACT A
    beliefs: tuple[BeliefQA, ...]
    lists: Mapping[str, ListQA]  # by family (FAMILIES)
    binaries: Mapping[str, tuple[BinaryQA, ...]]
    source: str  # file and record, for messages


@dataclass(frozen=True, slots=True)
class FantomExtra:
    """What FANToM reads beyond the generic sample fields; plain strings, so `Sample.rename` rewrites them too."""

    context: str  # "short" or "full"
    set_id: str
    qtype: str  # one of QUESTION_TYPES
    index: int  # of the belief or yes/no question within its set; -1 otherwise
    accessibility: str  # the scenario as upstream scores it in this context ("" for the fact question)
    tom_type: str
    joining_speaker: str  # who missed part of the conversation (named in failure messages)
    fact_question: str
    fact_answer: str  # FULL FACT A: also the information shown with info-accessibility questions
    belief_wrong: str = ""  # the omniscient-view answer (the free-response distractor)
    list_correct: tuple[str, ...] = ()
    list_wrong: tuple[str, ...] = ()
    binary_gold: str = ""  # raw: "yes", "no" or "no:long"
    binary_character: str = ""
    unit: str = ""  # the aggregation unit (set, part or conversation id) of its set assertions
    unit_size: int = 0  # ToM questions in (context, unit, scenario): a unit is complete only with all of them
    # The 2024 evaluator counts a set in the control ALL*/ALL only if every ToM question of the set, in this context,
    # is tagged accessible. Fixed at load, so a -k selection that drops a set's inaccessible rows cannot make it look
    # fully accessible.
    set_all_accessible: bool = False

    @property
    def family(self) -> str:
        return FAMILY[self.qtype]


ACCESS = "missed_info_accessibility"


def belief_character(question: str) -> str:
    """Upstream's reading of whose belief is asked: the word after the first "does " ("" when none)."""
    after = question.lower().partition("does ")[2].split()
    return after[0] if after else ""


def binary_character(question: str) -> str:
    """The character a yes/no question asks about: upstream's `removeprefix("Does ").split(" know")[0]`."""
    return question.removeprefix("Does ").split(" know")[0]


def _read(path: Path) -> list[Any]:
    raw = read_json(path)
    if isinstance(raw, Mapping):
        # pandas.read_json also accepts the column-oriented layout {"set_id": {"0": ...}, ...}
        try:
            keys = sorted(next(iter(raw.values())), key=int)
            raw = [{col: raw[col][k] for col in raw} for k in keys]
        except (StopIteration, TypeError, ValueError, KeyError):
            raise TomDataError("expected a list of question sets", path=path) from None
    if not isinstance(raw, list):
        raise TomDataError(f"expected a list of question sets, got {type(raw).__name__}", path=path)
    if not raw:
        raise TomDataError("no question sets: the file holds an empty list", path=path)
    return raw


def _beliefs(rec: Mapping[str, Any], path: Path, record: str, rng: random.Random) -> tuple[BeliefQA, ...]:
    beliefs = []
    for w, b in fields.objects(rec, "beliefQAs", path, record):
        qtype = b.get("question_type")
        if qtype not in ("tom:belief:inaccessible", "tom:belief:accessible"):
            raise TomDataError(f"unknown belief question_type {qtype!r}", path=path, record=record,
                               field=f"{w}.question_type")
        question, correct, wrong, tom_type = (fields.text(b, k, path, record, w)
                                              for k in ("question", "correct_answer", "wrong_answer", "tom_type"))
        distinct_options((correct, wrong), 0, path, record, (f"{w}.correct_answer", f"{w}.wrong_answer"))
        # correct_last is drawn for every belief question in file order, exactly as upstream's flattening loop does
        beliefs.append(BeliefQA(question, str(qtype), tom_type, correct, wrong,
                                fields.one_of(b, ACCESS, path, record, SCENARIOS, w), belief_character(question),
                                rng.choice([True, False])))
    return tuple(beliefs)


def _binaries(rec: Mapping[str, Any], family: str, bin_key: str, path: Path, record: str) -> tuple[BinaryQA, ...]:
    items = []
    chars: set[str] = set()
    for w, bq in fields.objects(rec, bin_key, path, record):
        question = fields.text(bq, "question", path, record, w)
        if not question.startswith("Does ") or " know" not in question:
            raise TomDataError(f"expected 'Does <character> know ...?', got {question!r}", path=path,
                               record=record, field=f"{w}.question")
        gold = bq.get("correct_answer")
        if gold not in ("yes", "no", "no:long"):
            raise TomDataError(f"expected 'yes', 'no' or 'no:long', got {gold!r}", path=path, record=record,
                               field=f"{w}.correct_answer")
        character = binary_character(question)
        if character.lower() in chars:
            raise TomDataError(f"two yes/no questions about {character}", path=path, record=record, field=w)
        chars.add(character.lower())
        items.append(BinaryQA(question, str(bq.get("question_type") or f"tom:{family}:binary"), str(gold),
                              fields.one_of(bq, ACCESS, path, record, SCENARIOS, w), character))
    return tuple(items)


def load_sets(path: Path, *, seed: int = CHOICE_SEED) -> list[FantomSet]:
    """Parse and check `fantom_v1.json`; option orders are drawn as upstream draws them."""
    raw = _read(path)
    rng = random.Random(seed)
    out: list[FantomSet] = []
    seen: set[str] = set()
    for i, rec in enumerate(raw):
        where = f"#{i}"
        if not isinstance(rec, Mapping):
            raise TomDataError("expected an object", path=path, record=where)
        set_id = rec.get("set_id")
        if not isinstance(set_id, str) or len(set_id.split("-")) < 3 or not all(set_id.split("-")):
            raise TomDataError(f"expected an id like '0-0-0' (conversation-part-set), got {set_id!r}", path=path,
                               record=where, field="set_id")
        record = f"#{i} (set_id {set_id})"
        if set_id in seen:
            raise TomDataError("duplicate set_id", path=path, record=record, field="set_id")
        seen.add(set_id)
        fact = fields.obj(rec, "factQA", path, record)
        beliefs = _beliefs(rec, path, record, rng)
        lists = {}
        binaries: dict[str, tuple[BinaryQA, ...]] = {}
        for family, list_key, bin_key in (
            ("answerability", "answerabilityQA_list", "answerabilityQAs_binary"),
            ("info_accessibility", "infoAccessibilityQA_list", "infoAccessibilityQAs_binary"),
        ):
            lq = fields.obj(rec, list_key, path, record)
            lists[family] = ListQA(fields.text(lq, "question", path, record, list_key),
                                   str(lq.get("question_type") or f"tom:{family}:list"),
                                   fields.names(lq, "correct_answer", path, record, list_key),
                                   fields.names(lq, "wrong_answer", path, record, list_key),
                                   fields.one_of(lq, ACCESS, path, record, SCENARIOS, list_key))
            both = sorted(set(lists[family].correct) & set(lists[family].wrong))
            if both:
                raise TomDataError(f"{', '.join(both)} both knows and does not know (in correct_answer and "
                                   "wrong_answer): the gold is ambiguous", path=path, record=record,
                                   field=f"{list_key}.wrong_answer")
            binaries[family] = _binaries(rec, family, bin_key, path, record)
        conversation_id, part = set_id.split("-")[0], "-".join(set_id.split("-")[:2])
        out.append(FantomSet(
            set_id=set_id, part_id=part, conversation_id=conversation_id, index=i,
            short_context=fields.text(rec, "short_context", path, record).strip(),
            full_context=fields.text(rec, "full_context", path, record).strip(),
            joining_speaker=str(rec.get("joining_speaker") or ""),
            fact_question=fields.text(fact, "question", path, record, "factQA"),
            fact_answer=fields.text(fact, "correct_answer", path, record, "factQA"),
            beliefs=beliefs, lists=lists, binaries=binaries,
            source=f"{path.name} record {record}",
        ))
    return out


PARTIAL_ADVICE = partial_advice("fantom", "restore the official file", copy="trimmed")


def check_whole(sets: Sequence[FantomSet], path: Path) -> None:
    """Fail unless every set has beliefs, yes/no questions and who knows: an emptied list would pass over fewer.

    The number of sets is free (the official count is pinned by the archive's checksum), each set must be whole.
    """
    for s in sets:
        parts: tuple[tuple[str, str, tuple[object, ...]], ...] = (
            ("beliefQAs", "no belief questions", s.beliefs),
            ("answerabilityQAs_binary", "no yes/no answerability questions", s.binaries["answerability"]),
            ("infoAccessibilityQAs_binary", "no yes/no info-accessibility questions", s.binaries["info_accessibility"]),
            ("answerabilityQA_list.correct_answer", "no character who knows", s.lists["answerability"].correct),
            ("infoAccessibilityQA_list.correct_answer", "no character who knows", s.lists["info_accessibility"].correct),
        )
        for field, what, questions in parts:
            if not questions:
                raise TomDataError(
                    f"{what}: every set of the release has some, and without them the set's assertions would pass "
                    f"over fewer questions; {PARTIAL_ADVICE}", path=path, record=f"#{s.index} (set_id {s.set_id})",
                    field=field)


def data_file(source: DataSource, url: str, sha256: str) -> tuple[Path, bool]:
    """The local `fantom_v1.json` (data folder, then the re-checked cache, then a download), and whether verified."""
    folder, verified = Release(
        "fantom", ("fantom", ""), lambda c: (c / DATA_FILE).is_file(), sha256[:16], lambda c: (c / DATA_FILE).is_file(),
        lambda c: check_extracted(c, DATA_FILE, sha256), lambda c: fetch_archive(url, sha256, DATA_FILE, c),
        f"Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding fantom/{DATA_FILE}, or pass --tom-download to "
        f"fetch the official archive (sha256 {sha256[:12]}...). FANToM is for evaluation only, never for training.",
        label="FANToM", file=DATA_FILE).locate(source)
    return folder / DATA_FILE, verified


def set_characters(s: FantomSet, conversations: Sequence[Conversation]) -> tuple[str, ...]:
    """Every name a consistent rename must replace: speakers, the list questions' names, the yes/no characters."""
    speakers = [n for conv in conversations for n in conv.speakers]
    asked = [n for f in FAMILIES for n in (*s.lists[f].correct, *s.lists[f].wrong, *(b.character for b in s.binaries[f]))]
    return tuple(dict.fromkeys([*speakers, *asked]))


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
        lq, bins = s.lists[family], s.binaries[family]
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
    sizes = Counter((getattr(p.s, f"{aggregation}_id"), p.accessibility) for p in planned if p.qtype != "fact")
    # Tags after the no:long drop and the full-context re-tag; a choice belief carries its free one's tag, so
    # embedder=none never changes which sets are whole.
    mixed = {p.s.set_id for p in planned if p.qtype != "fact" and p.accessibility != "accessible"}
    conversations: dict[str, tuple[Conversation, tuple[str, ...]]] = {}
    out = []
    for p in planned:
        s = p.s
        if s.set_id not in conversations:
            short, full = Conversation.parse(s.short_context), Conversation.parse(s.full_context)
            conversations[s.set_id] = (short if context == "short" else full, set_characters(s, (full, short)))
        conv, characters = conversations[s.set_id]
        unit = getattr(s, f"{aggregation}_id")  # set_id, part_id or conversation_id
        out.append(_sample(p, context, conv, characters, unit, sizes[(unit, p.accessibility)] if p.qtype != "fact" else 0,
                           benchmark, s.set_id not in mixed))
    return out


def _sample(p: _Planned, context: str, conv: Conversation, characters: tuple[str, ...], unit: str, unit_size: int,
            benchmark: str, all_accessible: bool) -> Sample[FantomExtra]:
    s, qtype = p.s, p.qtype
    family = FAMILY[qtype]
    base: dict[str, Any] = {
        "context": context, "set_id": s.set_id, "qtype": qtype, "index": p.index, "accessibility": p.accessibility,
        "joining_speaker": s.joining_speaker, "fact_question": s.fact_question,
        "fact_answer": s.fact_answer, "unit": unit, "unit_size": unit_size, "set_all_accessible": all_accessible,
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
            first, second, gold = (b.wrong, b.correct, "b") if b.correct_last else (b.correct, b.wrong, "a")
            choices = (Choice("a", first), Choice("b", second))
        else:
            gold = b.correct
    elif qtype.endswith("_list"):
        lq = s.lists[family]
        question, gold = lq.question, tuple(lq.correct)
        base.update(list_correct=tuple(lq.correct), list_wrong=tuple(lq.wrong))
    else:
        bq = s.binaries[family][p.index]
        qid += f"-{slug(bq.character) or p.index}"
        question, gold, character = bq.question, bq.gold.split(":")[0], bq.character.lower()
        lq = s.lists[family]  # who knows, per the set's list: what a counterfactual about another character needs
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
    wanted = (order if order in ("first_order", "second_order") else "", cyclicity, p.accessibility)
    marks = (benchmark, context, family, FORMAT[qtype], *filter(None, wanted))
    return Sample(
        benchmark=benchmark, id=qid, context=conv, question=question, choices=choices, gold=gold,
        characters=characters, facets=facets, marks=marks, extra=FantomExtra(tom_type=tom_type, **base),
        source=f"fantom/{DATA_FILE} set {s.set_id} ({context} context)",
    )
