"""OpenToM (Xu et al., ACL 2024; docs/benchmarks/opentom.md): 13,708 location, multihop and attitude questions on 596
narratives, first and second order, asked and scored as the official code does, in one module read top to bottom. Data:
one checked sample per (narrative, file, index) of the seven question files (list order, spec §2.3), read against
`plot_info` by name, not positionally as the official code does, which binds the wrong fields (§5.1); a copy not
declared `partial` must be the pinned files whole. Prompts: vanilla, CoT, Self-Ask, SimToM. Scoring: the official
label integers, -1 unparseable ("corrupted", dropped by the official metrics, the outcome `unparseable` here), a
fine-location tie (3) wrong, a gold of None (one narrator item, §3.5) unscored. Metrics: `evaluate.py`'s per cell
(`framework.labels`; multihop pools fullness and accessibility, which share integer labels), then the §6 diagnostics.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.framework import fields, labels
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program, described
from pytest_tom.framework.checks import read_json
from pytest_tom.framework.decoding import decoding_options, generation
from pytest_tom.framework.metric import Metric
from pytest_tom.framework.pinned import PinnedFiles
from pytest_tom.framework.release import partial_advice
from pytest_tom.metrics import groups
from pytest_tom.record import MetricData, Outcome, Record, failure
from pytest_tom.request import GenerationSettings, Message, Request
from pytest_tom.sample import KEEP, Sample, Story

__all__ = ["OpenToM", "OpenToMExtra", "OpenToMSample"]

REVISION = "3f22b66276b2d7ca5fe573c28c79cc0d077aafc5"
PAPER_REVISION = "130286857434d7249f87f7ac3b311e29c17b11ab"
URL = "https://raw.githubusercontent.com/seacowx/OpenToM/"
DIR, PAPER_DIR = "data/opentom_data", "paper_era/data/opentom_data"
SHA256 = {
    f"{DIR}/attitude.json": "8c1d0cdd68d60ea6534700ae3d67436fb9a5b6c9cfab84c0d70185c9222e4047",
    f"{DIR}/location_cg_fo.json": "4486b3a7dcc029c3e2c05a242d9e6f2e8175a08590253c4ebecc228fe4b394da",
    f"{DIR}/location_cg_so.json": "ef3a711096b660a3a23bf9103d1a2b9babf9b57ed516f233d46f65fd8079f2b3",
    f"{DIR}/location_fg_fo_new.json": "957b153a8dd55aa1495a82bda59397004bbf83c87c1039bd917ee6d02f7f29c2",
    f"{DIR}/location_fg_so_new.json": "cddb5437c2697be99ce3642240b96af513f69ee06be7fe975b5ce02f8bfcfeb8",
    f"{DIR}/meta_data.json": "db3a568059c665fcf924f67af00d77bcce8a6a587b034fa0476b954a66e259c8",
    f"{DIR}/meta_data_long.json": "6008fed8ef8f195a20a239356425278d50a7e2a54cab6b4685730c2140f199d4",
    f"{DIR}/multihop_fo.json": "fcd394c8aa4d080d0d5a8298dd62504dea7435935db7c7887792cd623f6dc121",
    f"{DIR}/multihop_so.json": "f7fdc822dc5cc806b07735013a89a2e1879484010661523defbdcd8ef13d9561",
    f"{PAPER_DIR}/location_fg_fo.json": "ffa81c75d465133c10304457234d828db150fcb5d87579d45461a6523f5a7de9",
    f"{PAPER_DIR}/location_fg_so.json": "8e721d5d0b4423a408b38dc5eb24d7a667be64692d7ee8e51e1522b9a321920a",
}
PINS = PinnedFiles("opentom", "OpenToM", f"{DIR}/meta_data.json", {"": REVISION, "paper_era/": PAPER_REVISION}, SHA256,
                   "github.com/seacowx/OpenToM", (("_new.json", ".json"), ("meta_data_long", "metadata_long")))
"""Each file's sha256 at REVISION (`paper_era/`: PAPER_REVISION), as SOURCE.md lists them; old and Hugging Face names."""
STEMS = {"location_cg_fo": ("loc_coarse", "fo", 2), "location_cg_so": ("loc_coarse", "so", 2),
         "location_fg_fo": ("loc_fine", "fo", 4), "location_fg_so": ("loc_fine", "so", 2),
         "multihop_fo": ("multihop", "fo", 6), "multihop_so": ("multihop", "so", 6), "attitude": ("attitude", "", 1)}
