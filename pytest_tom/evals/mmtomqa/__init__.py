"""MMToM-QA (Jin et al., ACL 2024): 600 two-option questions on a person's belief and goal, text-only version.

A person searches an apartment for an object; the text describes the scene and their actions, the question asks what
they believe (types 1.1-1.3) or want (2.1-2.4). Modules: `data` (the release file to checked samples), `shots` (the
official few-shot examples), `scoring` (the official prompt, first-character rule), `metrics`. Spec: docs/benchmarks/mmtomqa.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_tom.derived import Derived
from pytest_tom.evals.mmtomqa import data, scoring
from pytest_tom.evals.mmtomqa import metrics as _metrics
from pytest_tom.evals.mmtomqa.data import TERM, TYPES, MMToMExtra, MMToMSample
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program
from pytest_tom.framework.metric import Metric
from pytest_tom.framework.release import parse_sha256, release_options
from pytest_tom.record import Record

__all__ = ["MMToMExtra", "MMToMQA", "MMToMSample"]


class MMToMQA(Benchmark[MMToMExtra]):
    name = "mmtomqa"
    description = ("MMToM-QA: 600 belief and goal inference questions about a person searching an apartment, "
                   "text-only version (Jin et al., ACL 2024)")
    options = (
        BenchmarkOption("shots", "0", "Official few-shot examples before the question (--few_shot 0, 1 or 2).",
                        choices=("0", "1", "2")),
        BenchmarkOption("system", "helpful", "helpful: the official chat path's system message 'You are a helpful "
                        "assistant.'; none: the prompt alone as one user message.", choices=("helpful", "none")),
        BenchmarkOption("context", "full", "full: the scene, actions and question (the text-only version); question: "
                        "from '\\nQuestion:' on (the official video-only cut, a no-context ablation).",
                        choices=("full", "question")),
        BenchmarkOption("max_new_tokens", "5", "Token budget per answer; the official 5 (only the first character "
                        "counts). Another value is a deviation.", kind=int, bounds=(1, None)),
        BenchmarkOption("max_gap", "0.05", "true_false_belief_gap fails only when type 1.1 minus type 1.2 accuracy is "
                        "beyond this share (0.05 = 5 points) with 95 percent confidence.", kind=float, bounds=(0, 1)),
        *release_options(data.URL, f"{data.FILE} (github.com/chuanyangjin/MMToM-QA at {data.REVISION[:12]})",
                         f"sha256 of another {data.FILE}; empty: the pinned {data.SHA256[:12]}...",
                         "partial or changed copy; by default a local copy must be the whole pinned release."),
    )
    facets = (
        Facet("type", {m: f"MMToM-QA type {t} question ({m.replace('_', ' ')})." for t, (_, m, _) in TYPES.items()},
              stratum=True, tables=((),), gate=True),
        Facet("family", {"belief": "Belief inference question (MMToM-QA types 1.1-1.3).",
                         "goal": "Goal inference question (MMToM-QA types 2.1-2.4)."}, tables=((),), gate=True),
        Facet("term", {t: f"MMToM-QA {t.replace('_', '-')} belief question." for t in sorted(set(TERM.values()))}),
        Facet("episode", {_metrics.GAP: "MMToM-QA check: type 1.1 (true belief) minus type 1.2 (false belief) accuracy "
                                        "is within max_gap."}, cluster=True),
    )
    rules = _metrics.RULES

    def load(self, source: DataSource) -> list[MMToMSample]:
        s = self.settings
        sha = parse_sha256(s["sha256"], "mmtomqa sha256") if s["sha256"] else ""
        folder, verified = data.PIN.release(s["source_url"], sha).locate(source)
        return data.load(folder / data.FILE, sha256=sha, verified=verified, partial=s["partial"])

    def program(self, sample: MMToMSample) -> Program:
        s = self.settings
        return scoring.solve(sample, int(s["shots"]), s["system"], s["context"], s["max_new_tokens"])

    def derived(self, samples: Sequence[MMToMSample]) -> list[Derived]:
        return _metrics.checks(samples, self.settings["max_gap"])

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return _metrics.aggregate(records)
