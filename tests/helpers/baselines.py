"""Baselines built in memory for the gate tests, validated and parsed exactly as `load_baseline` reads a file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_tom.gates.baseline import Baseline, _parse, _validate


def baseline_from_dict(raw: Mapping[str, Any], *, path: str = "<memory>") -> Baseline:
    """A baseline built in memory (`build_baseline`'s output), validated as a file would be."""
    _validate(Path(path), raw)
    return _parse(Path(path), raw)
