"""Benchmarks, by registry name.

Adding a benchmark is one new module or package plus one line in `BUILTIN`.
Classes are named as "module:Class" strings and imported on first use. Third
parties add theirs through the `pytest_tom.benchmarks` entry-point group or the
`pytest_tom_add_benchmarks` hook (from a plugin or a conftest.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points

from pytest_tom.errors import TomConfigError
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Program

__all__ = ["BUILTIN", "Benchmark", "BenchmarkOption", "DataSource", "Program", "Registry"]

BUILTIN: dict[str, str] = {
    "tombench": "pytest_tom.evals.tombench:ToMBench",
    "fantom": "pytest_tom.evals.fantom:FANToM",
    "simpletom": "pytest_tom.evals.simpletom:SimpleToM",
    "tomato": "pytest_tom.evals.tomato:ToMATO",
    "tomvalley": "pytest_tom.evals.tomvalley:ToMValley",
    "hitom": "pytest_tom.evals.hitom:HiToM",
}


class Registry:
    """Name -> benchmark class, filled from BUILTIN, entry points and the hook.

    `on_add` is called with every class registered through `add` (the plugin uses
    it to give a conftest.py benchmark its deprecated `--tom-<name>-*` flags).
    """

    def __init__(self, on_add: Callable[[type[Benchmark[object]]], None] | None = None) -> None:
        self._targets: dict[str, str | type[Benchmark[object]]] = dict(BUILTIN)
        for ep in entry_points(group="pytest_tom.benchmarks"):
            self._targets.setdefault(ep.name, ep.value)
        self._on_add = on_add

    def add(self, cls: type[Benchmark[object]]) -> None:
        """Register a benchmark class under its `name`."""
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name.isidentifier():
            raise TomConfigError(f"benchmark class {cls.__qualname__} needs a `name` that is a Python identifier")
        self._targets[name] = cls
        if self._on_add is not None:
            self._on_add(cls)

    def names(self) -> list[str]:
        return sorted(self._targets)

    def get(self, name: str) -> type[Benchmark[object]]:
        target = self._targets.get(name)
        if target is None:
            raise TomConfigError(f"unknown benchmark {name!r}; available: {', '.join(self.names())}")
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
            assert isinstance(target, type)
            self._targets[name] = target
        return target

    def loadable(self) -> list[type[Benchmark[object]]]:
        """Every benchmark class that imports; a broken third-party one must not break `pytest --help`."""
        out = []
        for name in self.names():
            try:
                out.append(self.get(name))
            except Exception:  # noqa: BLE001, S112
                continue
        return out
