"""One lazy registry for everything pytest-tom finds by name: benchmarks, model schemes, robustness strategies. A name
maps to a "module:attr" string, imported the first time the name is used, so `import pytest_tom` never loads torch,
hypothesis or a benchmark it does not run. Three sources fill it, in this order of precedence: the built-in table, an
entry-point group for installed third-party packages, and `add()` for what a pluggy hook (`pytest_tom_add_benchmarks`,
`pytest_tom_add_backends`) or a caller registers at run time. An unknown name is a configuration error that lists the
known ones and the nearest, so a typo is answered in one line.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from pytest_tom.errors import TomConfigError
from pytest_tom.suggest import did_you_mean, nearest

T = TypeVar("T")


def load_target(target: str) -> object:
    """Import "module:attr" and return the attribute."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


class LazyRegistry(Generic[T]):
    """Name -> object, imported from its "module:attr" target on first `get`. `what` names the kind of thing in messages
    ("benchmark"); `listing` is the word before the known names ("available", "known").
    """

    def __init__(self, what: str, builtin: Mapping[str, str], group: str | None = None, *,
                 listing: str = "known") -> None:
        self.what = what
        self.listing = listing
        self._builtin = dict(builtin)
        self._targets: dict[str, str | T] = dict(builtin)
        for ep in entry_points(group=group) if group else ():
            self._targets.setdefault(ep.name, ep.value)
        self._loaded: dict[str, T] = {}

    def add(self, name: str, obj: T | str) -> None:
        """Register `obj` (or a "module:attr" target) under `name`, replacing what the name held."""
        self._targets[name] = obj
        self._loaded.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._targets)

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def __iter__(self) -> Iterator[str]:
        """The names in registration order (built-in first)."""
        return iter(self._targets)

    def is_builtin(self, name: str) -> bool:
        """Whether `name` is still bound to its built-in target (not replaced by a third party)."""
        return name in self._builtin and self._targets.get(name) == self._builtin[name]

    def suggestion(self, name: str) -> str:
        """` (did you mean x?)` for a near miss, else empty."""
        hint = did_you_mean(nearest(name, self._targets))
        return f" ({hint})" if hint else ""

    def get(self, name: str) -> T:
        """The object registered under `name`, imported now if it was a target string."""
        if name in self._loaded:
            return self._loaded[name]
        if name not in self._targets:
            raise TomConfigError(f"unknown {self.what} {name!r}; {self.listing}: {', '.join(self.names())}"
                                 f"{self.suggestion(name)}")
        target = self._targets[name]
        obj: T = load_target(target) if isinstance(target, str) else target  # type: ignore[assignment]
        self._loaded[name] = obj
        return obj

    def loadable(self) -> list[T]:
        """Everything that imports, by name; a broken third-party entry must not break `pytest --help`."""
        out = []
        for name in self.names():
            try:
                out.append(self.get(name))
            except Exception:  # noqa: BLE001, S112
                continue
        return out
