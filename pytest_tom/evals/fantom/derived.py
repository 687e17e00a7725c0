"""FANToM's aggregate assertions: the set gates (ALL*, ALL, family All: the shared `all_pass` rule) and Table 3's
per-character checks, read as upstream's character analysis reads them (`metrics.character_entries`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from pytest_tom.derived import Derived, Judgement, Rule
from pytest_tom.evals.fantom.data import FAMILIES, FantomExtra
from pytest_tom.evals.fantom.metrics import character_entries
from pytest_tom.framework.base import slug
from pytest_tom.record import Record
from pytest_tom.sample import Sample

_Unit = tuple[str, str, str]
"""(context, unit, scenario)."""


def _units(samples: Sequence[Sample[FantomExtra]]) -> dict[_Unit, list[Sample[FantomExtra]]]:
    """ToM questions by (context, unit, scenario), in sample order (facts are never part of a set)."""
    units: dict[_Unit, list[Sample[FantomExtra]]] = defaultdict(list)
    for s in samples:
        x = s.extra
        if x.qtype != "fact":
            units[(x.context, x.unit, x.accessibility)].append(s)
    return units


def set_assertions(samples: Sequence[Sample[FantomExtra]], *, with_free: bool, benchmark: str = "fantom") -> list[Derived]:
    """ALL* (when free-response beliefs are asked), ALL and the two family All gates, per unit and scenario."""
    out = []
    for (context, unit, scenario), members in _units(samples).items():
        gid = f"{context}-{unit}-{scenario}"
        facets = {"context": context, "unit": unit, "accessibility": scenario}
        kinds: list[tuple[str, list[Sample[FantomExtra]], tuple[str, ...]]] = [
            *([("all_star", members, ())] if with_free else []),
            ("all_tom", [s for s in members if s.extra.qtype != "belief_free"], ()),
            *((f"{fam}_all", [s for s in members if s.extra.family == fam], (fam,)) for fam in FAMILIES)]
        for kind, picked, extra in kinds:
            if picked:
                out.append(Derived(benchmark=benchmark, id=gid, kind=kind, members=tuple(s.id for s in picked),
                                   marks=(benchmark, context, kind, scenario, *extra), facets={**facets, "kind": kind}))
    return out


def character_checks(samples: Sequence[Sample[FantomExtra]], *, parsing: str, benchmark: str = "fantom") -> list[Derived]:
    """One all-correct check per (unit, scenario, character), and a consistency check for characters with yes/no questions."""
    out = []
    for (context, unit, scenario), members in _units(samples).items():
        chars: dict[str, str] = {}
        yn_chars: set[str] = set()
        for s in members:
            x = s.extra
            char = s.facets["character"]
            if x.qtype.endswith("_yn"):
                chars.setdefault(char, x.binary_character)
                yn_chars.add(char)
            elif x.qtype.startswith("belief") and char:
                chars.setdefault(char, char.capitalize())
        lists = [s for s in members if s.extra.qtype.endswith("_list")]
        for char, display in chars.items():
            mine = [s for s in members if s.facets["character"] == char]
            families = {s.extra.family for s in mine if s.extra.qtype.endswith("_yn")}
            tiled = [s for s in lists if s.extra.family in families]
            kinds = ["character_all"] + (["consistency"] if char in yn_chars else [])
            for kind in kinds:
                picked = mine if kind == "character_all" else [s for s in mine if s.extra.qtype.endswith("_yn")]
                out.append(Derived(
                    benchmark=benchmark, id=f"{context}-{unit}-{scenario}-{slug(char) or 'unknown'}", kind=kind,
                    members=tuple(s.id for s in (*picked, *tiled)), marks=(benchmark, context, kind, scenario),
                    facets={"context": context, "unit": unit, "accessibility": scenario, "character": char, "kind": kind},
                    params={"parsing": parsing, "character": char, "display": display}))
    return out


_READING = {1: "knows", 0: "does not know", -1: "unreadable"}


def _check(derived: Derived, members: Sequence[Record]) -> Judgement:
    """Judge a per-character check (either kind) from its members' records, as the old check items did."""
    f, params = derived.facets, derived.params
    consistency = derived.kind == "consistency"
    entries = character_entries(members, "unit", str(params["parsing"])).get((f["unit"], str(params["character"])), [])
    if consistency:
        entries = [e for e in entries if e.value is not None]
        ok = len({e.value for e in entries if e.value is not None}) == 1
        why = "" if ok else "the answers disagree about whether the character knows"
        failed: tuple[str, ...] = ()
    else:
        ok = all(e.ok for e in entries)
        why = "" if ok else f"{sum(not e.ok for e in entries)} of {len(entries)} answers about the character are wrong"
        failed = tuple(dict.fromkeys(e.qid for e in entries if not e.ok))
    details = {"entries": [e.to_dict() for e in entries]}
    if ok:
        return Judgement(True, value=1.0, details=details)
    what = "consistency" if consistency else "all answers right"
    lines = [f"FANToM per-character check ({what}) for {params['display']}, {f['unit']} "
             f"({f['context']} context, {f['accessibility']}): {why}"]
    lines += [f"  {e.qid} {e.what}: {e.note} -> {_READING[e.value or 0]}" if consistency
              else f"  {'ok ' if e.ok else 'BAD'} {e.qid} {e.what}: {e.note}" for e in entries]
    if consistency:
        counts = Counter(_READING[e.value or 0] for e in entries)
        lines.append("readings: " + ", ".join(f"{k} x{n}" for k, n in counts.most_common()))
    return Judgement(False, "\n".join(lines), value=0.0, failed_members=failed, details=details)


RULES: Mapping[str, Rule] = {"character_all": _check, "consistency": _check}
"""`character_all`: every answer about the character is right (upstream's ALL for each character);
`consistency`: the character's list and yes/no answers agree on whether they know (upstream's answer consistency)."""
