"""The terminal summary: one table per suite, the paper's metrics, and derived-result counts. Built from the report
dict, so it reads the same in one process and on the pytest-xdist controller: the paper's metrics are recomputed as
typed `Metric`s from the report's records (the JSON keeps only their values) and printed by the one renderer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_tom import robustness
from pytest_tom.framework.base import Benchmark
from pytest_tom.framework.metric import Metric
from pytest_tom.output.render import reference_lines, terminal_lines
from pytest_tom.record import Record

GROUP_WIDTH = 48
GROUP_HEADER = "group (acc %: % of the group's questions right)"
"""The table pools questions (micro); a benchmark's own lines below it give macro means, labelled as such."""


def pct(v: float | None) -> str:
    """A rate as a 6-wide percentage, "n/a" when undefined."""
    return "   n/a" if v is None else f"{100 * v:6.1f}"


def table_lines(tables: list[dict[str, Any]]) -> list[str]:
    """Rows of accuracy (correct / scored questions of the group), 95% interval, parse rate, unparseable and error counts."""
    lines = [f"  {GROUP_HEADER:<{GROUP_WIDTH}} {'n':>5} {'acc %':>6} {'95% CI':>13} {'parse %':>7} {'unparse':>7} {'errors':>6}"]
    for table in tables:
        for row in table["rows"]:
            label = " / ".join(row["facets"].values()) or "all"
            lo, hi = row["ci95"]
            lines.append(f"  {label[:GROUP_WIDTH]:<{GROUP_WIDTH}} {row['n']:>5} {pct(row['accuracy'])} {100 * lo:5.1f}-"
                         f"{100 * hi:5.1f}  {100 * row['parse_rate']:6.1f} {row['unparseable']:>7} {row['errors']:>6}")
    return lines


def suite_metrics(report: Mapping[str, Any], benchmark: Benchmark[Any], sid: str) -> list[Metric]:
    """A suite's typed metrics, from the records the report holds (so the xdist controller gets them too)."""
    records = [Record.from_dict(d) for d in report.get("items", []) if d.get("suite", "") == sid]
    return benchmark.metrics(records) if records else []


def every_suite_metrics(
    report: Mapping[str, Any], benchmark_for: Callable[[str], Benchmark[Any] | None],
) -> list[tuple[str, list[Metric]]]:
    """Each suite's id and typed metrics (Markdown's tables); a suite whose metrics break is left out."""
    out = []
    for suite in report.get("suites", []):
        bench = benchmark_for(suite["id"])
        try:
            out.append((suite["id"], suite_metrics(report, bench, suite["id"]) if bench is not None else []))
        except Exception:  # noqa: BLE001, S112 - the terminal summary says why; Markdown must still be written
            continue
    return out


def summary_lines(report: Mapping[str, Any], benchmark_for: Callable[[str], Benchmark[Any] | None]) -> list[str]:
    model = report.get("model", {})
    fp = str(model.get("fingerprint") or "")
    lines = [f"model: {model.get('uri')}" + (f" (fingerprint {fp[:16]})" if fp else "")]
    eng = report.get("engine") or {}
    if eng:
        lines.append(f"engine: {eng.get('questions', 0)} questions, {eng.get('requests', 0)} requests "
                     f"({eng.get('unique_requests', 0)} unique), {eng.get('cache_hits', 0)} from cache, "
                     f"{eng.get('model_requests', 0)} sent to the model in {eng.get('model_seconds', 0)} s, "
                     f"{eng.get('errors', 0)} errors")
        lines += [f"scoring model {name}: {s.get('unique_requests', 0)} unique requests, {s.get('cache_hits', 0)} from "
                  f"cache, {s.get('model_requests', 0)} computed in {s.get('model_seconds', 0)} s, {s.get('errors', 0)} errors"
                  for name, s in (eng.get("scoring") or {}).items()]
    for suite in report.get("suites", []):
        lines += ["", f"{suite['id']} ({suite['benchmark']}, {suite['n_items']} questions)",
                  *table_lines(suite.get("tables", []))]
        bench = benchmark_for(suite["id"])
        if bench is not None:
            try:
                typed = suite_metrics(report, bench, suite["id"])
                lines.extend(terminal_lines(typed) + reference_lines(typed, suite.get("reference")))
            except Exception as exc:  # noqa: BLE001 - the summary must print even if a metric breaks
                lines.append(f"  (metrics unavailable: {type(exc).__name__}: {exc})")
        for kind, counts in suite.get("groups", {}).items():
            total = sum(counts.values())
            skipped = f", {counts['skipped']} skipped" if counts.get("skipped") else ""
            lines.append(f"  {kind} groups: {counts['passed']}/{total} passed, {counts['failed']} failed, "
                         f"{counts['error']} errors{skipped}")
        lines.extend(robustness.summary_lines(suite.get("robustness") or {}))
    return lines