"""File stem -> (genre, order, questions per narrative) (spec §2.1)."""
PLOT = ("mover", "eoi", "original_place", "move_to_place", "observer")
MARK = "OpenToM {} question."
ADVICE = partial_advice("opentom")


@dataclass(frozen=True, slots=True)
class OpenToMExtra:
    """The question's place in the release and the places its answers are read against (bound by name, spec §5.1)."""

    key: str = field(metadata=KEEP)
    stem: str = field(metadata=KEEP)
    index: int
    kind: str
    """loc_coarse, loc_fine, fullness, accessibility or attitude: the prompt template and the answer rule."""
    original_place: str
    move_to_place: str


OpenToMSample = Sample[OpenToMExtra]


def read_release(folder: Path, release: str, long: bool, verified: bool, partial: bool) -> list[OpenToMSample]:
    """Every question as samples (long: the 100 OpenToM-L narratives), in file and list order; fine location by `release`."""
    fine = f"{DIR}/{{}}_new.json" if release == "2025" else f"{PAPER_DIR}/{{}}.json"
    rels = {stem: (fine if stem.startswith("location_fg") else f"{DIR}/{{}}.json").format(stem) for stem in STEMS}
    metas = [f"{DIR}/meta_data.json", *((f"{DIR}/meta_data_long.json",) if long else ())]
    found = {rel: PINS.find(folder, rel) for rel in [*metas, *rels.values()]}
    meta: dict[str, Any] = read_json(found[metas[0]])
    narr: dict[str, Any] = read_json(found[metas[-1]]) if long else meta
    samples: list[OpenToMSample] = []
    for stem, rel in rels.items():
        lists: dict[str, Any] = read_json(path := found[rel])
        if not partial and list(lists) != list(meta):
            raise TomDataError(f"not the 596 narratives of meta_data.json in its order: {ADVICE}", path=path)
        for key, items in lists.items():  # every list checked; with `long`, only the long narratives' kept
            if key not in meta or not isinstance(items, list) or len(items) != STEMS[stem][2]:
                raise TomDataError(f"expected a list of {STEMS[stem][2]} questions of a narrative of meta_data.json",
                                   path=path, record=key)
            samples += [parse(meta[key], narr[key], key, stem, i, q, path, long) for i, q in enumerate(items) if key in narr]
    if not (verified or partial):
        if len(samples) != (2_300 if long else 13_708):
            raise TomDataError(f"{len(samples)} questions, not the release's: {ADVICE}", path=folder)
        PINS.check(found)
    return samples


def parse(meta: Mapping[str, Any], narr: Mapping[str, Any], key: str, stem: str, index: int, rec: Any, path: Path,
          long: bool) -> OpenToMSample:
    """One question record as a sample, after the record checks of spec §6.1."""
    where = f"{key}[{index}]"
    plot = fields.obj(meta, "plot_info", path, key)
    names = {k: fields.text(plot, k, path, key, "plot_info") for k in PLOT}
    rec = fields.keys(rec, ("answer", "question", "type"), path, where)
    question, answer = fields.text(rec, "question", path, where), fields.text(rec, "answer", path, where)
    if question.count("?") != 1 or not question.endswith("?"):
        raise TomDataError("expected one '?', at the end of the question", path=path, record=where, field="question")
    personality = fields.text(meta, "personality", path, key).rsplit(" ", 2)[-2]
    seen = "witnessed" if fields.flag(meta, "observed", path, key) else "unwitnessed"
    genre, order, _ = STEMS[stem]
    kind = ("fullness" if index < 4 else "accessibility") if genre == "multihop" else genre  # 4, then 2 (spec §2.3)
    lead = question.removeprefix("From ").removeprefix("As ")
    who = next((role for role in ("mover", "observer")  # the leading perspective character (`From X's`, `As X,`; §3.8)
                if any(lead.startswith(names[role] + end) for end in ("'s ", "' ", ","))), "narrator")
    marks = ("opentom", kind if kind in ("fullness", "accessibility", "attitude") else "location",
             "psychological" if genre == "attitude" else "physical", who, seen, personality,
             *(("location_" + kind[4:],) if kind.startswith("loc_") else ()), *(("multihop",) if genre == "multihop" else ()),
             *((f"{'first' if order == 'fo' else 'second'}_order",) if order else ()), *(("long_narrative",) if long else ()))
    text = fields.text(narr, "long_narrative" if long else "narrative", path, key)
    extra = OpenToMExtra(key, stem, index, kind, names["original_place"], names["move_to_place"])
    return Sample(
        benchmark="opentom", id=f"{'long-' if long else ''}{key}-{stem}-{index}", context=Story(text), question=question,
        choices=(), gold=answer, characters=(names["mover"], names["observer"]),
        facets={"genre": kind, "cell": f"{genre}/{order}" if order else genre, "order": order or "none", "perspective": who,
                "observed": seen, "personality": personality, "narrative": key, "length": "long" if long else "normal"},
        marks=marks, source=f"{path.name} {where}", extra=extra)


