"""ToMValley (DynToM): dynamic, intradependent mental states in realistic social contexts.

Each context carries 15n-4 questions (71 for five scenarios) on the main character's belief, emotion,
intention and action. Officially all of a context's questions are one request answered as one JSON
object: the engine sends it once and 71 items read one reply. The compositional check asks whether
right answers to composite questions rest on right answers to their parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.evals.tomvalley import derived as _derived
from pytest_tom.evals.tomvalley import prompts, release, scoring
from pytest_tom.evals.tomvalley.data import ITEMS, SUBTYPE_NAMES, ToMValleyExtra, ToMValleySample
from pytest_tom.evals.tomvalley.metrics import SHOW, aggregate
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program
from pytest_tom.framework.metric import Metric, from_tree
from pytest_tom.framework.release import partial_option
from pytest_tom.record import MetricData, Record

__all__ = ["ToMValley", "ToMValleyExtra", "ToMValleySample"]

_MAX_SCENARIOS = 7

_SCENARIO_MARKS = {f"scenario{s}": f"ToMValley understanding or influence question about scenario {s}."
                   for s in range(1, _MAX_SCENARIOS + 1)}
_SPAN_MARKS = {
    **{f"span{s}_{s + 1}": f"ToMValley transformation-1/2 question over scenarios {s} -> {s + 1}."
       for s in range(1, _MAX_SCENARIOS)},
    **{f"span1_{n}": f"ToMValley transformation-3 question across all {n} scenarios." for n in range(4, _MAX_SCENARIOS + 1)},
}


class ToMValley(Benchmark[ToMValleyExtra]):
    name = "tomvalley"
    robustness = "pytest_tom.evals.tomvalley.strategies:PERTURBABLE"
    description = ("ToMValley (DynToM): 71 questions per social context on the main character's belief, emotion, "
                   "intention and action across five scenarios; the official protocol asks them in one request")
    options = (
        *prompts.OPTIONS,
        BenchmarkOption("contexts", "paper",
                        "Which contexts (trial numbers) to run: paper (50-1049, the 1,000 of the paper's main tables), "
                        "all (50-1210), or numbers and ranges such as 50-149,200. A local copy must hold every context "
                        "of a range it is asked for; of paper or all it may hold a run without gaps."),
        partial_option("partial copy (contexts missing from the selected set); by default a missing context is an "
                       "error naming it."),
        BenchmarkOption("source_url", release.OFFICIAL_BASE_URL,
                        "Where --tom-download fetches trial<N>/story.json and question_new.json (GAIR-NLP/DynToM at "
                        f"the pinned revision {release.OFFICIAL_REVISION[:12]}; the paper and all sets are checked "
                        "against a pinned tree digest)."),
    )
    facets = (
        Facet("question_type", {
            "tomvalley": "ToMValley (DynToM) questions and compositional checks.",
            "understanding": "ToMValley understanding question (what is the state in scenario s).",
            "influence": "ToMValley influence question (counted under its start state: belief, emotion or intention).",
            "transformation": "ToMValley transformation question (types 1, 2 and 3).",
        }, stratum=True, tables=((),)),
        Facet("item", {item: f"Question about the {item} of a character (ToMValley: the main character's {item})."
                       for item in ITEMS}, stratum=True, gate=True, tables=((), ("question_type",))),
        # a second row: gates list the item before the question type, strata and tables the other way round
        Facet("question_type", gate=True),
        Facet("subtype", {f"transformation{k}": f"ToMValley {SUBTYPE_NAMES[f'transformation{k}']}." for k in (1, 2, 3)},
              gate=True),
        Facet("scenario", _SCENARIO_MARKS, gate=True),
        Facet("span", _SPAN_MARKS, gate=True),
        # a question's social context: its questions share one dialogue (and, officially, one reply)
        Facet("context", {
            _derived.COMPOSITION: "ToMValley compositional check per context: no composite question answered right "
                                  "while a question it depends on was answered wrong (restoration error).",
        }, cluster=True),
    )
    rules = _derived.RULES

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        self.config = prompts.config_from(self.settings)
        self.label, self.wanted = release.parse_contexts(self.settings["contexts"])

    def load(self, source: DataSource) -> list[ToMValleySample]:
        folder = release.locate(source, self.label, self.wanted, self.settings["source_url"])
        return release.load_folder(folder, self.wanted, self.label, partial=self.settings["partial"])

    def program(self, sample: ToMValleySample) -> Program:
        return scoring.solve(sample, self.config)

    def derived(self, samples: Sequence[ToMValleySample]) -> list[Derived]:
        return _derived.compositions(samples, self.name)

    def gate_rates(self, records: Sequence[Record]) -> list[MetricData]:
        """The four compositional statuses as rates over composite questions (`restoration_error<=0.15`)."""
        by_id = {r.sample_id: r for r in records}
        got = _derived.record_statuses(records)
        ids = tuple(got)
        clusters = tuple(self.cluster(by_id[i].facets, i) for i in ids)
        return [MetricData(status, ids, tuple(1.0 if got[i] == status else 0.0 for i in ids), clusters,
                           f"share of composite questions (influence, transformation 1-2) with status {status}",
                           higher_is_better=status == "fully_correct")
                for status in _derived.STATUSES]

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return from_tree(aggregate(records, self.settings), SHOW)
