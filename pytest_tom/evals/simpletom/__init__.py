"""SimpleToM (Gu et al., 2024): explicit ToM inference vs its application, as per-story chains.

1,147 stories, each with a mental-state, a behavior and a judgment question; models answer the first
well and the others badly, so each story is a `chain` assertion (mental state => behavior =>
judgment), next to the paper's prompts, interventions, metrics and a constant-answerer flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.evals.simpletom import data, prompts, release, scoring
from pytest_tom.evals.simpletom import derived as _derived
from pytest_tom.evals.simpletom.data import SimpleToMExtra, SimpleToMSample
from pytest_tom.evals.simpletom.metrics import SHOW, SHOW_ALL_COT, aggregate
from pytest_tom.framework.base import Benchmark, DataSource, Facet, Program
from pytest_tom.framework.metric import Metric, from_tree
from pytest_tom.framework.release import parse_pins, release_options
from pytest_tom.record import Record

__all__ = ["SimpleToM", "SimpleToMExtra", "SimpleToMSample"]


class SimpleToM(Benchmark[SimpleToMExtra]):
    name = "simpletom"
    robustness = "pytest_tom.evals.simpletom.strategies:PERTURBABLE"
    description = ("SimpleToM: 1,147 stories x (mental state, behavior, judgment), explicit vs applied theory of mind "
                   "(Gu et al., 2024)")
    options = (
        *prompts.OPTIONS,
        *release_options(
            data.OFFICIAL_BASE_URL, "<config>/test.jsonl (Hugging Face allenai/SimpleToM, pinned revision)",
            "Checksums of the four configs' test.jsonl ('mental-state-qa=<sha256>,...' or a sha256sum manifest "
            "file with '<sha256>  <config>/test.jsonl' lines); empty: the official checksums are not published, so "
            f"a copy is checked by structure (revision {data.OFFICIAL_REVISION[:12]}: 1,147 rows per config, three "
            "questions per story) and a download's sha256s are recorded then.",
            "partial copy (fewer rows, or configs missing apart from story-data); by default a local copy must be "
            "the whole release."),
    )
    facets = (
        Facet("question_type", {"simpletom": "SimpleToM questions and chains (Gu et al., 2024).",
                                **{t: f"SimpleToM {data.TYPE_NAMES[t]} question." for t in data.QUESTION_TYPES}},
              stratum=True, gate=True, tables=((), ("severity",), ("scenario",))),
        Facet("scenario", {key: f"SimpleToM scenario: {name} ({n} stories)." for key, (name, n) in data.SCENARIOS.items()},
              stratum=True, gate=True),
        Facet("severity", {data.severity_mark(level): f"SimpleToM severity {level} ({name} key information)."
                           for level, name in data.SEVERITIES.items()}, gate=True),
        # a question's story: its three questions (and its chain) share the story text
        Facet("story", {
            _derived.CHAIN: "SimpleToM chain: a story's mental state, behavior and judgment questions all pass; a "
                            "failure names the first broken link.",
            _derived.BALANCE: "SimpleToM constant-answerer check: a question type's answers are not (almost) all "
                              "one letter.",
        }, cluster=True),
    )
    rules = _derived.RULES

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        self.config = prompts.config_from(self.settings)
        self.settings["extra_options"] = ",".join(self.config.extra_options) or "none"  # one spelling per condition
        # Recorded as what the run did: only intervention=cot asks mental-state questions with CoT. So a baseline saved
        # before the setting existed (read as false) still matches every run that asks them as it did.
        self.settings["cot_mental_state"] = self.settings["cot_mental_state"] and self.settings["intervention"] == "cot"
        if "=" in self.settings["sha256"]:
            parse_pins(self.settings["sha256"])  # a 'config=sha256' list fails here; a manifest is read by load()

    def load(self, source: DataSource) -> list[SimpleToMSample]:
        pins = release.parse_setting(self.settings["sha256"])
        folder, verified = release.release(self.settings["source_url"], pins).locate(source)
        return release.load(folder, pins, verified=verified, partial=self.settings["partial"])

    def program(self, sample: SimpleToMSample) -> Program:
        return scoring.solve(sample, self.config)

    def derived(self, samples: Sequence[SimpleToMSample]) -> list[Derived]:
        return [*_derived.chains(samples, self.name), *_derived.balance_checks(samples, self.name)]

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        cot = self.config.intervention == "cot"
        asked_with = scoring.applied(self.config, prompts.MENTAL_STATE) if cot else None
        tree = aggregate(records, self.config.intervention, asked_with, self.config.extra_options)
        return from_tree(tree, SHOW_ALL_COT if asked_with == "cot" else SHOW)