def sample_official(keys: list[str], batches: int = 5, size: int = 50) -> list[dict[str, dict[str, list[int]]]]:
    """The official sample (spec §3.7, `run_baseline.py`): the batches of a `random.seed(42)` shuffle of the keys in file
    order (`labels.chunks`: the 100 long narratives give 2 a shuffle, so a narrative is in two or three), and per
    narrative of each batch the two fullness indices dropped from `multihop_fo` then `multihop_so` by numpy's legacy
    generator seeded 42.
    """
    import numpy as np  # only here: importing the benchmark stays cheap

    rs, fullness = np.random.RandomState(42), ("multihop_fo", "multihop_so")
    return [{k: {stem: sorted(int(i) for i in rs.choice([0, 1, 2, 3], 2, replace=False)) for stem in fullness} for k in chunk}
            for chunk in labels.chunks(keys, batches, size, 42)]


SYSTEM = "You are an expert in modeling other's mental state."
HEAD = "Read and comprehend the following short story. Then, answer the question that follows.\n\n{narrative}\n\n"
TEMPLATES = {"loc_coarse": 'Question: {question} Answer the question with "Yes" or "No". Do not give any explanation.\n',
             "loc_fine": "Question: {question} Answer the question without any explanation.\n",
             "attitude": "Question: {question}\n"}
TEMPLATES["fullness"] = TEMPLATES["accessibility"] = TEMPLATES["loc_fine"]
ASK = {"fullness": ' Answer with "more full", "equally full", or "less full".',
       "accessibility": ' Answer with "more accessible", "equally accessible", or "less accessible".',
       "attitude": ', assuming that you observed the action? Answer with "positive", "neutral", or "negative".'}
POSTFIX = {"cot": "Reason step by step before answering. Write the answer in the end.",
           "selfask": "Break the original question into sub-questions. Explicitly state the follow-up questions, and the "
                      "answers to the follow-up questions. Aggregate the answers to the follow-up questions and write the "
                      'answer in the end as "Final Answer: [answer]".'}
SIMTOM = "The following is a sequence of events:\n\n{narrative}\n\nWhich events does {c} know about?\n"
SIMTOM_ASK = "Answer the following question without any explanation:\n"
LABELS = {kind: tuple(text.split('"')[1::2]) for kind, text in {**ASK, "loc_coarse": TEMPLATES["loc_coarse"]}.items()}
"""The answers each prompt offers, quoted in it (the `random` model picks one); fine location: the two places."""
WORDS = {"fullness": ((1, ("less full", "emptier", "more empty")), (2, ("more full", "fuller")), (3, ("equally full",))),
         "accessibility": ((1, ("more accessible",)), (2, ("less accessible",)), (3, ("equally accessible",)))}
"""The official multihop rule: the first label with a phrase in the answer (periods removed) wins."""


def question(x: OpenToMExtra, q: str) -> str:
    """The question as the template receives it: as stored (location) or with the genre's answer instruction."""
    return q.split("?")[0].strip() + ASK["attitude"] if x.kind == "attitude" else q + ASK.get(x.kind, "")


