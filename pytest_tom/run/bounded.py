"""A bounded failure listing: the first few failures of each group shown, one line for the rest. A weak model fails some
600 questions of one ToMBench category, 2,600 lines of FAILURES and short summary nobody reads past the first screen. So
the failures of each group (the suite and its strata, or an aggregate kind) are shown for the first `PER_GROUP` items,
and one line per group counts the rest. Only printing changes: the reports beyond the bound leave the terminal
reporter's lists during pytest's summary and come back before the final counts, so exit status, counts, junitxml, `--lf`
and the report see every failure. `-v` (or `--tom-detail=full`) lifts the bound, `-q` shows one per group, `-qq` none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_tom.constants import RECORD_PROPERTY, REPORT_OPTION

if TYPE_CHECKING:
    import pytest

    from pytest_tom.run.session import TomSession

PER_GROUP = 3
"""Failures shown per group by default."""

_KINDS = ("failed", "error")
"""The terminal reporter's lists that pytest's summary sections print one entry each of."""


def per_group(config: pytest.Config, tom: TomSession) -> int | None:
    """How many failures of a group to show: None (all) with -v or --tom-detail=full; fewer with -q."""
    verbosity = config.get_verbosity()
    if verbosity >= 1 or tom.options.detail == "full":
        return None
    return PER_GROUP if verbosity == 0 else 1 if verbosity == -1 else 0


def group_of(report: Any, tom: TomSession) -> str | None:
    """The group of a pytest-tom item's report: suite and strata values, or suite and aggregate kind; None otherwise."""
    for name, value in getattr(report, "user_properties", ()) or ():
        if name == RECORD_PROPERTY and isinstance(value, Mapping):
            return _label(value, tom)
    return None


def _label(record: Mapping[str, Any], tom: TomSession) -> str:
    suite = str(record.get("suite") or record.get("benchmark") or "?").rsplit("::", 1)[-1]
    if record.get("kind") == "group":
        return f"{suite} {record.get('group_kind')} groups"
    try:
        strata: tuple[str, ...] = tom.registry.get(str(record.get("benchmark"))).strata
    except Exception:  # noqa: BLE001 - a benchmark that cannot be loaded groups by suite only
        strata = ()
    facets = record.get("facets") or {}
    values = [str(facets[k]) for k in strata if k in facets]
    return f"{suite} {' / '.join(values)}" if values else suite


@dataclass
class Hidden:
    """The reports left out of the terminal reporter's lists, to put back, and the counts per group."""

    limit: int
    originals: dict[str, list[Any]] = field(default_factory=dict)
    shown: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Per (group, kind): errors have their own quota, so a group's wrong answers never hide its model errors."""
    hidden: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.hidden.values())


def hide(reporter: Any, tom: TomSession) -> Hidden | None:
    """Leave the failures beyond the bound out of `reporter.stats` (put them back with `restore`)."""
    limit = per_group(reporter.config, tom)
    if limit is None:
        return None
    state = Hidden(limit)
    for kind in _KINDS:
        reports = reporter.stats.get(kind)
        if not reports:
            continue
        kept = []
        for rep in reports:
            group = group_of(rep, tom)
            if group is not None and state.shown[group, kind] >= limit:
                state.hidden[group, kind] += 1
                continue
            if group is not None:
                state.shown[group, kind] += 1
            kept.append(rep)
        if len(kept) < len(reports):
            state.originals[kind] = reports
            reporter.stats[kind] = kept
    return state if state.total else None


def restore(reporter: Any, state: Hidden | None) -> None:
    """Put every report back, so the final counts (`636 failed`) and later plugins see them all."""
    if state is not None:
        reporter.stats.update(state.originals)


def lines(state: Hidden, tom: TomSession) -> list[str]:
    """One line per group with failures not shown, and how to see them all."""
    out = []
    for (group, kind), more in state.hidden.items():
        shown = state.shown[group, kind]
        what = "failed" if kind == "failed" else "errors" if more > 1 else "error"
        out.append(f"{group}: {more} more {what}" + (f" ({shown} shown above)" if shown else ""))
    where = (f"every answer is in the {REPORT_OPTION} JSON ({tom.options.report})" if tom.options.report
             else f"{REPORT_OPTION}=PATH writes every answer to a JSON report")
    out.append(f"to see all {state.total + sum(state.shown.values())} failures here: -v (or --tom-detail=full); {where}")
    return out


def write(reporter: Any, state: Hidden | None, tom: TomSession) -> None:
    """The section after pytest's summary: failures not shown, per group (unless nothing is shown at all)."""
    if state is None:
        return
    config = reporter.config
    if config.getoption("tbstyle", "auto") == "no" and not any(reporter.hasopt(c) for c in "fE"):
        return
    reporter.write_sep("=", f"pytest-tom: {state.total} more failures not shown "
                            f"({'first ' + str(state.limit) if state.limit else 'none'} per group shown)", yellow=True)
    for line in lines(state, tom):
        reporter.write_line(line)
