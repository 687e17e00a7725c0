"""The one renderer of typed metrics: the report's nested `metrics` object, terminal lines, Markdown rows. Every
benchmark's metrics go through here, so a number is formatted by its unit alike everywhere, and a new benchmark gets all
its output by returning `Metric`s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
        cells = [f"{m.label} {value_text(m)}" for m in rows]
        if not table:
            lines += [f"  {c}" for c in cells]
            continue
        line, empty = f"  {table}:", True
        for cell in cells:
            sep = " " if empty else " | "
            if len(line) + len(sep) + len(cell) > width:
                lines.append(line)
                line, sep = "    ", ""
            line += sep + cell
            empty = False
        lines.append(line)
    return lines