def prompt(s: OpenToMSample, method: str = "vanilla", layout: str = "official") -> str:
    """The user prompt of `method` (vanilla, cot, selfask): the template filled narrative first, then the question."""
    x, q = s.extra, question(s.extra, s.question)
    head = HEAD.replace("{narrative}", s.context.render())
    raw = (head + TEMPLATES[x.kind]).replace("{question}", q)
    post = " Answer without any explanation." if method == "vanilla" else " " + POSTFIX[method]  # attitude's end
    if method == "vanilla" or x.kind == "attitude":
        return raw.strip() + (post if x.kind == "attitude" else "")
    if x.kind == "loc_fine":  # official: the first '?' of the whole prompt, even one inside the story (spec §3.3)
        return (raw.split("?")[0] if layout == "official" else head + "Question: " + q[:-1]) + "?" + post
    return ".".join(raw.split(".")[:-2]) + "." + post


def simtom_character(s: OpenToMSample) -> str:
    """SimToM's character of interest (spec §3.3): the first-named protagonist (the sample's characters: the mover, the
    observer), the mover for accessibility, the observer for attitude, else "the narrator".
    """
    (mover, observer), q = s.characters, s.question
    if s.extra.kind == "attitude":
        return observer
    named, tokens = [n for n in (mover, observer) if n in q], q.replace("'s", "").split(" ")
    at = (lambda n: 0) if s.extra.kind == "accessibility" else lambda n: tokens.index(n) if n in tokens else len(tokens)
    return min(named, key=at) if named else "the narrator"  # min of equal keys: the first named, the mover


def solve(s: OpenToMSample, method: str, layout: str, system: bool, settings: GenerationSettings) -> Program:
    """One request (vanilla, cot, selfask), or SimToM's two stages (the first shared by every question of the character)."""
    x, q, preface = s.extra, question(s.extra, s.question), (Message("system", SYSTEM),) if system else ()
    ask = partial(Request, settings=settings, answer_labels=LABELS.get(x.kind, (x.original_place, x.move_to_place)))
    if method != "simtom":
        (r,) = yield [ask(messages=(*preface, Message("user", prompt(s, method, layout))))]
        return score(s, r.text, cot=method == "cot")
    coi, narrative = simtom_character(s), s.context.render()
    if coi == "the narrator":
        (r,) = yield [ask(messages=(Message("user", f"{narrative}\n\n{SIMTOM_ASK}{q}"),))]
        return score(s, r.text)
    first = Message("user", SIMTOM.replace("{narrative}", narrative).replace("{c}", coi))
    (know,) = yield [Request(messages=(*preface, first), settings=settings)]  # the engine records every request's key
    if know.text is None:
        return Record.of(s, Outcome.ERROR, responses=(None,), message=f"OpenToM {s.id}: SimToM's first stage got no answer")
    (r,) = yield [ask(messages=(*preface, first, Message("system", know.text), Message("user", SIMTOM_ASK + q)))]
    return score(s, r.text).replace(responses=(know.text, r.text))


def strip_det(s: str) -> str:
    """The official determiner strip: character prefixes, case-sensitive, `a` tested before `an` (spec §3.5)."""
    return (s[1:].strip() if s.startswith("a") else s[3:].strip() if s.startswith("the") else s).lower()


def gold(x: OpenToMExtra, answer: str) -> int | None:
    """The official gold label of the release's `answer` (the sample's gold); None where it names neither place."""
    a = answer.lower()
    if x.kind == "loc_coarse":
        return 0 if "no" in a else 1 if "yes" in a else None
    if x.kind == "loc_fine":
        g = strip_det(answer)
        return 1 if g == strip_det(x.original_place) else 2 if g == strip_det(x.move_to_place) else None
    if x.kind in WORDS:  # the official gold maps are each label's first phrase, the unknown 3 except for fullness
        return {words[0]: v for v, words in WORDS[x.kind]}.get(a, None if x.kind == "fullness" else 3)
    return {"positive": 1, "negative": 2}.get(a, 3)


def overlap(text: str, place: str) -> float:
    """Share of the place's words (duplicates counted) among the text's distinct words, normalised officially."""
    words = set(text.lower().replace("_", " ").replace("'s", "").replace(".", "").split())
    want = place.lower().replace("_", " ").replace("'s", "").split()
    return len(words & set(want)) / len(want) if want else 0.0


