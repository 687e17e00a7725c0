"""BigToM (Gandhi et al., NeurIPS 2023): 200 procedurally written stories, each asked in 25 conditions. Modules: `data`
(the release CSV to the 25 condition files, checked), `prompts` (the eight official methods, verbatim), `scoring` (the
official substring rule, deterministic), `metrics`. Spec: docs/benchmarks/bigtom.md.
"""

from __future__ import annotations

from pytest_tom.evals.bigtom import data, scoring
from pytest_tom.evals.bigtom import metrics as _metrics
from pytest_tom.evals.bigtom.data import CONDITIONS, VARIABLES, BigToMExtra, BigToMSample
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program
from pytest_tom.framework.release import parse_sha256, release_options

__all__ = ["BigToM", "BigToMExtra", "BigToMSample"]


class BigToM(Benchmark[BigToMExtra]):
    name = "bigtom"
    description = ("BigToM: 200 stories x 25 conditions of forward belief, forward action and backward belief "
                   "inference, true/false belief and controls (Gandhi et al., NeurIPS 2023)")
    options = (
        BenchmarkOption("prompt", "0shot", "The official method: 0shot, 1shot, 0shot-cot or 1shot-cot (completion "
                        "1shot-cot sends no exemplar, as officially).", choices=("0shot", "1shot", "0shot-cot", "1shot-cot")),
        BenchmarkOption("format", "chat", "chat: the instruction as system message, the exemplar as user/assistant turns "
                        "(the authors' chat-model path); completion: one text with stop strings (their completion path; "
                        "pair with chat_template=none for a base model).", choices=("chat", "completion")),
        BenchmarkOption("conditions", "core", "core: the 24 conditions the authors' analysis reads; all: adds "
                        "1_percept_to_belief_true_belief with its released (aware-belief) key.", choices=("core", "all")),
        BenchmarkOption("extraction", "official", "official: the gold key first, anywhere in the answer; first: the "
                        "earlier of a) and b) (gold-independent).", choices=("official", "first")),
        BenchmarkOption("max_new_tokens", "0", "Tokens per call; 0: the official 25, 220 for chat CoT, 200 for the "
                        "completion CoT thought (its answer call: 30).", kind=int, bounds=(0, None)),
        *release_options(data.URL, f"{data.FILE} (github.com/cicl-stanford/procedural-evals-tom at {data.REVISION[:12]})",
                         f"sha256 of another bigtom.csv; empty: the pinned {data.PIN.sha256[:12]}...",
                         "partial or changed copy; by default a local copy must be the whole pinned release."),
    )
    facets = (
        Facet("variable", {v: f"BigToM {v.replace('_', ' ')} item." for v in (*VARIABLES, "percept_to_belief")},
              tables=((),), gate=True),
        Facet("condition", {**{c: f"BigToM {c.replace('_', ' ')} condition." for c in CONDITIONS}, "control":
                            "BigToM control condition (true or false control)."}, tables=((), ("variable",)), gate=True),
        Facet("init", {"initial_belief_shown": "BigToM item whose story states the initial belief (1_).",
                       "initial_belief_hidden": "BigToM item without the initial-belief sentence (0_)."}, gate=True),
        Facet("kind", {"pair": "BigToM derived item: the TB and FB (or two control) items of one story both correct."}),
        Facet("folder", gate=True),
        Facet("gold"),
        Facet("story", cluster=True, whole=True),
    )

    def load(self, source: DataSource) -> list[BigToMSample]:
        s = self.settings
        sha = parse_sha256(s["sha256"], "bigtom sha256") if s["sha256"] else ""
        folder, verified = data.PIN.release(s["source_url"], sha).locate(source)
        return data.load(folder / data.FILE, conditions=s["conditions"], sha256=sha, verified=verified, partial=s["partial"])

    def program(self, sample: BigToMSample) -> Program:
        return scoring.solve(sample, *(self.settings[k] for k in ("prompt", "format", "max_new_tokens", "extraction")))

    derived = staticmethod(_metrics.derived)
    metrics = staticmethod(_metrics.aggregate)
