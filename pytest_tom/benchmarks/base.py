"""The contract every benchmark module fulfils.

A benchmark turns its official data into `Question`s, tells the engine which model
requests each question needs (`solve`, a generator, so a later request can depend
on an earlier answer), scores the answers, and aggregates results the way its
paper does. It never imports pytest: the plugin adapts it.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pytest_tom.errors import TomConfigError
from pytest_tom.types import Group, ItemResult, Question, Request, Response

Program = Generator[Sequence[Request], Sequence[Response], ItemResult]
"""A question's conversation with the engine: yield requests, receive responses, return a result."""


@dataclass(frozen=True, slots=True)
class BenchmarkOption:
    """A benchmark-specific setting, exposed as `--tom-<benchmark>-<name>` and as a suite keyword."""

    name: str
    default: str
    help: str
    choices: tuple[str, ...] = ()
    kind: type = str

    def convert(self, benchmark: str, raw: Any) -> Any:
        if isinstance(raw, str) and self.kind is not str:
            try:
                value = self.kind(raw)
            except ValueError as exc:
                raise TomConfigError(f"{benchmark} setting {self.name}={raw!r}: expected {self.kind.__name__}") from exc
        else:
            value = raw
        if self.choices:
            values = value.split(",") if isinstance(value, str) else list(value)
            bad = [v for v in values if v not in self.choices]
            if bad:
                raise TomConfigError(
                    f"{benchmark} setting {self.name}={raw!r}: {bad[0]!r} is not one of {', '.join(self.choices)}"
                )
        return value


@dataclass(frozen=True, slots=True)
class DataSource:
    """Where benchmark data lives: a local root folder, and whether downloading is allowed."""

    root: Path | None
    download: bool
    cache_dir: Path


class Benchmark(ABC):
    """Base class of a benchmark; subclasses are registered by name in `benchmarks/__init__.py`."""

    name: ClassVar[str]
    description: ClassVar[str]
    options: ClassVar[tuple[BenchmarkOption, ...]] = ()
    mark_docs: ClassVar[Mapping[str, str]] = {}
    """Every mark this benchmark may put on an item, with its `pytest --markers` text."""
    strata: ClassVar[tuple[str, ...]] = ()
    """Facets that define the strata for `--tom-sample`."""
    summary_facets: ClassVar[tuple[tuple[str, ...], ...]] = ()
    """Facet combinations the terminal summary tabulates, in order."""

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        given = dict(settings or {})
        known = {o.name: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise TomConfigError(
                f"{self.name} has no setting {unknown[0]!r}; known settings: {', '.join(sorted(known)) or 'none'}"
            )
        self.settings: dict[str, Any] = {}
        for opt in self.options:
            raw = given.get(opt.name, opt.default)
            self.settings[opt.name] = opt.convert(self.name, raw)

    @abstractmethod
    def load(self, source: DataSource) -> list[Question]:
        """Read the official data and return the questions in a stable order."""

    @abstractmethod
    def solve(self, question: Question) -> Program:
        """Yield the requests `question` needs and return its scored result."""

    def groups(self, questions: Sequence[Question]) -> list[Group]:
        """Consistency groups (all members must pass); none by default."""
        return []

    def metrics(self, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The paper's aggregate metrics over result records (`ItemResult.to_dict()`), JSON-serialisable.

        Records rather than objects, because under pytest-xdist they arrive on the
        controller through serialised test reports.
        """
        return {}

    def metric_lines(self, metrics: Mapping[str, Any]) -> list[str]:
        """Terminal lines for `metrics`."""
        return []

    def describe(self) -> dict[str, Any]:
        """What the report records about this benchmark's configuration."""
        return {"name": self.name, "settings": dict(self.settings)}


@functools.lru_cache(maxsize=4096)
def slug(text: str) -> str:
    """Lower-case identifier usable as a mark name and in node ids."""
    out = []
    prev_us = False
    for ch in text.lower():
        if ch.isascii() and ch.isalnum():
            out.append(ch)
            prev_us = False
        elif not prev_us:
            out.append("_")
            prev_us = True
    return "".join(out).strip("_")


def first_existing(paths: Iterable[Path]) -> Path | None:
    for p in paths:
        if p.exists():
            return p
    return None
