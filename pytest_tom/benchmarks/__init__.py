"""Benchmarks, by registry name.

Adding a benchmark is one new module plus one line in `BUILTIN`. Classes are
named as "module:Class" strings and imported on first use. Third parties add
theirs through the `pytest_tom.benchmarks` entry-point group or the
`pytest_tom_add_benchmarks` hook.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from pytest_tom.benchmarks.base import Benchmark, BenchmarkOption, DataSource, Program
from pytest_tom.errors import TomConfigError

__all__ = ["BUILTIN", "Benchmark", "BenchmarkOption", "DataSource", "Program", "registry"]

BUILTIN: dict[str, str] = {
    "tombench": "pytest_tom.benchmarks.tombench:ToMBench",
    "fantom": "pytest_tom.benchmarks.fantom:FANToM",
}


class Registry:
    """Name -> benchmark class, filled from BUILTIN, entry points and the hook."""

    def __init__(self) -> None:
        self._targets: dict[str, str | type[Benchmark]] = dict(BUILTIN)
        for ep in entry_points(group="pytest_tom.benchmarks"):
            self._targets.setdefault(ep.name, ep.value)

    def add(self, cls: type[Benchmark]) -> None:
        """Register a benchmark class under its `name`."""
        self._targets[cls.name] = cls

    def names(self) -> list[str]:
        return sorted(self._targets)

    def get(self, name: str) -> type[Benchmark]:
        target = self._targets.get(name)
        if target is None:
            raise TomConfigError(f"unknown benchmark {name!r}; available: {', '.join(self.names())}")
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
            self._targets[name] = target
        return target  # type: ignore[return-value]


def registry() -> Registry:
    return Registry()
