"""OpenToM's release (`data/opentom_data/*.json`, one object keyed by narrative) read into checked samples, one per question.

A sample is one (narrative, file, index) of the seven question files, whose lists come in a fixed order (spec §2.3). It is
scored against names bound by name from `plot_info`: the official code unpacks it positionally, which binds the wrong
fields (spec §5.1). A copy not declared `partial` must be the pinned files whole (checksums, 596 narratives, 13,708 questions).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomDataError
from pytest_tom.framework import fields
from pytest_tom.framework.checks import check_sha256, read_json
from pytest_tom.framework.pinned import PinnedFiles
from pytest_tom.framework.release import partial_advice
from pytest_tom.sample import KEEP, Sample, Story

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
"""sha256 of each file by its path in a copy, at REVISION (`paper_era/`: at PAPER_REVISION), as SOURCE.md lists them."""
PINS = PinnedFiles(
    "opentom", "OpenToM", f"{DIR}/meta_data.json", {"": REVISION, "paper_era/": PAPER_REVISION}, SHA256,
    f"Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding opentom/{DIR}/ from github.com/seacowx/OpenToM "
    f"(commit {REVISION[:12]}; paper-era fine-location files under opentom/{PAPER_DIR}/ from {PAPER_REVISION[:12]}), "
    "or pass --tom-download to fetch both, checked against their sha256s.")
STEMS = {"location_cg_fo": ("loc_coarse", "fo", 2), "location_cg_so": ("loc_coarse", "so", 2),
         "location_fg_fo": ("loc_fine", "fo", 4), "location_fg_so": ("loc_fine", "so", 2),
         "multihop_fo": ("multihop", "fo", 6), "multihop_so": ("multihop", "so", 6), "attitude": ("attitude", "", 1)}
"""File stem -> (genre, order, questions per narrative) (spec §2.1)."""
PLOT = ("mover", "eoi", "original_place", "move_to_place", "observer")
ADVICE = partial_advice("opentom")


@dataclass(frozen=True, slots=True)
class OpenToMExtra:
    """The question's place in the release and the plot names it is read against (bound by name, spec §5.1)."""

    key: str = field(metadata=KEEP)
    stem: str = field(metadata=KEEP)
    index: int
    kind: str
    """loc_coarse, loc_fine, fullness, accessibility or attitude: the prompt template and the answer rule."""
    mover: str
    observer: str
    eoi: str
    original_place: str
    move_to_place: str
    answer: str
    """The release's answer text; the gold label is read from it by the official rule."""


OpenToMSample = Sample[OpenToMExtra]


def strip_det(s: str) -> str:
    """The official determiner strip: character prefixes, case-sensitive, `a` tested before `an` (spec §3.5)."""
    return (s[1:].strip() if s.startswith("a") else s[3:].strip() if s.startswith("the") else s).lower()


def gold(x: OpenToMExtra) -> int | None:
    """The official gold label of the release's answer; None where it names neither place (fine location)."""
    a = x.answer.lower()
    if x.kind == "loc_coarse":
        return 0 if "no" in a else 1 if "yes" in a else None
    if x.kind == "loc_fine":
        g = strip_det(x.answer)
        return 1 if g == strip_det(x.original_place) else 2 if g == strip_det(x.move_to_place) else None
    if x.kind == "fullness":
        return {"less full": 1, "more full": 2, "equally full": 3}.get(a)
    if x.kind == "accessibility":
        return {"more accessible": 1, "less accessible": 2}.get(a, 3)
    return {"positive": 1, "negative": 2}.get(a, 3)


def perspective(question: str, mover: str, observer: str) -> str:
    """The leading perspective character (`From X's perspective`, `As X,`): mover, observer or narrator (spec §3.8)."""
    lead = question.removeprefix("From ").removeprefix("As ")
    return next((role for role, name in (("mover", mover), ("observer", observer))
                 if any(lead.startswith(name + end) for end in ("'s ", "' ", ","))), "narrator")


def _find(folder: Path, rel: str) -> Path:
    """A release file, also under the old (`location_fg_fo.json`) and Hugging Face (`metadata_long.json`) names."""
    for name in (rel, rel.replace("_new.json", ".json"), rel.replace("meta_data_long", "metadata_long")):
        if (folder / name).is_file():
            return folder / name
    raise TomDataError("this OpenToM file is missing", path=folder / rel)


