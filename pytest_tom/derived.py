"""Aggregate assertions as one kind of object: a definition over member records and a pure rule. ToMBench's coherent
stories, FANToM's ALL* sets, SimpleToM's chains and ToMValley's statuses are all a `Derived`: member sample ids, a
`kind` naming the rule, and JSON parameters. Judging is a pure function of the member records, so one process and the
pytest-xdist controller agree, and it never runs on a partial selection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict


@dataclass(frozen=True, slots=True)
class Derived:
    """The definition of one aggregate assertion; one pytest item."""

    benchmark: str
    id: str
    """Unique among the suite's derived results of the same kind; the item's id."""
    kind: str
    """Names the rule (`Benchmark.rules`) and is a mark, e.g. "coherence" or "all_star"."""
    members: tuple[str, ...]
    """Sample ids whose records the rule reads."""
    marks: tuple[str, ...] = ()
    facets: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    """JSON parameters of the rule (a character's name, a threshold...)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark, "id": self.id, "kind": self.kind, "members": list(self.members),
            "marks": list(self.marks), "facets": dict(self.facets), "params": dict(self.params),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Derived:
        return cls(
            benchmark=str(d["benchmark"]), id=str(d["id"]), kind=str(d["kind"]), members=tuple(d["members"]),
            marks=tuple(d.get("marks") or ()), facets=dict(d.get("facets") or {}), params=dict(d.get("params") or {}),
        )


@dataclass(frozen=True, slots=True)
class Judgement:
    """What a rule decided about complete, error-free members."""

    passed: bool
    message: str = ""
    """Why it failed, in terms a user can act on (shown as the item's failure)."""
    value: float | None = None
    failed_members: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)


Rule = Callable[[Derived, Sequence[Record]], Judgement]
"""Judges a derived result from its member records, given in `Derived.members` order."""


def all_pass(derived: Derived, members: Sequence[Record]) -> Judgement:
    """Every member question passes (a coherent story, a FANToM ALL set)."""
    broken = [r for r in members if not r.passed]
    if not broken:
        return Judgement(True)
    lines = [f"{derived.kind} group {derived.id}: {len(broken)} of {len(members)} questions failed"]
    for r in broken:
        why = r.details.get("why")
        lines.append(f"  {r.sample_id}: {r.outcome.value} (answer {r.parsed!r}, gold {r.gold!r})" + (f": {why}" if why else ""))
    return Judgement(False, "\n".join(lines), failed_members=tuple(r.sample_id for r in broken))


def evaluate(derived: Derived, records: Mapping[str, Record], rule: Rule, *, selected: bool = True, suite: str = "",
             nodeid: str = "") -> DerivedRecord:
    """Judge `derived` over `records` (by sample id). When not every member was `selected`, or one has no record, the
    assertion is skipped with the reason, so a partial selection never passes or fails a set, as is one over a member with
    no gold; a member's model error makes it ERROR: an outage is never a failed assertion.
    """

    def done(verdict: Verdict, message: str = "", **kw: Any) -> DerivedRecord:
        return DerivedRecord(
            benchmark=derived.benchmark, derived_id=derived.id, kind=derived.kind, verdict=verdict,
            members=derived.members, facets=derived.facets, message=message, suite=suite, nodeid=nodeid, **kw,
        )

    present = [records[m] for m in derived.members if m in records]
    if not selected or len(present) != len(derived.members):
        return done(Verdict.SKIPPED, partial_group(derived, len(present)))
    if unscored := [r.sample_id for r in present if r.outcome is Outcome.UNSCORED]:
        return done(Verdict.SKIPPED, f"{derived.id}: member {unscored[0]} has no scorable gold (a known release defect)")
    errors = [r for r in present if r.outcome is Outcome.ERROR]
    if errors:
        return done(Verdict.ERROR, f"{derived.id}: {len(errors)} member(s) hit model errors: {errors[0].message}",
                    failed_members=tuple(r.sample_id for r in errors))
    j = rule(derived, present)
    return done(Verdict.PASSED if j.passed else Verdict.FAILED, j.message, value=j.value,
                failed_members=j.failed_members, details=j.details)


def partial_group(derived: Derived, present: int) -> str:
    """Why an assertion is skipped when only `present` of its members are selected."""
    return (f"{derived.kind} group {derived.id}: only {present} of {len(derived.members)} questions are selected; "
            "a consistency assertion is never computed on a partial group")
