"""Typed results: one `Record` per answered sample, one `DerivedRecord` per aggregate assertion.

Both are frozen and round-trip through JSON (`to_dict` / `from_dict`): across pytest-xdist,
in the JSON report, and back from a report to compare records by id.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class Outcome(str, enum.Enum):
    """What happened to one question. Unparseable and error are never "incorrect". Unscored is a question the release
    gives no gold to score against (OpenToM's one narrator question, a known defect): the answer is kept and reported,
    the item skipped, and it is in no metric, as the official evaluator drops it.
    """

    CORRECT = "correct"
    INCORRECT = "incorrect"
    UNPARSEABLE = "unparseable"
    ERROR = "error"
    UNSCORED = "unscored"

    @classmethod
    def judge(cls, parsed: Any, gold: Any) -> Outcome:
        """UNPARSEABLE when nothing was read (`parsed` is None), else CORRECT or INCORRECT against `gold`."""
        return cls.UNPARSEABLE if parsed is None else cls.CORRECT if parsed == gold else cls.INCORRECT


def failure(head: str, outcome: Outcome, question: str, *lines: str, why: str = "") -> str:
    """A record's message: empty when correct, else `<head>: <outcome>[: <why>]`, the question and the benchmark's
    `lines` (the gold, the answer and how it was read), so the failures of every benchmark read alike.
    """
    first = f"{head}: {outcome.value}" + (f": {why}" if why else "")
    return "" if outcome is Outcome.CORRECT else "\n".join([first, f"question: {question}", *lines])


@dataclass(frozen=True, slots=True)
class Record:
    """The scored result of one sample.

    `details` is the benchmark's own JSON-serialisable extension (tries, votes, similarities); what a
    generic consumer needs (outcome, parsed answer, gold, score) has a field of its own.
    """

    benchmark: str
    sample_id: str
    outcome: Outcome
    facets: Mapping[str, str]
    score: float | None = None
    """Per-item score where the metric is not plain accuracy (token F1...)."""
    parsed: Any = None
    gold: Any = None
    responses: tuple[str | None, ...] = ()
    request_keys: tuple[str, ...] = ()
    parse_rate: float = 1.0
    """Share of this item's model responses the parser could read."""
    details: Mapping[str, Any] = field(default_factory=dict)
    message: str = ""
    """Human-readable explanation shown when the item fails."""
    suite: str = ""
    """Id of the suite that produced it (set by the run layer)."""
    nodeid: str = ""
    prompt: str = ""
    """What the model was first asked, as text (the engine sets it): the HTML report shows it beside the answer."""

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.CORRECT

    @property
    def answered(self) -> bool:
        """The model answered (every outcome but error), whether or not there is a gold to judge the answer by."""
        return self.outcome is not Outcome.ERROR

    @property
    def scored(self) -> bool:
        """An answer was judged (correct, incorrect or unparseable): errors are not answers, unscored has no gold."""
        return self.outcome not in (Outcome.ERROR, Outcome.UNSCORED)

    @classmethod
    def of(cls, sample: Any, outcome: Outcome, **fields: Any) -> Record:
        """The record of `sample` (a `Sample`); `parse_rate` defaults to 0 for an unparseable answer, else 1."""
        fields.setdefault("parse_rate", 0.0 if outcome is Outcome.UNPARSEABLE else 1.0)
        return cls(benchmark=sample.benchmark, sample_id=sample.id, outcome=outcome, facets=dict(sample.facets), **fields)

    def replace(self, **changes: Any) -> Record:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark, "qid": self.sample_id, "outcome": self.outcome.value, "facets": dict(self.facets),
            "score": self.score, "parsed": self.parsed, "gold": self.gold, "responses": list(self.responses),
            "request_keys": list(self.request_keys), "parse_rate": self.parse_rate, "details": dict(self.details),
            "message": self.message,
        } | {k: v for k, v in (("suite", self.suite), ("nodeid", self.nodeid), ("prompt", self.prompt)) if v}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Record:
        return cls(
            benchmark=str(d["benchmark"]), sample_id=str(d["qid"]), outcome=Outcome(d["outcome"]), facets=_facets(d),
            score=d.get("score"), parsed=d.get("parsed"), gold=d.get("gold"), responses=tuple(d.get("responses") or ()),
            request_keys=tuple(d.get("request_keys") or ()), parse_rate=float(d.get("parse_rate", 1.0)),
            details=dict(d.get("details") or {}), message=str(d.get("message", "")), suite=str(d.get("suite", "")),
            nodeid=str(d.get("nodeid", "")), prompt=str(d.get("prompt", "")),
        )


class Verdict(str, enum.Enum):
    """The outcome of an aggregate assertion."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    """A member hit a model error: nothing can be asserted."""
    SKIPPED = "skipped"
    """Not every member was selected (-m/-k/sampling): never computed on a partial selection."""


@dataclass(frozen=True, slots=True)
class DerivedRecord:
    """The result of one aggregate assertion (a coherent story, a FANToM set, a per-character check...)."""

    benchmark: str
    derived_id: str
    kind: str
    verdict: Verdict
    members: tuple[str, ...]
    failed_members: tuple[str, ...] = ()
    facets: Mapping[str, str] = field(default_factory=dict)
    value: float | None = None
    """A rate or score the assertion computed, where it has one."""
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    suite: str = ""
    nodeid: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": "group", "suite": self.suite, "nodeid": self.nodeid, "benchmark": self.benchmark,
            "gid": self.derived_id, "group_kind": self.kind, "facets": dict(self.facets), "members": list(self.members),
            "failed_members": list(self.failed_members), "outcome": self.verdict.value,
        }
        if self.value is not None:
            d["value"] = self.value
        if self.details:
            d["details"] = dict(self.details)
        if self.message and self.verdict is not Verdict.PASSED:
            d["message"] = self.message
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DerivedRecord:
        return cls(
            benchmark=str(d["benchmark"]), derived_id=str(d["gid"]), kind=str(d["group_kind"]),
            verdict=Verdict(d["outcome"]), members=tuple(d.get("members") or ()),
            failed_members=tuple(d.get("failed_members") or ()), facets=_facets(d), value=d.get("value"),
            message=str(d.get("message", "")), details=dict(d.get("details") or {}), suite=str(d.get("suite", "")),
            nodeid=str(d.get("nodeid", "")),
        )


def _facets(d: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (d.get("facets") or {}).items()}


def index(records: Sequence[Record]) -> dict[str, Record]:
    """Records by sample id (the key baselines compare on)."""
    return {r.sample_id: r for r in records}


@dataclass(frozen=True)
class MetricData:
    """One metric's units: ids, values in [0, 1], and the cluster of each (for intervals and pairing)."""

    name: str
    ids: tuple[str, ...]
    values: tuple[float, ...]
    clusters: tuple[str, ...]
    description: str
    higher_is_better: bool = True
    labels: tuple[tuple[Any, Any], ...] = ()
    """(gold, prediction) of each unit where the metric is a macro-F1 over them (OpenToM's cells); `values` stay each
    unit's correctness, and a comparison bootstraps the F1 difference (`stats.compare_macro_f1`) instead of the mean's."""

    @property
    def n(self) -> int:
        return len(self.values)

    def rate(self) -> float | None:
        return sum(self.values) / len(self.values) if self.values else None
