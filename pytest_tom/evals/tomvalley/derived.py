"""ToMValley's compositional check (paper 5.3): does a right answer to a composite question rest on right parts?

An influence or transformation-1/2 question depends on understanding questions (the official `influence_mapping`);
with all of them right it is fully correct or a local error, otherwise a restoration error (right anyway: a
shortcut) or a full error (all dependencies count, not the official script's first two). One `composition` item
per context fails on any restoration error.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

from pytest_tom.derived import Derived, Judgement, Rule
from pytest_tom.evals.tomvalley.data import BENCHMARK, ToMValleySample
from pytest_tom.record import Outcome, Record

COMPOSITION = "composition"
STATUSES = ("fully_correct", "local_error", "restoration_error", "full_error")
_DEPENDS = {"belief->emotion": ("belief", "emotion"), "belief&emotion->intention": ("belief", "emotion", "intention"),
            "intention->action": ("intention", "action")}


def dependencies(units: Iterable[tuple[str, Mapping[str, str]]]) -> dict[str, tuple[str, ...]]:
    """Composite id -> the ids of the understanding questions it depends on, from each unit's (id, facets).

    Samples and records carry the same facets, so the map is built the same way at collection
    (for the items) and from a report's records (for the metrics).
    """
    rows = list(units)
    understanding = {(f["context"], f["item"], f.get("scenario", "")): uid for uid, f in rows
                     if f.get("subtype") == "understanding"}
    out: dict[str, tuple[str, ...]] = {}
    for uid, f in rows:
        context, subtype = f["context"], f.get("subtype")
        if subtype == "influence":
            wanted = [(context, item, f["scenario"]) for item in _DEPENDS[f["relation"]]]
        elif subtype in ("transformation1", "transformation2"):
            first = int(f["span"].split("-")[0])
            wanted = [(context, f["item"], str(first)), (context, f["item"], str(first + 1))]
        else:
            continue
        if all(w in understanding for w in wanted):
            out[uid] = tuple(understanding[w] for w in wanted)
    return out


def status(composite: bool, parts: Sequence[bool]) -> str:
    if all(parts):
        return "fully_correct" if composite else "local_error"
    return "restoration_error" if composite else "full_error"


def statuses(deps: Mapping[str, Sequence[str]], records: Mapping[str, Record]) -> dict[str, str]:
    """The status of each composite question whose record and dependencies' records exist and are not errors."""
    out = {}
    for cid, parts in deps.items():
        rs = [records.get(cid), *(records.get(p) for p in parts)]
        if any(r is None or r.outcome is Outcome.ERROR for r in rs):
            continue
        out[cid] = status(rs[0].passed, [r.passed for r in rs[1:]])  # type: ignore[union-attr]
    return out


def record_statuses(records: Sequence[Record]) -> dict[str, str]:
    """`statuses` of a suite's records, the dependencies read from their facets."""
    return statuses(dependencies((r.sample_id, r.facets) for r in records), {r.sample_id: r for r in records})


def compositions(samples: Sequence[ToMValleySample], benchmark: str = BENCHMARK) -> list[Derived]:
    """One `composition` item per context that has composite questions with their dependencies."""
    deps = dependencies((s.id, s.facets) for s in samples)
    by_context: dict[str, dict[str, tuple[str, ...]]] = defaultdict(dict)
    for s in samples:
        if s.id in deps:
            by_context[s.extra.context_id][s.id] = deps[s.id]
    return [Derived(benchmark=benchmark, id=context, kind=COMPOSITION,
                    members=tuple(dict.fromkeys(m for cid, parts in cdeps.items() for m in (cid, *parts))),
                    marks=(benchmark, COMPOSITION), facets={"context": context},
                    params={"dependencies": {k: list(v) for k, v in cdeps.items()}})
            for context, cdeps in by_context.items()]


def _short(record: Record) -> str:
    if record.outcome is Outcome.UNPARSEABLE:
        return "unparseable"
    return f"{record.parsed} ({'right' if record.passed else 'wrong, gold ' + str(record.gold)})"


def composition_rule(derived: Derived, members: Sequence[Record]) -> Judgement:
    records = {r.sample_id: r for r in members}
    deps: Mapping[str, Sequence[str]] = derived.params["dependencies"]
    got = statuses(deps, records)
    counts = Counter(got.values())
    details = {s: counts.get(s, 0) for s in STATUSES}
    n = len(got)
    rate = counts["restoration_error"] / n if n else 0.0
    shortcuts = [cid for cid, st in got.items() if st == "restoration_error"]
    if not shortcuts:
        return Judgement(True, value=rate, details=details)
    lines = [f"context {derived.id}: {len(shortcuts)} of {n} composite questions answered right although a question "
             f"they depend on was answered wrong (restoration errors: a shortcut, not composition); statuses "
             + ", ".join(f"{s} {details[s]}" for s in STATUSES)]
    for cid in shortcuts[:10]:
        parts = ", ".join(f"{p.rsplit('-', 1)[-1]} {_short(records[p])}" for p in deps[cid])
        lines.append(f"  {cid.rsplit('-', 1)[-1]} right ({records[cid].parsed}); depends on {parts}")
    if len(shortcuts) > 10:
        lines.append(f"  ... and {len(shortcuts) - 10} more")
    return Judgement(False, "\n".join(lines), value=rate, failed_members=tuple(shortcuts), details=details)


RULES: Mapping[str, Rule] = {COMPOSITION: composition_rule}
