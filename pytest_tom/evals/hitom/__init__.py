"""Hi-ToM (He et al., Findings of EMNLP 2023): higher-order theory of mind, orders 0-4, with deception.

120 generated stories asked at ToM orders 0-4 ("where does A think B thinks ... the object is?") in vanilla (MC) and
chain-of-thought (CoT) prompting: 1,200 items of 15 options. Modules: `data` (release files to checked samples, the
prompt), `scoring` (answers to records), `metrics` (typed metrics, checks). Spec: docs/benchmarks/hitom.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.errors import TomConfigError
from pytest_tom.evals.hitom import data, scoring
from pytest_tom.evals.hitom import metrics as _metrics
from pytest_tom.evals.hitom.data import REVISION, SHA256, HiToMExtra, HiToMSample
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program
from pytest_tom.framework.metric import Metric
from pytest_tom.framework.release import parse_pins, partial_option
from pytest_tom.record import Record

__all__ = ["HiToM", "HiToMExtra", "HiToMSample"]


class HiToM(Benchmark[HiToMExtra]):
    name = "hitom"
    description = ("Hi-ToM: 1,200 higher-order ToM questions, orders 0-4, with and without deception, vanilla and "
                   "chain-of-thought prompts (He et al., Findings of EMNLP 2023)")
    options = (
        BenchmarkOption("prompt", "both", "Which official prompt files to ask: both (1,200 items), vanilla (the MC "
                        "files) or cot (the CoT files).", choices=("both", "vanilla", "cot")),
        BenchmarkOption("gold", "cot", "Answer key where the MC and CoT data files disagree (138 of 600 questions): "
                        "cot (the authors' hand-corrected key, for both styles; as their GPT-4 scoring), mc (the "
                        "generator's raw output) or own (each style its own folder's).", choices=("cot", "mc", "own")),
        BenchmarkOption("max_new_tokens", "0", "Token budget per answer; 0 means the authors' 2000.", kind=int),
        BenchmarkOption("max_gap", "0.05", "order_decline and deception_gap fail only when the gap is beyond this share"
                        " (0.05 = 5 points) with 95 percent confidence.", kind=float, bounds=(0, 1)),
        BenchmarkOption("sha256", "", "Digests for another revision: 'Hi-ToM_data=<sha256>,Hi-ToM_prompts=<sha256>' "
                        f"(sha256 of each tree's sorted sha256sum manifest); empty: revision {REVISION[:12]}."),
        partial_option("partial or changed copy; by default a local copy must be the whole pinned release."),
    )
    facets = (
        Facet("order", {f"order{k}": f"Hi-ToM question of ToM order {k}." for k in range(5)}, stratum=True,
              tables=((), ("style",)), gate=True),
        Facet("deception", {"deception": "Hi-ToM item of a Tell story: agents make public or private claims, "
                                         "possibly lies."}, stratum=True, tables=((), ("order",)), gate=True),
        Facet("length", {f"length{n}": f"Hi-ToM story of {n} chapter{'s' * (n > 1)}." for n in (1, 2, 3)},
              stratum=True, tables=((),), gate=True),
        Facet("style", {"vanilla": "Hi-ToM vanilla prompt (the MC files, the paper's VP).",
                        "cot": "Hi-ToM chain-of-thought prompt (the CoT files, the paper's CoTP)."},
              tables=((),), gate=True),
        Facet("story", cluster=True, whole=True),
        Facet("check", {_metrics.INVARIANTS: "Hi-ToM check: joint accuracy <= accuracy, never rising with the order.",
                        _metrics.DECLINE: "Hi-ToM check: order-4 accuracy is not above order-0 accuracy.",
                        _metrics.DECEPTION: "Hi-ToM check: at orders 1-4, deception does not raise accuracy."}),
    )
    rules = _metrics.RULES

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        self.pins = {**SHA256, **(parse_pins(self.settings["sha256"]) if self.settings["sha256"] else {})}
        if set(self.pins) != set(SHA256):
            raise TomConfigError(f"hitom sha256: expected Hi-ToM_data=... and/or Hi-ToM_prompts=..., got {self.pins}")

    def load(self, source: DataSource) -> list[HiToMSample]:
        s, (folder, _) = self.settings, data.release(self.pins).locate(source)
        return data.load(folder, prompt=s["prompt"], gold=s["gold"], pins=self.pins, partial=s["partial"])

    def program(self, sample: HiToMSample) -> Program:
        return scoring.solve(sample, self.settings["max_new_tokens"], self.settings["gold"])

    def derived(self, samples: Sequence[HiToMSample]) -> list[Derived]:
        return _metrics.checks(samples, self.settings["max_gap"])

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return _metrics.aggregate(records, self.settings["gold"])
