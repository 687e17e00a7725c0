"""pytest-tom in pytest-html's report: each suite's paper metrics (the "pytest-tom-metrics" block of its summary section)
and, with --tom-reference, the published rows beside this run's numbers (the "pytest-tom" block). Pure functions of the
suites' typed metrics and the JSON report's `reference` fields, the same data the Markdown's tables are built from
(`output.render`), so the two always agree. pytest-html inserts the text as raw HTML (`|safe` in its template):
everything taken from the data is escaped here, since a model's name or a note could hold `<` or `&`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from pytest_tom.framework.metric import Metric
from pytest_tom.output.render import by_table, reference_cells, value_text

COLUMNS = ("model", "metric", "this run", "published", "source")
"""The table's columns, as in the Markdown's."""


def metrics_html(metrics: Sequence[tuple[str, Sequence[Metric]]]) -> str | None:
    """The "pytest-tom-metrics" block: per suite, its printed metrics by paper table, formatted by unit with intervals as
    in the terminal and the Markdown (`render.value_text`). None when no suite has a metric to print.
    """
    parts = []
    for suite, typed in metrics:
        rows = [f"<tr><td>{escape(table)}</td><td>{escape(m.label)}</td><td>{escape(value_text(m))}</td></tr>"
                for table, shown in by_table(typed).items() for m in shown]
        if rows:
            parts.append(f"<h4>Metrics of {escape(suite)}</h4><table class=\"pytest-tom-summary\"><thead><tr><th>table</th>"
                         f"<th>metric</th><th>value</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return '<div class="pytest-tom-metrics"><h3>pytest-tom metrics</h3>' + "".join(parts) + "</div>" if parts else None


def reference_html(metrics: Sequence[tuple[str, Sequence[Metric]]], references: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The "pytest-tom" block: per suite with published rows or notes, a table of this run's value beside each published
    row (model, metric, both values, the source table), then the notes saying where a model has no row for the run's
    settings. None when no suite has either, so the report gains nothing it would have to explain.
    """
    typed = dict(metrics)
    parts = [part for suite, reference in references.items() if (part := _suite(suite, typed.get(suite, ()), reference))]
    if not parts:
        return None
    return '<div class="pytest-tom"><h3>pytest-tom</h3>' + "".join(parts) + "</div>"


def _suite(suite: str, metrics: Sequence[Metric], reference: Mapping[str, Any]) -> str:
    """One suite's heading, table and notes; empty when it has neither rows nor notes."""
    rows = [(model, f"{table}: {label}" if table else label, ours, theirs, source)
            for (model, source), tables in reference_cells(metrics, reference.get("rows") or ()).items()
            for table, cells in tables.items() for label, ours, theirs in cells]
    notes = [str(n) for n in reference.get("notes") or ()]
    if not rows and not notes:
        return ""
    out = f"<h4>Published rows beside {escape(suite)}</h4>"
    if rows:
        head = "".join(f"<th>{c}</th>" for c in COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
        out += f'<table class="pytest-tom-reference"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    if notes:
        out += "<ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"
    return out
