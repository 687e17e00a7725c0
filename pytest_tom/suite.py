"""Declaring a suite in a test module: ``tombench = pytest_tom.suite("tombench", languages="en")``.

A module-level `Suite` is collected like a test class: each of its questions
becomes an item under the variable's name, with the suite's own settings. That
lets a model repo keep several configurations side by side (vanilla and CoT,
a quick sample and the full set) in version control.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Suite:
    benchmark: str
    """Registry name, e.g. "tombench"."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Benchmark settings (the same names as its --tom-<benchmark>-* options)."""
    sample: int | None = None
    """Stratified sample size; None runs every selected question (or --tom-sample)."""
    seed: int | None = None
    data_dir: str | Path | None = None
    """Overrides --tom-data-dir for this suite."""


def suite(
    benchmark: str,
    *,
    sample: int | None = None,
    seed: int | None = None,
    data_dir: str | Path | None = None,
    **settings: Any,
) -> Suite:
    """Declare a benchmark suite in a test module.

    Args:
        benchmark: registry name, e.g. "tombench".
        sample: run a stratified sample of this many questions.
        seed: seed of the sample.
        data_dir: folder with the benchmark's official files.
        **settings: benchmark settings, e.g. ``languages="en", prompt="cot"``.
    """
    return Suite(benchmark=benchmark, settings=dict(settings), sample=sample, seed=seed, data_dir=data_dir)
