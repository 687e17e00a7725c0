"""Declaring a suite in a test module: ``tombench = pytest_tom.suite("tombench", languages="en")``. A module-level
`Suite` is collected like a test class, its questions items under the variable's name with the suite's settings, so a
model repo can keep several configurations (vanilla and CoT, a quick sample and the full set) side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tom.gates.thresholds import parse_threshold


@dataclass(frozen=True)
class Suite:
    benchmark: str
    """Registry name, e.g. "tombench"."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Benchmark settings (the same names as in `--tom-set <benchmark>.<name>=...`)."""
    sample: int | None = None
    """Stratified sample size; None runs every selected question (or --tom-sample)."""
    seed: int | None = None
    data_dir: str | Path | None = None
    """Overrides --tom-data-dir for this suite."""
    gates: tuple[str, ...] = ()
    """Thresholds on this suite's metrics (`accuracy:lower>=0.3`); any makes the run a gate run."""
    robustness: tuple[str, ...] = ()
    """Robustness strategies searched per question (`pytest_tom.robustness`), added to --tom-robustness."""


def suite(benchmark: str, *, sample: int | None = None, seed: int | None = None, data_dir: str | Path | None = None,
          gates: str | Sequence[str] = (), robustness: str | Sequence[str] = (), **settings: Any) -> Suite:
    """Declare a benchmark suite in a test module.

    Args:
        benchmark: registry name, e.g. "tombench".
        sample: run a stratified sample of this many questions.
        seed: seed of the sample.
        data_dir: folder with the benchmark's official files.
        gates: thresholds on the suite's metrics, e.g. ``["accuracy:lower>=0.3", "coherence>=10%"]``
            (metric names as in `--tom-threshold`, without the suite's name). Parsed now, so a typo
            fails at import rather than after the run.
        robustness: strategies hypothesis searches per question, e.g. ``["rename", "permute"]`` (see
            `pytest_tom.robustness`); checked now.
        **settings: benchmark settings, e.g. ``languages="en", prompt="cot"``.
    """
    rules = (gates,) if isinstance(gates, str) else tuple(gates)
    for rule in rules:
        parse_threshold(rule, where=f"pytest_tom.suite({benchmark!r}, gates=...)")
    names: tuple[str, ...] = ()
    if robustness:
        from pytest_tom.robustness import resolve

        names = tuple(s.name for s in resolve(robustness if isinstance(robustness, str) else list(robustness)))
    return Suite(benchmark=benchmark, settings=dict(settings), sample=sample, seed=seed, data_dir=data_dir, gates=rules,
                 robustness=names)
