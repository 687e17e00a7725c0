"""The gateable metrics of a suite: named per-unit values with the cluster each unit belongs to. A clustered interval
needs each unit's value and story, and a paired comparison matches units by id, so every metric is the list of its units
(questions, or aggregate assertions), never a rate. Names are stable: `<metric>` within a suite, `<suite>.<metric>`
across suites: `accuracy`, `<facet>.<value>` for the gate facets (`ability.faux_pas`), `unparseable` and `errors`, and
one rate per aggregate kind (`coherence`, `all_star`...).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_tom import robustness
from pytest_tom.framework.base import Benchmark, slug
from pytest_tom.framework.metric import Metric
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.record import MetricData as MetricData  # re-exported: it lives with the other typed results


@dataclass(frozen=True)
class SuiteView:
    """One suite's records as the gates see them (in one process or on the xdist controller)."""

    sid: str
    name: str
    """What gate rules call the suite: its name in the test module, the benchmark for --tom-benchmark."""
    benchmark: Benchmark[Any]
    info: dict[str, Any]
    records: list[Record]
    derived: list[DerivedRecord]

    def label(self, metric: str) -> str:
        """The full metric name, `<suite name>.<metric>` (`tombench.ability.faux_pas`)."""
        return f"{self.name}.{metric}"

    def settings(self) -> dict[str, Any]:
        """The suite's rendered settings (what a published row's protocol is matched against)."""
        return dict(self.info.get("settings") or {})

    def reported(self) -> dict[str, Metric]:
        """The benchmark's reported metrics (its paper tables) by dotted key, which `ref:` thresholds compare; none when
        nothing ran or they cannot be computed (the summary says why).
        """
        try:
            return {m.name: m for m in self.benchmark.metrics(self.records)} if self.records else {}
        except Exception:  # noqa: BLE001 - a broken metric fails its gates ("no such metric"), not the whole gate run
            return {}

    def metrics(self) -> dict[str, MetricData]:
        out = gate_metrics(self.records, self.derived, facets=self.benchmark.gate_facets, cluster=self.benchmark.cluster,
                           derived_facets=self.benchmark.derived_gate_facets)
        out.update({m.name: m for m in self.benchmark.gate_rates(self.records)})
        return out


def gate_metrics(records: Sequence[Record], derived: Sequence[DerivedRecord] = (), *, facets: Sequence[str] = (),
                 cluster: Callable[[Mapping[str, str], str], str] | None = None,
                 derived_facets: Sequence[str] = ()) -> dict[str, MetricData]:
    """Every gateable metric of one suite's records, by name within the suite. `facets` get per-value metrics of the
    questions, `derived_facets` per-value metrics of each derived kind whose results carry them (`<kind>.<facet>.<value>`);
    `cluster(facets, unit_id)` names a unit's story (default: each unit its own). Unparseable answers count as wrong, as
    the papers count them; errors are not answers and only enter the `errors` rate; questions without a gold enter none.
    """
    cluster = cluster or (lambda _facets, uid: uid)
    out: dict[str, MetricData] = {}

    def add(name: str, units: Iterable[tuple[str, float, str]], description: str, higher: bool = True) -> None:
        rows = list(units)
        out[name] = MetricData(name, tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows),
                               description, higher)

    records = [r for r in records if r.outcome is not Outcome.UNSCORED]  # no gold: in no metric, as officially
    scored = [r for r in records if r.scored]

    def units(rs: Iterable[Record], outcome: Outcome = Outcome.CORRECT) -> list[tuple[str, float, str]]:
        return [(r.sample_id, 1.0 if r.outcome is outcome else 0.0, cluster(r.facets, r.sample_id)) for r in rs]

    add("accuracy", units(scored), "share of answered questions right (unparseable counts as wrong)")
    for facet in facets:
        for value in sorted({r.facets[facet] for r in scored if r.facets.get(facet)}):
            add(f"{facet}.{slug(value)}", units(r for r in scored if r.facets.get(facet) == value),
                f"share of answered questions right with {facet} = {value!r}")
    add("unparseable", units(scored, Outcome.UNPARSEABLE), "share of answers the parser could not read", higher=False)
    add("errors", units(records, Outcome.ERROR), "share of questions the model failed to answer (errors)", higher=False)
    judged = [d for d in derived if d.verdict in (Verdict.PASSED, Verdict.FAILED)]

    def held(ds: Iterable[DerivedRecord]) -> list[tuple[str, float, str]]:
        return [(d.derived_id, 1.0 if d.passed else 0.0, cluster(d.facets, d.derived_id)) for d in ds]

    for kind in sorted({d.kind for d in judged}):
        of_kind = [d for d in judged if d.kind == kind]
        add(kind, held(of_kind), f"share of {kind} assertions that hold (judged ones: complete groups without model errors)")
        for facet in derived_facets:
            for value in sorted({d.facets[facet] for d in of_kind if d.facets.get(facet)}):
                add(f"{kind}.{facet}.{slug(value)}", held(d for d in of_kind if d.facets.get(facet) == value),
                    f"share of {kind} assertions that hold with {facet} = {value!r}")
    for name, (rows, description, higher) in robustness.units(derived, cluster).items():
        add(name, rows, description, higher)
    return out


def match(pattern: str, names: Iterable[str]) -> list[str]:
    """Metric names a rule's pattern selects (`*` and `?` as in shell globs), in sorted order."""
    return sorted(n for n in names if fnmatch.fnmatchcase(n, pattern))