def label(x: OpenToMExtra, text: str) -> int:
    """The official label of an answer (already stripped): -1 unparseable."""
    t = text.lower()
    if x.kind == "loc_coarse":
        return 0 if "no" in t and "yes" not in t else 1 if "yes" in t and "no" not in t else -1
    if x.kind == "loc_fine":
        s1, s2 = overlap(text, strip_det(x.original_place)), overlap(text, strip_det(x.move_to_place))
        return 1 if s1 > s2 else 2 if s2 > s1 else 3
    if x.kind in WORDS:
        return next((v for v, ws in WORDS[x.kind] if any(w in t.replace(".", "") for w in ws)), -1)
    t = t.split("\n\n")[-1].split(":")[-1].split(".")[0].strip()
    found = [v for v, w in ((1, "positive"), (2, "negative"), (3, "neutral")) if w in t]
    return {"a": 1, "b": 3, "c": 2}.get(t, found[0] if len(found) == 1 else -1)


def score(s: OpenToMSample, text: str | None, *, cot: bool = False) -> Record:
    """The official label against the official gold: unparseable (-1) is not wrong; a tie (3) is. CoT's extra step reads
    the last line of a multi-line answer, else the text after the last `Therefore`.
    """
    read = (text or "").strip()
    said = (read.split("\n")[-1] if "\n" in read else read.split("Therefore")[-1]).strip() if cot else read
    x, g, got = s.extra, gold(s.extra, str(s.gold)), label(s.extra, said)
    outcome = (Outcome.UNSCORED if g is None else Outcome.UNPARSEABLE if got == -1 else
               Outcome.CORRECT if got == g else Outcome.INCORRECT)
    neither = x.kind == "loc_fine" and got == 3 and not overlap(said, strip_det(x.original_place))  # nor the other
    why = ("no scorable gold: the release's answer names neither place of plot_info" if g is None else
           "names neither place (an empty or unrelated answer): the official rule's tie label, a wrong answer" if neither else
           "ambiguous: equal overlap with both places" if got == 3 and x.kind == "loc_fine" else
           "unparseable by the official rule (dropped from the official metrics)" if got == -1 else "wrong label")
    message = failure(f"OpenToM {s.id} ({s.source})", outcome, s.question,
                      f"gold: {s.gold!r} (label {g}); answer: {read[:200]!r} (label {got})", why=why)
    return Record.of(s, outcome, parsed=None if got == -1 else got, gold=g, responses=(text,), message=message,
                     details={"label": got, **({"names_neither": True} if neither else {})})


TABLE = "Macro-F1 and accuracy per genre and order (official rule; unparseable answers dropped)"
DIAGNOSTICS = "Answers the official rule could not read, and self-consistency"
GAPS = "Macro-F1 gaps, report only (spec §6.3, §6.5; intervals: paired bootstrap over narratives)"
CELLS = ("loc_coarse/fo", "loc_coarse/so", "loc_fine/fo", "loc_fine/so", "multihop/fo", "multihop/so", "fullness/fo",
         "fullness/so", "accessibility/fo", "accessibility/so", "attitude")


def members(cell: str, records: Sequence[Record]) -> list[Record]:
    """A cell's answered records, unscored ones counted as `no_gold`: its `cell` facet (multihop pools) or genre/order."""
    return [r for r in records if r.answered and cell in (r.facets["cell"], f"{r.facets['genre']}/{r.facets['order']}")]


def stats(cell: str, recs: Sequence[Record]) -> dict[str, float | None]:
    """One cell's official numbers (spec §3.7) and pytest-tom's counts (`labels.scores`); the official multihop
    corrupted rate is the mean of its two parts' rates.
    """
    out = labels.scores(recs)
    if cell.startswith("multihop/"):
        parts = [labels.scores([r for r in recs if r.facets["genre"] == k]) for k in ("fullness", "accessibility")]
        out["corrupted_rate"] = statistics.fmean([p["corrupted_rate"] or 0.0 for p in parts if p["n"]])
    return out


