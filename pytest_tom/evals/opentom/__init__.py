"""OpenToM (Xu et al., ACL 2024; docs/benchmarks/opentom.md): 13,708 location, multihop and attitude questions on 596
narratives, first and second order, scored by the official label mapping and macro-F1 (`scoring`). One checked sample
per (narrative, file, index) of the seven question files (fixed list order, spec §2.3), read against `plot_info` bound
by name, not positionally as the official code does, which binds the wrong fields (spec §5.1). A copy not declared
`partial` must be the pinned files whole (checksums, 596 narratives, 13,708 questions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.opentom import scoring
from pytest_tom.evals.opentom.scoring import OpenToMExtra, OpenToMSample
from pytest_tom.framework import fields, labels
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program, described
from pytest_tom.framework.checks import read_json
from pytest_tom.framework.decoding import decoding_options, generation
from pytest_tom.framework.metric import Metric
from pytest_tom.framework.pinned import PinnedFiles
from pytest_tom.framework.release import partial_advice
from pytest_tom.record import Record
from pytest_tom.sample import Sample, Story

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
        return scoring.solve(sample, s["prompt"], s["cot_layout"], s["system_prompt"] == "system", generation(s))

    gate_rates = staticmethod(scoring.gate_rates)

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return scoring.aggregate(records, self.settings["protocol"] == "paper")
