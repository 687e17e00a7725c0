"""ToMATO (Shinoda et al., AAAI 2025): multiple-choice questions on the verbalised thoughts of role-playing LLMs.

Each question (first- or second-order mental state, false belief, the speaker's Big-Five levels as
marks) is an item decided by the paper's prompt and first-match extraction; metrics follow Tables 3,
5, 10 and 11; two assertions ask whether false beliefs and personality cost accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.evals.tomato import data, prompts, release, scoring
from pytest_tom.evals.tomato import derived as _derived
from pytest_tom.evals.tomato.data import ToMATOExtra, ToMATOSample
from pytest_tom.evals.tomato.metrics import SHOW, aggregate
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program
from pytest_tom.framework.metric import Metric, from_tree
from pytest_tom.framework.release import parse_pins, release_options
from pytest_tom.record import Record

__all__ = ["ToMATO", "ToMATOExtra", "ToMATOSample"]

FACTOR_NAMES = {
    "openness": ("open", "closed"), "conscientiousness": ("conscientious", "unconscientious"),
    "extraversion": ("extraversive", "introversive"), "agreeableness": ("agreeable", "disagreeable"),
    "neuroticism": ("neurotic", "stable"),
}
"""Each factor's adjectives for high and low in the paper's system prompt (section 4)."""


class ToMATO(Benchmark[ToMATOExtra]):
    name = "tomato"
    robustness = "pytest_tom.evals.tomato.strategies:PERTURBABLE"
    description = ("ToMATO: 5.4k questions on the thoughts of role-playing LLMs, 5 mental states x 2 orders, "
                   "false beliefs, 15 Big-Five patterns (Shinoda et al., AAAI 2025)")
    options = (
        *prompts.OPTIONS,
        BenchmarkOption("fb_max_gap", "0.05",
                        "false_belief_gap fails when non-false-belief second-order accuracy exceeds false-belief "
                        "accuracy by more than this (a share, 0.05 = 5 points), with 95 percent confidence.", kind=float,
                        bounds=(0, 1)),
        BenchmarkOption("personality_max_gap", "0.05",
                        "personality_robustness fails when a Big-Five factor's high-low accuracy gap exceeds this "
                        "(a share) in absolute terms, with 95 percent confidence.", kind=float,
                        bounds=(0, 1)),
        *release_options(data.OFFICIAL_BASE_URL, "dataset/tomato*.json (pinned revision, checked against the git blob ids "
                         "of its tree)", "Checksums for a mirror or another revision: 'tomato.json=<sha256>,...'; a "
                         "local copy is then checked against them instead of by Table 8's counts. Empty: revision "
                         f"{data.OFFICIAL_REVISION[:12]}.", "partial copy (fewer questions than Table 8 counts); by "
                         "default a local copy must be the whole file."),
    )
    facets = (
        # a row of its own, so that the order x false-belief table leads the summary as it always has
        Facet("order", tables=(("false_belief",),)),
        Facet("mental_state", {"tomato": "ToMATO questions and checks (Shinoda et al., AAAI 2025).",
                               **{s: f"Question about a {s} (ToMATO mental state; ToMBench uses the same category "
                                     "names)." for s in data.MENTAL_STATES}},
              stratum=True, gate=True, tables=(("order",), ("false_belief",))),
        Facet("order", {
            "first_order": "ToMATO first-order question: what the speaker thinks, will do, wants, feels or knows.",
            "second_order": "ToMATO second-order question: what the listener thinks the speaker thinks, wants...",
        }, stratum=True, gate=True),
        Facet("false_belief", {
            "false_belief": "ToMATO-FB: a second-order question where the listener (partly) misreads the speaker.",
        }, stratum=True, gate=True),
        *(Facet(f, {f"{f}_{lvl}": f"ToMATO question about a speaker with {lvl} {f} "
                                  f"({FACTOR_NAMES[f][data.LEVELS.index(lvl)]})." for lvl in data.LEVELS}, gate=True)
          for f in data.FACTOR_KEYS),
        # a question's conversation: one per (SOTOPIA combo, mental state) holds up to 14 questions
        Facet("conversation", {
            _derived.FB_GAP: "ToMATO check: false-belief questions are not answered worse than the other "
                             "second-order ones by more than fb_max_gap.",
            _derived.PERSONALITY: "ToMATO check: accuracy does not depend on any Big-Five factor of the asked "
                                  "speaker by more than personality_max_gap.",
        }, cluster=True),
    )
    rules = _derived.RULES

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        self.config = prompts.config_from(self.settings)
        self.pins = dict(data.OFFICIAL_SHA256)
        if self.settings["sha256"]:
            self.pins.update(parse_pins(self.settings["sha256"]))

    def load(self, source: DataSource) -> list[ToMATOSample]:
        subset = self.settings["subset"]
        path, verified = release.locate(source, subset, self.settings["source_url"], self.pins)
        return release.load(path, subset, self.pins, verified=verified, partial=self.settings["partial"])

    def program(self, sample: ToMATOSample) -> Program:
        return scoring.solve(sample, self.config)

    def derived(self, samples: Sequence[ToMATOSample]) -> list[Derived]:
        return [*_derived.false_belief_gaps(samples, self.settings["fb_max_gap"], self.name),
                *_derived.personality_checks(samples, self.settings["personality_max_gap"], self.name)]

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return from_tree(aggregate(records, self.label()), SHOW)

    def label(self) -> str:
        """How the suite asked, in a few words for the summary."""
        c = self.config
        words = [f"subset {self.settings['subset']}", c.prompt, f"system prompt {c.system_prompt}", c.scoring]
        if c.scoring == "generate":
            words.append(f"{c.extraction} extraction")
        if c.temperature > 0:
            words.append(f"T={c.temperature:g} top_p={c.top_p:g}")
        return ", ".join(words)
