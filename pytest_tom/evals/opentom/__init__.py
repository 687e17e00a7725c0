"""OpenToM (Xu et al., ACL 2024): 13,708 questions on 596 narratives of two characters and one moved object: location
(coarse yes/no, fine "where"), multihop (a container's fullness, the object's accessibility) and the observer's attitude,
first and second order, scored by the official rule-based label mapping and macro-F1. Spec: docs/benchmarks/opentom.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pytest_tom.errors import TomConfigError
from pytest_tom.evals.opentom import data, scoring
from pytest_tom.evals.opentom import metrics as _metrics
from pytest_tom.evals.opentom.data import OpenToMExtra, OpenToMSample
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program
from pytest_tom.framework.metric import Metric
from pytest_tom.framework.release import partial_option
from pytest_tom.record import Record
from pytest_tom.request import GenerationSettings

__all__ = ["OpenToM", "OpenToMExtra", "OpenToMSample"]


def _marks(*names: str) -> dict[str, str]:
    return {n: f"OpenToM {n.replace('_', ' ')} question." for n in names}


class OpenToM(Benchmark[OpenToMExtra]):
    name = "opentom"
    description = ("OpenToM: 13,708 location, multihop and attitude questions on 596 narratives, first and second "
                   "order, macro-F1 by the official label mapping (Xu et al., ACL 2024)")
    options = (
        BenchmarkOption("granularity", "both", "Which location files: coarse (yes/no), fine (where) or both.",
                        choices=("both", "coarse", "fine")),
        BenchmarkOption("narratives", "normal", "normal: the 596 narratives; long: the 100 OpenToM-L ones "
                        "(`long_narrative`, the same questions).", choices=("normal", "long")),
        BenchmarkOption("release", "2025", "Fine-location gold: 2025 (`*_new.json`, agrees with coarse) or 2024 (the "
                        "paper-era files the paper's numbers were computed on).", choices=("2025", "2024")),
        BenchmarkOption("protocol", "full", "full: every question once; paper: the official 5 x 50 batches (seed 42, "
                        "2 of 4 fullness questions per list), metrics as mean and std over batches.",
                        choices=("full", "paper")),
        BenchmarkOption("prompt", "vanilla", "Official prompting: vanilla, cot, simtom (two stages) or selfask.",
                        choices=("vanilla", "cot", "simtom", "selfask")),
        BenchmarkOption("cot_layout", "official", "official: fine-location CoT prompts cut at the first '?' of the "
                        "prompt, even inside the story (73 prompts lose their question); fixed: at the question's.",
                        choices=("official", "fixed")),
        BenchmarkOption("system_prompt", "system", "system: the official system message; none: omitted (the "
                        "official Mixtral path).", choices=("system", "none")),
        BenchmarkOption("temperature", "0", "Sampling temperature; the official 0.", kind=float, bounds=(0, None)),
        BenchmarkOption("top_p", "1", "Nucleus sampling share (the official API call used 0.95 at temperature 0).",
                        kind=float, bounds=(0, 1.0001)),
        BenchmarkOption("max_new_tokens", "1024", "Token budget per answer; the official 1024.", kind=int,
                        bounds=(1, None)),
        BenchmarkOption("stop", "none", "none, or newline: stop at the first line break (the local-model path).",
                        choices=("none", "newline")),
        BenchmarkOption("source_url", data.URL, "Where --tom-download fetches the release (github.com/seacowx/OpenToM"
                        f" at {data.REVISION[:12]}, the paper-era files at {data.PAPER_REVISION[:12]})."),
        partial_option("partial or changed copy; by default a local copy must be the whole pinned release."),
    )
    facets = (
        Facet("cell", {}, tables=((),)),
        Facet("genre", _marks("location", "location_coarse", "location_fine", "multihop", "fullness", "accessibility",
                              "attitude", "physical", "psychological"), stratum=True, gate=True),
        Facet("order", _marks("first_order", "second_order"), stratum=True),
        Facet("perspective", _marks("mover", "observer", "narrator"), tables=((),)),
        Facet("observed", _marks("witnessed", "unwitnessed")),
        Facet("personality", _marks("considerate", "inconsiderate", "negativistic")),
        Facet("length", _marks("long_narrative")),
        Facet("batch"),
        Facet("narrative", cluster=True),
    )

    def load(self, source: DataSource) -> list[OpenToMSample]:
        s = self.settings
        if s["protocol"] == "paper" and s["narratives"] == "long":
            raise TomConfigError("opentom: protocol=paper is implemented for the normal narratives only")
        folder, verified = data.PINS.release(s["source_url"]).locate(source)
        samples = data.load(folder, release=s["release"], long=s["narratives"] == "long", verified=verified,
                            partial=s["partial"])
        skip = {"both": "", "coarse": "loc_fine", "fine": "loc_coarse"}[s["granularity"]]
        samples = [x for x in samples if x.extra.kind != skip]
        if s["protocol"] == "full":
            return samples
        chunks = data.sample_official(list(dict.fromkeys(x.extra.key for x in samples)))
        batch = {key: str(b) for b, chunk in enumerate(chunks, 1) for key, _, _ in chunk}
        drop = {(key, stem): ix for chunk in chunks for key, fo, so in chunk
                for stem, ix in (("multihop_fo", fo), ("multihop_so", so))}
        return [dataclasses.replace(x, facets={**x.facets, "batch": batch[x.extra.key]}) for x in samples
                if x.extra.key in batch and x.extra.index not in drop.get((x.extra.key, x.extra.stem), ())]

    def program(self, sample: OpenToMSample) -> Program:
        s = self.settings
        settings = GenerationSettings(max_new_tokens=s["max_new_tokens"], temperature=s["temperature"], top_p=s["top_p"],
                                      stop=("\n",) if s["stop"] == "newline" else ())
        return scoring.solve(sample, s["prompt"], s["cot_layout"], s["system_prompt"] == "system", settings)

    gate_rates = staticmethod(_metrics.gate_rates)

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return _metrics.aggregate(records, self.settings["protocol"] == "paper")