def aggregate(records: Sequence[Record], batched: bool) -> list[Metric]:
    """Every cell's metrics, macro-F1 and accuracy printed, the rest in the JSON report; `batched`: per batch of each
    record's `batch` facet, then their mean and population std.
    """
    return [m for cell in CELLS if (recs := members(cell, records)) for m in labels.table(
        tuple(cell.split("/")), recs, partial(stats, cell), {"macro_f1": f"{cell} macro-F1", "accuracy": f"{cell} accuracy"},
        TABLE, "batch" if batched else "")] + diagnostics(records)


def twins(records: Sequence[Record]) -> dict[tuple[str, ...], bool | None]:
    """Whether each character's coarse and fine location answers agree (spec §6.2: a coarse Yes with a fine answer naming
    the original place, No with the move-to place), None where either is unreadable (-1 or a tie); keyed by order,
    narrative, perspective and length.
    """
    loc = groups([r for r in records if r.scored and r.facets["genre"].startswith("loc_")
                  and r.facets["perspective"] != "narrator"], ("order", "narrative", "perspective", "length"))
    pairs = {k: (p["loc_coarse"], p["loc_fine"]) for k, rs in loc.items()
             if len(p := {r.facets["genre"]: r.parsed for r in rs}) == 2}
    return {k: None if c is None or f not in (1, 2) else (c == 1) == (f == 1) for k, (c, f) in pairs.items()}


def diagnostics(records: Sequence[Record]) -> list[Metric]:
    """Fine answers naming neither place (counted), coarse-fine agreement, order and perspective gaps, narrator control (§6)."""
    out, agree = list[Metric](), twins(records)
    for order in ("fo", "so"):
        if fine := [r for r in records if r.scored and r.facets["genre"] == "loc_fine" and r.facets["order"] == order]:
            out.append(Metric(("names_neither", order), sum(bool(r.details.get("names_neither")) for r in fine),
                              f"fine location, {order}: answers naming neither place (the official tie label: wrong)",
                              "count", DIAGNOSTICS))
        if said := [a for k, a in agree.items() if k[0] == order]:
            read = [a for a in said if a is not None]
            out += [Metric(("coarse_fine_agreement", order), sum(read) / len(read) if read else None,
                           f"coarse-fine agreement, {order} (Yes = original place)", "rate", DIAGNOSTICS, n=len(read)),
                    Metric(("coarse_fine_agreement", f"{order}_unreadable"), len(said) - len(read), "", "count", DIAGNOSTICS)]
    for genre in ("loc_coarse", "loc_fine", "multihop"):
        out += labels.f1_gap(("order_gap", genre), f"{genre}: first minus second order", GAPS,
                             members(f"{genre}/fo", records), members(f"{genre}/so", records), "narrative")
    for cell in CELLS:  # the mover always knows where the entity is (§2.5)
        mover, observer = ([r for r in members(cell, records) if r.facets["perspective"] == p] for p in ("mover", "observer"))
        out += labels.f1_gap(("perspective_gap", *cell.split("/")), f"{cell}: mover minus observer", GAPS, mover, observer,
                             "narrative")
    if narrator := [r for r in records if r.scored and r.facets["perspective"] == "narrator"]:
        out.append(Metric(("narrator_control",), sum(r.passed for r in narrator) / len(narrator),
                          "narrator control: where the entity is at the beginning and the end", "rate", DIAGNOSTICS,
                          n=len(narrator)))
    return out


def gate_rates(records: Sequence[Record]) -> list[MetricData]:
    """Per cell, over its scorable questions in their narratives: `macro_f1.<cell>` (`labels.f1_gate`; gates count an
    unparseable answer wrong, a class of its own, unlike the official metrics which drop it) and `unparseable.<cell>`
    (§6.11, the official corrupted rate's gate). And `coarse_fine_agreement.fo|so`, a unit per character's twin
    questions, an unreadable pair counted as disagreeing.
    """
    agree, cells = twins(records), {c: rs for c in CELLS if (rs := [r for r in members(c, records) if r.scored])}
    return [gate(f"{name}.{cell.replace('/', '_')}", recs, "narrative", f"OpenToM {cell} {what}") for cell, recs in cells.items()
            for name, gate, what in (("macro_f1", labels.f1_gate, "macro-F1 (unparseable counted as a wrong class)"),
                                     ("unparseable", labels.unread_gate, "answers the official rule could not read"))] + [
        MetricData(f"coarse_fine_agreement.{order}", tuple("-".join(k) for k in keys), tuple(float(bool(agree[k])) for k in keys),
                   tuple(k[1] for k in keys), f"OpenToM {order}: a character's coarse and fine answers agree (unreadable: not)")
        for order in ("fo", "so") if (keys := [k for k in agree if k[0] == order])]