def load(folder: Path, *, release: str, long: bool, verified: bool, partial: bool) -> list[OpenToMSample]:
    """Every question as samples (long: the 100 OpenToM-L narratives), in file and list order; fine location by `release`."""
    fine = f"{DIR}/{{}}_new.json" if release == "2025" else f"{PAPER_DIR}/{{}}.json"
    rels = {stem: (fine if stem.startswith("location_fg") else f"{DIR}/{{}}.json").format(stem) for stem in STEMS}
    metas = [f"{DIR}/meta_data.json", *((f"{DIR}/meta_data_long.json",) if long else ())]
    found = {rel: _find(folder, rel) for rel in [*metas, *rels.values()]}
    meta: dict[str, Any] = read_json(found[metas[0]])
    narr: dict[str, Any] = read_json(found[metas[-1]]) if long else meta
    samples: list[OpenToMSample] = []
    for stem, rel in rels.items():
        lists: dict[str, Any] = read_json(path := found[rel])
        if not partial and list(lists) != list(meta):
            raise TomDataError(f"not the 596 narratives of meta_data.json in its order: {ADVICE}", path=path)
        for key, items in lists.items():
            if key not in narr and long:
                continue
            if key not in meta or not isinstance(items, list) or len(items) != STEMS[stem][2]:
                raise TomDataError(f"expected a list of {STEMS[stem][2]} questions of a narrative of meta_data.json",
                                   path=path, record=key)
            samples += [parse(meta[key], narr[key], key, stem, i, q, path, long) for i, q in enumerate(items)]
    if not (verified or partial):
        if len(samples) != (2_300 if long else 13_708):
            raise TomDataError(f"{len(samples)} questions, not the release's: {ADVICE}", path=folder)
        for rel, p in found.items():
            check_sha256(p, SHA256[rel], benchmark="opentom", given=False, partial=False)
    return samples


def parse(meta: Mapping[str, Any], narr: Mapping[str, Any], key: str, stem: str, index: int, rec: Any, path: Path,
          long: bool) -> OpenToMSample:
    """One question record as a sample, after the record checks of spec §6.1."""
    where = f"{key}[{index}]"
    plot = fields.obj(meta, "plot_info", path, key)
    names = {k: fields.text(plot, k, path, key, "plot_info") for k in PLOT}
    if not isinstance(rec, Mapping) or sorted(rec) != ["answer", "question", "type"]:
        raise TomDataError("expected the keys answer, question, type", path=path, record=where)
    question, answer = fields.text(rec, "question", path, where), fields.text(rec, "answer", path, where)
    if question.count("?") != 1 or not question.endswith("?"):
        raise TomDataError("expected one '?', at the end of the question", path=path, record=where, field="question")
    personality = fields.text(meta, "personality", path, key).rsplit(" ", 2)[-2]
    observed = meta.get("observed")
    if not isinstance(observed, bool):
        raise TomDataError(f"expected true or false, got {fields.shown(observed)}", path=path, record=key, field="observed")
    genre, order, _ = STEMS[stem]
    kind = ("fullness" if index < 4 else "accessibility") if genre == "multihop" else genre  # 4, then 2 (spec §2.3)
    who, seen = perspective(question, names["mover"], names["observer"]), "witnessed" if observed else "unwitnessed"
    marks = ("opentom", kind if kind in ("fullness", "accessibility", "attitude") else "location",
             "psychological" if genre == "attitude" else "physical", who, seen, personality,
             *(("location_" + kind[4:],) if kind.startswith("loc_") else ()), *(("multihop",) if genre == "multihop" else ()),
             *((f"{'first' if order == 'fo' else 'second'}_order",) if order else ()), *(("long_narrative",) if long else ()))
    text = fields.text(narr, "long_narrative" if long else "narrative", path, key)
    extra = OpenToMExtra(key, stem, index, kind, names["mover"], names["observer"], names["eoi"],
                         names["original_place"], names["move_to_place"], answer)
    scorable = gold(extra) is not None
    return Sample(
        benchmark="opentom", id=f"{'long-' if long else ''}{key}-{stem}-{index}", context=Story(text), question=question,
        choices=(), gold=answer, characters=(names["mover"], names["observer"]),
        facets={"genre": kind, "cell": f"{genre}/{order}" if order else genre, "order": order or "none",
                "perspective": who, "observed": seen, "personality": personality, "narrative": key,
                "length": "long" if long else "normal", "scorable": "yes" if scorable else "no"},
        marks=marks, source=f"{path.name} {where}", extra=extra,
        defect="" if scorable else f"no scorable gold: the answer {answer!r} names neither place of plot_info")


def sample_official(keys: list[str], batches: int = 5, size: int = 50) -> list[list[tuple[str, list[int], list[int]]]]:
    """The official sample (spec §3.7): `random.seed(42)` shuffles of the keys cut into batches, and per narrative the
    two fullness indices dropped from `multihop_fo` then `multihop_so` by numpy's legacy generator seeded 42.
    """
    import numpy as np  # only here: importing the benchmark stays cheap

    rng, rs, order = random.Random(42), np.random.RandomState(42), list(keys)
    chunks: list[list[str]] = []
    while len(chunks) < batches:
        rng.shuffle(order)
        chunks += [order[i:i + size] for i in range(0, len(order) - size + 1, size)]

    def drop() -> list[int]:
        return sorted(int(i) for i in rs.choice([0, 1, 2, 3], 2, replace=False))

    return [[(k, drop(), drop()) for k in chunk] for chunk in chunks[:batches]]
