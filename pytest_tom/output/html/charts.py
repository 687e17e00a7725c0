"""The HTML report's charts as inline SVG, drawn by matplotlib.

Why matplotlib: it is the most widely kept plotting library in Python, installs as wheels everywhere our users run,
and writes SVG itself, so a chart needs no JavaScript, no network and no runtime in the browser; a Vega-Lite spec would
need vega's JavaScript bundled into every page (about 1 MB) or a Node toolchain to compile it offline. Text stays text
(`svg.fonttype: none`: small, searchable, drawn in the reader's own sans-serif), and a fixed hash salt and no date make
the SVG a pure function of the numbers, so a page rebuilt from the JSON report is byte-for-byte the page of the run.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

STYLE: Any = {"svg.fonttype": "none", "svg.hashsalt": "pytest-tom", "font.size": 9, "font.family": "sans-serif",
         "axes.spines.top": False, "axes.spines.right": False, "text.parse_math": False}
"""Deterministic, small SVG in a neutral style; labels are data, never mathtext (a `$` in a facet value is a `$`)."""

BAR, BAD, LINE = "#4c72b0", "#c44e52", "#555555"


@dataclass(frozen=True, slots=True)
class Bar:
    """One horizontal bar: its label, value and interval, in the chart's unit."""

    label: str
    value: float
    low: float
    high: float
    bad: bool = False
    """Drawn in the warning colour (a regression, a failing gate)."""
    mark: float | None = None
    """This bar's own threshold, drawn as a tick on it (where bars have different ones)."""


def available() -> bool:
    """Whether matplotlib can be imported (the `html` extra); checked before a run spends any model time."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def bar_chart(bars: Sequence[Bar], *, xlabel: str, xlim: tuple[float, float] | None = None,
              line: float | None = None, line_label: str = "") -> str:
    """Horizontal bars with their intervals as error bars, first bar on top; `line` draws a vertical reference (the gate's
    threshold) labelled above the plot, and each bar's `mark` a tick of the same colour. Returns the `<svg>` element.
    """
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(7.0, 0.9 + 0.26 * len(bars)))
        ax = fig.add_subplot()
        ys = list(range(len(bars)))[::-1]
        values = [b.value for b in bars]
        err = [[max(b.value - b.low, 0.0) for b in bars], [max(b.high - b.value, 0.0) for b in bars]]
        ax.barh(ys, values, xerr=err, color=[BAD if b.bad else BAR for b in bars], height=0.6,
                error_kw={"ecolor": LINE, "capsize": 2, "elinewidth": 0.8})
        ax.set_yticks(ys, [_short(b.label) for b in bars])
        ax.set_xlabel(xlabel)
        if xlim is not None:
            ax.set_xlim(*xlim)
        if line is not None:
            ax.axvline(line, color=BAD, linestyle="--", linewidth=1)
            ax.set_title(f"- - - {line_label}", loc="right", fontsize=8, color=BAD)
        marked = [(b.mark, y) for b, y in zip(bars, ys, strict=True) if b.mark is not None]
        if marked:
            ax.scatter([m for m, _ in marked], [y for _, y in marked], marker="|", s=300, linewidths=2, color=BAD, zorder=3)
            ax.set_title(f"| {line_label}", loc="right", fontsize=8, color=BAD)
        ax.axvline(0, color=LINE, linewidth=0.6)
        ax.grid(axis="x", linewidth=0.3, alpha=0.5)
        fig.tight_layout()
        return _svg(fig)


def _short(label: str, limit: int = 48) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _svg(fig: Any) -> str:
    """The figure as an `<svg>` element (no XML prolog or doctype: it goes inside the HTML), without the metadata block
    (a date would make every page differ; the creator's address is the only URL the page would hold besides namespaces).
    """
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata=dict.fromkeys(("Date", "Creator", "Format", "Type")))
    text = buf.getvalue()
    return text[text.index("<svg"):].strip()
