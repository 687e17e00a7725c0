"""What a run gates on, parsed once from the options: thresholds, a baseline, comparison rules. A run with any of these
is a gate run: wrong answers are recorded, not failed, and the exit status is decided by the gates (and by errors).
Parsing lives here, free of pytest, so the same rules read from the command line, the ini file and a suite declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_tom.errors import TomConfigError
from pytest_tom.gates.thresholds import Threshold

DEFAULT_BASELINE = "tom-baseline.json"
"""Where `--tom-baseline-save` writes when given no path (and `--tom-baseline` reads by convention)."""


@dataclass(frozen=True)
class GateConfig:
    thresholds: tuple[Threshold, ...] = ()
    """Rules from --tom-threshold / tom_thresholds; patterns name `<suite>.<metric>`. A --tom-benchmark suite is named
    after its benchmark, a module suite after its variable.
    """
    baseline: Path | None = None
    """--tom-baseline: the stored run to compare with."""
    save: Path | None = None
    """--tom-baseline-save: where to store this run as a baseline."""
    update: bool = False
    """--tom-baseline-update: rewrite --tom-baseline from this run; comparisons are shown, never fail."""
    compare: tuple[str, ...] = ()
    """--tom-compare-fail rules as written (parsed by `pytest_tom.gates.baseline`)."""
    force: bool = False
    """--tom-baseline-force: compare even across different data, protocol or settings."""
    alpha: float = 0.05
    markdown: Path | None = None
    noise_flip_rate: float | None = None

    @property
    def active(self) -> bool:
        """Whether this is a gate run by the options alone (a suite's own gates also make one)."""
        return bool(self.thresholds or self.baseline or self.save or self.compare)


def parse_rate(raw: str, flag: str, *, low: float = 0.0, high: float = 1.0) -> float:
    text = raw.strip()
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise TomConfigError(f"{flag}={raw!r}: expected a number (e.g. 0.05 or 5%)") from None
    if not low < value < high:
        raise TomConfigError(f"{flag}={raw!r}: expected a value between {low} and {high}")
    return value
