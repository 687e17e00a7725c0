"""Records of one run as they reach this process, the judging of derived results, and the report. In one process records
come from this process's items; on the xdist controller from the workers' reports (`user_properties`) and
`workeroutput`. Both fill the same `RunRecords`, so one piece of code builds the summary and the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.derived import Derived, evaluate
from pytest_tom.evals import Registry
from pytest_tom.framework.base import Benchmark
from pytest_tom.record import DerivedRecord, Outcome, Record


@dataclass(frozen=True, slots=True)
class DerivedSpec:
    """A derived item as collected: what the controller needs to judge and report it."""

    suite: str
    nodeid: str
    location: tuple[str, int | None, str]
    derived: Derived
    selected: bool
    """Every member question is selected (-m/-k/sampling kept them all)."""

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "nodeid": self.nodeid, "location": list(self.location),
                "derived": self.derived.to_dict(), "selected": self.selected}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DerivedSpec:
        path, line, domain = d["location"]
        return cls(suite=str(d["suite"]), nodeid=str(d["nodeid"]), location=(str(path), line, str(domain)),
                   derived=Derived.from_dict(d["derived"]), selected=bool(d["selected"]))


class RunRecords:
    """Every record, derived record and piece of run metadata this process has seen."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.items: dict[str, Record] = {}
        """By node id."""
        self.derived: dict[str, DerivedRecord] = {}
        """By node id."""
        self.suites: dict[str, dict[str, Any]] = {}
        """Each suite's `describe()`, by suite id."""
        self.engine: list[dict[str, Any]] = []
        self.responses: dict[str, dict[str, Any]] = {}
        self.model: dict[str, Any] | None = None
        self._benchmarks: dict[str, Benchmark[Any] | None] = {}

    def add_local(self, record: Record | DerivedRecord) -> None:
        """Store a record (one produced in this process needs no parsing from its report)."""
        if isinstance(record, DerivedRecord):
            self.derived[record.nodeid] = record
        else:
            self.items[record.nodeid] = record

    def add_properties(self, nodeid: str, properties: Sequence[tuple[str, object]]) -> None:
        """Store the records a test report carries (those of other processes: xdist workers)."""
        if nodeid in self.items or nodeid in self.derived:
            return
        for name, value in properties:
            if name == RECORD_PROPERTY and isinstance(value, dict):
                self.add_local(DerivedRecord.from_dict(value) if value.get("kind") == "group" else Record.from_dict(value))

    def add_engine(self, stats: Mapping[str, Any] | None, responses: Mapping[str, Mapping[str, Any]] | None,
                   model: Mapping[str, Any] | None) -> None:
        if stats:
            self.engine.append(dict(stats))
        if responses:
            self.responses.update({k: dict(v) for k, v in responses.items()})
        if model and (self.model is None or "fingerprint" in model):
            self.model = dict(model)

    def benchmark(self, suite: str) -> Benchmark[Any] | None:
        """The suite's benchmark instance, rebuilt from its recorded settings (None if that fails)."""
        if suite not in self._benchmarks:
            info = self.suites.get(suite) or {}
            try:
                self._benchmarks[suite] = self.registry.get(str(info["name"]))(info.get("settings", {}))
            except Exception:  # noqa: BLE001 - a report must still be written if a benchmark breaks
                self._benchmarks[suite] = None
        return self._benchmarks[suite]

    def judge(self, spec: DerivedSpec, members: Mapping[str, Record], benchmark: Benchmark[Any]) -> DerivedRecord:
        """Judge one derived result over its member records (by sample id)."""
        return evaluate(spec.derived, members, benchmark.rule(spec.derived.kind), selected=spec.selected,
                        suite=spec.suite, nodeid=spec.nodeid)

    def errors(self) -> int:
        return sum(1 for r in self.items.values() if r.outcome is Outcome.ERROR)

    def report(self) -> dict[str, Any] | None:
        if not self.items and not self.derived:
            return None
        from pytest_tom.output.report import build_report

        return build_report(list(self.items.values()), list(self.derived.values()), self.suites, self.benchmark,
                            model=self.model or {}, engine=merge_engine_stats(self.engine), responses=self.responses)


def merge_engine_stats(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Sum the engine statistics of several processes (xdist workers)."""
    out: dict[str, Any] = {}
    for part in parts:
        _add_into(out, part)
    if "model_seconds" in out:
        out["model_seconds"] = round(out["model_seconds"], 3)
    return out


def _add_into(out: dict[str, Any], part: Mapping[str, Any]) -> None:
    """Add `part`'s numbers into `out`, nested mappings (usage, scoring models) key by key."""
    for key, value in part.items():
        if isinstance(value, Mapping):
            _add_into(out.setdefault(key, {}), value)
        elif isinstance(value, (int, float)):
            out[key] = out.get(key, 0) + value
