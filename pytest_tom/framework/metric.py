"""Typed metrics: what a benchmark reports, as values one renderer can print, serialise and gate.

A benchmark's `metrics(records)` returns `Metric`s instead of formatting text: the
terminal summary, the JSON report, Markdown and the gate inputs are all produced
from these by the shared renderer, so no benchmark writes formatting code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Unit = Literal["rate", "score", "count", "points", "text"]
"""rate: a share in [0, 1] (printed as a percentage); score: a mean of values in [0, 1] that is not a share
of items (token F1, cosine); count: an integer; points: a signed difference of rates; text: a setting or a label."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One reported number (or label) with what it needs to be shown and compared.

    `key` is the metric's place in the report's nested `metrics` object
    (`("languages", "en", "task_avg")`), so the JSON report keeps its shape; `label`
    is what the terminal and Markdown print (empty: recorded in JSON only); `table`
    names the paper table the value reproduces, which groups the printed lines.
    """

    key: tuple[str, ...]
    value: float | int | str | bool | None
    label: str = ""
    unit: Unit = "rate"
    table: str = ""
    interval: tuple[float, float] | None = None
    n: int | None = None
    cluster: str = ""
    """What the interval resamples (`story`, `conversation`); empty for items."""

    @property
    def name(self) -> str:
        """The dotted form of `key` (`languages.en.task_avg`)."""
        return ".".join(self.key)