class OpenToM(Benchmark[OpenToMExtra]):
    name = "opentom"
    description = ("OpenToM: 13,708 location, multihop and attitude questions on 596 narratives, first and second "
                   "order, macro-F1 by the official label mapping (Xu et al., ACL 2024)")
    options = (
        BenchmarkOption("granularity", "both", "Which location files: coarse (yes/no), fine (where) or both.",
                        choices=("both", "coarse", "fine")),
        BenchmarkOption("narratives", "normal", "normal: the 596 narratives; long: the 100 OpenToM-L ones (`long_narrative`, "
                        "the same questions).", choices=("normal", "long")),
        BenchmarkOption("release", "2025", "Fine-location gold: 2025 (`*_new.json`, agrees with coarse) or 2024 (the paper-era "
                        "files the paper's numbers were computed on).", choices=("2025", "2024")),
        BenchmarkOption("protocol", "full", "full: every question once; paper: the official 5 x 50 batches (seed 42, 2 of 4 "
                        "fullness questions per list), metrics as mean and std over batches.", choices=("full", "paper")),
        BenchmarkOption("prompt", "vanilla", "Official prompting: vanilla, cot, simtom (two stages) or selfask.",
                        choices=("vanilla", "cot", "simtom", "selfask")),
        BenchmarkOption("cot_layout", "official", "official: fine-location CoT prompts cut at the prompt's first '?', even in "
                        "the story (73 lose their question); fixed: at the question's.", choices=("official", "fixed")),
        BenchmarkOption("system_prompt", "system", "system: the official system message; none: omitted (the official Mixtral "
                        "path).", choices=("system", "none")),
        *decoding_options(("1024", "the official 1024"), ("0", "the official 0"),
                          ("1", "the official API call used 0.95 at temperature 0"), "the local-model path"),
        *PINS.options(URL),
    )
    facets = (
        Facet("cell", {}, tables=((),), gate=True),
        Facet("genre", described(MARK, "location", "location_coarse", "location_fine", "multihop", "fullness", "accessibility",
                              "attitude", "physical", "psychological"), stratum=True, gate=True),
        Facet("order", described(MARK, "first_order", "second_order"), stratum=True, gate=True),
        Facet("perspective", described(MARK, "mover", "observer", "narrator"), tables=((), ("observed",)), gate=True),
        Facet("observed", described(MARK, "witnessed", "unwitnessed")),
        Facet("personality", described(MARK, "considerate", "inconsiderate", "negativistic")),
        Facet("length", described(MARK, "long_narrative")), Facet("batch"), Facet("narrative", cluster=True),
    )

    def load(self, source: DataSource) -> list[OpenToMSample]:
        s = self.settings
        folder, verified = PINS.release(s["source_url"]).locate(source)
        skip = {"both": "", "coarse": "loc_fine", "fine": "loc_coarse"}[s["granularity"]]
        samples = [x for x in read_release(folder, s["release"], s["narratives"] == "long", verified, s["partial"])
                   if x.extra.kind != skip]
        if s["protocol"] == "full":
            return samples
        if len(keys := list(dict.fromkeys(x.extra.key for x in samples))) < 50:  # not one of the paper's batches
            raise TomConfigError(f"opentom: protocol=paper draws batches of 50 narratives; the copy in {folder} has "
                                 f"{len(keys)} (use protocol=full on a partial copy)")
        drops = sample_official(keys)
        return labels.in_batches(samples, len(drops), lambda x, b: x.extra.key in drops[b] and  # a question: 1-3 batches
                                 x.extra.index not in drops[b][x.extra.key].get(x.extra.stem, ()))

    def program(self, sample: OpenToMSample) -> Program:
        s = self.settings
        return solve(sample, s["prompt"], s["cot_layout"], s["system_prompt"] == "system", generation(s))

    gate_rates = staticmethod(gate_rates)

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return aggregate(records, self.settings["protocol"] == "paper")
