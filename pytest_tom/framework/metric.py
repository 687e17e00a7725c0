"""Typed metrics: what a benchmark reports, as values one renderer can print, serialise and gate.

A benchmark computing its paper tables as a nested dict declares `Show` rows and calls `from_tree`:
every leaf becomes a `Metric` keyed by its path (the JSON report keeps its shape), and only the
leaves a row names are printed. No benchmark writes formatting code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from pytest_tom.stats import estimate_rate

Unit = Literal["rate", "percent", "score", "count", "points", "text", "list", "group"]
"""rate: a share in [0, 1] (printed as a percentage); percent: a share already in percent (FANToM's
upstream rounding); score: a mean of values that is not a share of items; count: an integer;
points: a signed difference of rates; text: a setting or a label; list: several values (`value` is
a tuple); group: an object of the report with nothing in it (kept so the JSON keeps its shape)."""

Value = float | int | str | bool | tuple[Any, ...] | None


@dataclass(frozen=True, slots=True)
class Metric:
    """One reported number (or label) with what it needs to be shown and compared. `key`: its place in the report's nested
    `metrics` object; `label`: what terminal and Markdown print (empty: JSON only); `table`: the paper table it
    reproduces, grouping the printed lines.
    """

    key: tuple[str, ...]
    value: Value
    label: str = ""
    unit: Unit = "rate"
    table: str = ""
    interval: tuple[float, float] | None = None
    n: int | None = None
    cluster: str = ""
    """What the interval resamples (`story`, `conversation`); empty for items."""
    std: float | None = None
    """Standard deviation over sampled runs (ToMATO's "mean±std over five runs"), in the value's unit."""

    @property
    def name(self) -> str:
        """The dotted form of `key` (`languages.en.task_avg`)."""
        return ".".join(self.key)


@dataclass(frozen=True, slots=True)
class Show:
    """One row of a benchmark's display table: which leaves of a metrics tree are printed, and how. `pattern` matches a key
    part by part, each part a shell glob; `label` and `table` are `str.format` templates of the globbed parts (`{0}`...)
    and the tree's top-level settings (`{aggregation}`).
    """

    pattern: tuple[str, ...]
    label: str
    table: str = ""
    unit: Unit = "rate"

    def match(self, key: tuple[str, ...]) -> tuple[str, ...] | None:
        """The parts the globs matched, or None when `key` is not this row's."""
        if len(key) != len(self.pattern) or not all(fnmatchcase(k, p) for k, p in zip(key, self.pattern, strict=True)):
            return None
        return tuple(k for k, p in zip(key, self.pattern, strict=True) if any(c in p for c in "*?["))


def clustered_rate(key: tuple[str, ...], label: str, table: str, values: Sequence[float], clusters: Sequence[str],
                   cluster: str) -> list[Metric]:
    """The mean of per-item `values` with an interval resampling `clusters` (each item's story, episode...), named by
    `cluster`; no metric at all for no items, because a rate of nothing is not 0 and must not be gated or printed as one.
    """
    if not values:
        return []
    est = estimate_rate(values, clusters)
    return [Metric(key, est.point, label, "rate", table, (est.low, est.high), len(values), cluster)]


def from_tree(tree: Mapping[str, Any], shows: Sequence[Show] = ()) -> list[Metric]:
    """Every leaf of a nested metrics dict as a `Metric`, in order; `shows` say which are printed. A list becomes a tuple
    and an empty dict a `group`, so `to_json` rebuilds the dict exactly; an `accuracy` leaf takes `ci95`, `n` and `std`
    from the dict it sits in.
    """
    settings = {k: v for k, v in tree.items() if not isinstance(v, Mapping)}
    return _leaves(tree, shows, (), settings)


def _leaves(tree: Mapping[str, Any], shows: Sequence[Show], prefix: tuple[str, ...], settings: Mapping[str, Any]) -> list[Metric]:
    out: list[Metric] = []
    for name, value in tree.items():
        key = (*prefix, str(name))
        if isinstance(value, Mapping):
            out.extend(_leaves(value, shows, key, settings) if value else [Metric(key, None, unit="group")])
            continue
        leaf = tuple(value) if isinstance(value, list) else value
        for show in shows:
            caps = show.match(key)
            if caps is not None:
                extra = _siblings(tree) if name == "accuracy" else {}
                label, table = show.label.format(*caps, **settings), show.table.format(*caps, **settings)
                out.append(Metric(key, leaf, label, show.unit, table, **extra))
                break
        else:
            unit: Unit = "list" if isinstance(leaf, tuple) else "text" if isinstance(leaf, str | bool) else (
                "count" if isinstance(leaf, int) else "rate")
            out.append(Metric(key, leaf, unit=unit))
    return out


def _siblings(tree: Mapping[str, Any]) -> dict[str, Any]:
    ci, n, std = tree.get("ci95"), tree.get("n"), tree.get("std")
    whole = isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, int | float) for x in ci)
    return {"interval": (float(ci[0]), float(ci[1])) if whole and ci is not None else None,
            "n": n if isinstance(n, int) else None, "std": std if isinstance(std, float) else None}
