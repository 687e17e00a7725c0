"""The one renderer of typed metrics: the report's nested `metrics` object, terminal lines, Markdown rows. Every
benchmark's metrics go through here, so a number is formatted by its unit alike everywhere, and a new benchmark gets all
its output by returning `Metric`s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_tom.framework.metric import Metric

WIDTH = 118
"""Terminal lines wrap between cells past this width."""


def to_json(metrics: Iterable[Metric]) -> dict[str, Any]:
    """The report's `metrics` object: each metric at its key's path, in order (a tuple as a list, a group as `{}`)."""
    out: dict[str, Any] = {}
    for m in metrics:
        node = out
        for part in m.key[:-1]:
            node = node.setdefault(part, {})
        if m.unit == "group":
            node.setdefault(m.key[-1], {})
        else:
            node[m.key[-1]] = list(m.value) if isinstance(m.value, tuple) else m.value
    return out


def _number(value: float, unit: str) -> str:
    if unit == "rate":
        return f"{100 * value:.1f}"
    if unit == "percent":
        return f"{value:.1f}"
    if unit == "points":
        return f"{100 * value:+.1f} pp"
    if unit == "count" and float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def value_text(m: Metric) -> str:
    """The value formatted by its unit, with its spread over runs, interval and n when present. Rates print as percentages
    without the sign (`61.2`), as the summary table prints them: the table's title says what they are a percentage of.
    """
    v = m.value
    if isinstance(v, tuple):
        return "; ".join(str(x) for x in v)
    if isinstance(v, str | bool) or v is None or m.unit == "text":
        return "n/a" if v is None else str(v)
    text = _number(v, m.unit)
    if m.std:
        text += f"±{_number(m.std, m.unit)}"
    if m.interval is not None:
        lo, hi = (_number(x, m.unit) for x in m.interval)
        text += f" [{lo}, {hi}]"
    if m.n is not None:
        text += f" (n={m.n:,})"
    return text


def shown(metrics: Iterable[Metric]) -> list[Metric]:
    """The metrics to print: labelled, with a value (an undefined rate, an empty list or text has nothing to show)."""
    return [m for m in metrics if m.label and m.value not in (None, (), "") and m.unit != "group"]


def by_table(metrics: Iterable[Metric]) -> dict[str, list[Metric]]:
    """Printed metrics grouped by their paper table, tables in the order they first appear."""
    out: dict[str, list[Metric]] = {}
    for m in shown(metrics):
        out.setdefault(m.table, []).append(m)
    return out


def terminal_lines(metrics: Sequence[Metric], width: int = WIDTH) -> list[str]:
    """One block per table: its title, then `label value` cells separated by `|`, wrapped between cells."""
    lines: list[str] = []
    for table, rows in by_table(metrics).items():
        lines += _wrapped(table, [f"{m.label} {value_text(m)}" for m in rows], width)
    return lines


def _wrapped(table: str, cells: Sequence[str], width: int, indent: str = "  ") -> list[str]:
    """`table:` and its cells joined by `|`, wrapped between cells; without a table, one cell a line."""
    if not table:
        return [f"{indent}{c}" for c in cells]
    lines: list[str] = []
    line, empty = f"{indent}{table}:", True
    for cell in cells:
        sep = " " if empty else " | "
        if len(line) + len(sep) + len(cell) > width:
            lines.append(line)
            line, sep = indent + "  ", ""
        line += sep + cell
        empty = False
    return [*lines, line]


def plain(value: Any, unit: str) -> str:
    """A metric's bare value by its unit (no interval or n), `n/a` when undefined: a published row's cell."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "n/a" if value is None else str(value)
    return _number(value, unit)


Cell = tuple[str, str, str]
"""A published row as printed: the metric's label, this run's value, the published one."""


def reference_cells(metrics: Sequence[Metric], rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, list[Cell]]]:
    """The report's `reference` rows grouped by (model, source) and then by the metric's printed table: each as (label,
    this run's value, the published value), formatted by the metric's unit. A metric the summary does
    not print is labelled by its key, under no table.
    """
    by_name = {m.name: m for m in metrics}
    out: dict[tuple[str, str], dict[str, list[Cell]]] = {}
    for row in rows:
        m = by_name.get(str(row["metric"]))
        unit = m.unit if m is not None else "score"  # unknown here: the number as stored, never rescaled
        label, table = (m.label, m.table) if m is not None and m.label else (str(row["metric"]), "")
        cell = (label, plain(row.get("value"), unit), plain(row.get("published"), unit))
        out.setdefault((str(row["model"]), str(row["source"])), {}).setdefault(table, []).append(cell)
    return out


def reference_lines(metrics: Sequence[Metric], reference: Mapping[str, Any] | None, width: int = WIDTH) -> list[str]:
    """--tom-reference under a suite's metrics: per published model and source, `label yours vs published` cells by the
    metric's table, then the notes saying where a model has no row for this run's settings.
    """
    if not reference:
        return []
    lines: list[str] = []
    for (model, source), tables in reference_cells(metrics, reference.get("rows") or ()).items():
        lines.append(f"  {model} as published in {source} (this run vs published):")
        for table, cells in tables.items():
            lines += _wrapped(table, [f"{label} {ours} vs {theirs}" for label, ours, theirs in cells], width, "    ")
    return lines + [f"  {note}" for note in reference.get("notes") or ()]
