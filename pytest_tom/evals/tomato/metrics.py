"""The paper's ToMATO aggregation (Tables 3, 5, 10, 11): cells, micro and macro per order, ALL, the FB gap and
the Big-Five halves. Every number is an accuracy per run, then the mean and population std over runs (the paper's
"mean±std over five runs"); an unreadable answer is not correct. An FB question is second-order, counted once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.evals.tomato.data import FACTOR_KEYS, LEVELS, MENTAL_STATES
from pytest_tom.framework.labels import spread
from pytest_tom.framework.metric import Show
from pytest_tom.record import Outcome, Record

GROUPS = ("first", "second", "fb")  # Table 3's rows per mental state; fb is a subset of second

_HEAD = "tomato (% right; mean±std over runs)"
_FIVE = "tomato Big Five of the asked speaker (Tables 5 and 11, per order)"
SHOW = (
    Show(("label",), "asked with", _HEAD, "text"),
    Show(("runs",), "runs", _HEAD, "count"),
    Show(("all", "accuracy"), "ALL (micro over every question; FB questions are second-order ones, counted once)", _HEAD),
    Show(("all", "unparseable"), "no readable [A]-[D] answer (counted as not correct)", _HEAD, "count"),
    Show(("fb_gap",), "false-belief gap 2nd non-FB - FB (the paper's LLMs: +9.5 to +16.2)", _HEAD, "points"),
    Show(("orders", "*", "accuracy"), "{0}", "tomato micro per order"),
    Show(("macro", "*", "accuracy"), "{0}", "tomato macro (Table 10: unweighted mean over the mental states present)"),
    Show(("cells", "*", "*", "accuracy"), "{0} {1}", "tomato cells (Table 3)"),
    Show(("personality", "*", "[hl]*", "[fs]*", "accuracy"), "{0} {1} {2}", _FIVE),
    Show(("personality", "*", "gap", "all"), "{0} gap high - low", _FIVE, "points"),
)
"""What the terminal and Markdown print; the report keeps every number."""


def run_correct(r: Record) -> list[bool]:
    """Each run's correctness; a record without runs (another scorer, an old report) is its verdict."""
    runs = r.details.get("run_correct")
    return [bool(x) for x in runs] if isinstance(runs, list) and runs else [r.outcome is Outcome.CORRECT]


def cell(records: Sequence[Record]) -> dict[str, Any] | None:
    """Accuracy of a set of questions: per run, then mean and std over runs; None for no questions."""
    scored = [r for r in records if r.outcome is not Outcome.ERROR]
    if not scored:
        return None
    per_item = [run_correct(r) for r in scored]
    runs = min(len(p) for p in per_item)
    per_run = [sum(p[k] for p in per_item) / len(per_item) for k in range(runs)]
    mean, std = spread(per_run)
    return {"n": len(scored), "correct": sum(r.outcome is Outcome.CORRECT for r in scored),
            "unparseable": sum(r.outcome is Outcome.UNPARSEABLE for r in scored), "accuracy": mean, "std": std,
            "runs": per_run}


def in_group(r: Record, group: str) -> bool:
    """Whether a record falls in Table 3's row `group` (first, second, fb) or in second_non_fb."""
    fb = r.facets.get("false_belief") == "true"
    order = r.facets.get("order")
    return {"first": order == "first", "second": order == "second", "fb": fb,
            "second_non_fb": order == "second" and not fb}[group]


def _macro(cells: Mapping[str, Mapping[str, Any]], group: str) -> dict[str, Any] | None:
    """Table 10: per run, the unweighted mean over the mental states present; then mean and std over runs."""
    present = [c[group] for c in cells.values() if c.get(group) is not None]
    if not present:
        return None
    runs = min(len(c["runs"]) for c in present)
    per_run = [sum(c["runs"][k] for c in present) / len(present) for k in range(runs)]
    mean, std = spread(per_run)
    return {"accuracy": mean, "std": std, "states": len(present), "runs": per_run}


def _gap(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> float | None:
    return a["accuracy"] - b["accuracy"] if a is not None and b is not None else None


def aggregate(records: Sequence[Record], label: str = "") -> dict[str, Any]:
    """Every ToMATO metric of one suite's records (JSON-serialisable); `label` says how it was asked."""
    scored = [r for r in records if r.outcome is not Outcome.ERROR]
    runs = min((len(run_correct(r)) for r in scored), default=0)
    by_state = {state: [r for r in scored if r.facets.get("mental_state") == state] for state in MENTAL_STATES}
    cells = {state: {g: cell([r for r in mine if in_group(r, g)]) for g in GROUPS} for state, mine in by_state.items() if mine}
    orders = {g: cell([r for r in scored if in_group(r, g)]) for g in (*GROUPS, "second_non_fb")}
    personality: dict[str, dict[str, Any]] = {}
    for factor in FACTOR_KEYS:
        split: dict[str, Any] = {}
        for level in LEVELS:
            mine = [r for r in scored if r.facets.get(factor) == level]
            split[level] = {"all": cell(mine), **{o: cell([r for r in mine if r.facets.get("order") == o])
                                                  for o in ("first", "second")}}
        split["gap"] = {part: _gap(split["high"][part], split["low"][part]) for part in ("all", "first", "second")}
        personality[factor] = split
    return {"label": label, "runs": runs, "n": len(scored), "errors": len(records) - len(scored), "all": cell(scored),
            "orders": orders, "macro": {g: _macro(cells, g) for g in GROUPS}, "cells": cells,
            "fb_gap": _gap(orders["second_non_fb"], orders["fb"]), "personality": personality}
