"""Benchmarks, by registry name.

Adding a benchmark is one new module or package plus one line in `BUILTIN`. Classes are named as "module:Class" strings
and imported on first use. Third parties add theirs through the `pytest_tom.benchmarks` entry-point group or the
`pytest_tom_add_benchmarks` hook (from a plugin or a conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_tom.errors import TomConfigError
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Program
from pytest_tom.registry import LazyRegistry

__all__ = ["BUILTIN", "Benchmark", "BenchmarkOption", "DataSource", "Program", "Registry"]

BUILTIN: dict[str, str] = {
    "tombench": "pytest_tom.evals.tombench:ToMBench",
    "fantom": "pytest_tom.evals.fantom:FANToM",
    "simpletom": "pytest_tom.evals.simpletom:SimpleToM",
    "tomato": "pytest_tom.evals.tomato:ToMATO",
    "tomvalley": "pytest_tom.evals.tomvalley:ToMValley",
    "hitom": "pytest_tom.evals.hitom:HiToM",
    "mmtomqa": "pytest_tom.evals.mmtomqa:MMToMQA",
    "bigtom": "pytest_tom.evals.bigtom:BigToM",
    "opentom": "pytest_tom.evals.opentom:OpenToM",
}


class Registry(LazyRegistry[type[Benchmark[object]]]):
    """Name -> benchmark class, filled from BUILTIN, entry points and the hook.

    `on_add` is called with every class registered through `add` (the plugin uses
    it to give a conftest.py benchmark its deprecated `--tom-<name>-*` flags).
    """

    def __init__(self, on_add: Callable[[type[Benchmark[object]]], None] | None = None) -> None:
        super().__init__("benchmark", BUILTIN, "pytest_tom.benchmarks", listing="available")
        self._on_add = on_add

    def add(self, cls: type[Benchmark[object]]) -> None:  # type: ignore[override]
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name.isidentifier():
            raise TomConfigError(f"benchmark class {cls.__qualname__} needs a `name` that is a Python identifier")
        super().add(name, cls)
        if self._on_add is not None:
            self._on_add(cls)
