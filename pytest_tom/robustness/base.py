"""What a perturbation is, what a benchmark tells the strategies, and the registry of strategies. A strategy is a
hypothesis strategy over `Perturbation`s of one sample, built per sample because what can change depends on it (its
characters, choices, story); it refuses, when built, a sample it cannot change soundly, so a test never silently checks
nothing. Draws are arranged so hypothesis shrinks toward the smallest change: one rename, the nearest swap, one inserted
sentence. The generic strategies know no benchmark: a benchmark offers more through its `robustness` attribute, the
"module:attr" of a `Perturbable`, imported the first time a strategy asks about it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pytest_tom.errors import TomConfigError
from pytest_tom.registry import LazyRegistry, load_target
from pytest_tom.sample import Sample

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from pytest_tom.evals import Registry

Kind = Literal["invariance", "counterfactual"]

Rewrite = str | Callable[[re.Match[str]], str]
"""A rephrasing's replacement: a `re.sub` template or a function of the match."""


@dataclass(frozen=True, slots=True, repr=False)
class Perturbation:
    strategy: str
    kind: Kind
    sample: Sample[Any]
    """The rewritten sample, asked exactly as rewritten (its gold remapped or changed where needed)."""
    change: str
    """What changed, for failure messages ("renamed Priya -> Maya")."""
    size: int
    """How many elementary edits: what shrinking minimises."""

    def __repr__(self) -> str:
        """Short: hypothesis prints it for every falsifying example, and a sample can hold a 60 KB context."""
        return f"Perturbation({self.strategy}: {self.change}; {self.size} edit(s))"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis' pretty printer would otherwise print every field of the sample."""
        printer.text(repr(self))

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "kind": self.kind, "change": self.change, "size": self.size,
                "gold": self.sample.gold if isinstance(self.sample.gold, str) else list(self.sample.gold)}


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """A named strategy: what it changes, where it applies, and how to build it for a sample."""

    name: str
    kind: Kind
    fields: tuple[str, ...]
    """The sample fields it rewrites ("context", "question", "choices", "gold", "characters", "extra")."""
    benchmarks: tuple[str, ...]
    """Benchmarks whose structure allows it ("*": any whose sample has the needed structure)."""
    why_not: Callable[[Sample[Any]], str | None]
    """None when the strategy can change this sample soundly, else the reason it cannot."""
    build: Callable[[Sample[Any]], SearchStrategy[Perturbation]]
    doc: str

    def refusal(self, sample: Sample[Any]) -> str | None:
        """Why this strategy cannot change `sample` (another benchmark, or its own `why_not`), None when it can."""
        if "*" not in self.benchmarks and sample.benchmark not in self.benchmarks:
            return f"strategy {self.name!r} applies to {', '.join(self.benchmarks)}, not {sample.benchmark} (sample {sample.id})"
        reason = self.why_not(sample)
        return None if reason is None else f"strategy {self.name!r} cannot change {sample.benchmark} sample {sample.id}: {reason}"

    def applies(self, sample: Sample[Any]) -> bool:
        return self.refusal(sample) is None

    def strategy(self, sample: Sample[Any]) -> SearchStrategy[Perturbation]:
        """The hypothesis strategy for `sample`; raises `InvalidArgument` for a sample it does not apply to."""
        from hypothesis.errors import InvalidArgument

        if (why := self.refusal(sample)) is not None:
            raise InvalidArgument(why)
        return self.build(sample)


@dataclass(frozen=True, slots=True)
class Perturbable:
    """What a benchmark tells the generic strategies about its samples (the default: nothing)."""

    rephrasings: tuple[tuple[re.Pattern[str], Rewrite], ...] = ()
    """Meaning-preserving templates for its question shapes (`rephrase`); a question none matches is left alone."""
    text_facets: tuple[str, ...] = ()
    """Facets that hold text a rename must rewrite (an asked character)."""
    narrative: bool = False
    """Its stories may take sentences about nobody between theirs (`irrelevant`): nobody's presence hangs on a line."""
    strategies: Mapping[str, str] = field(default_factory=dict)
    """Strategies only this benchmark supports: name -> "module:attr" of their `StrategySpec`."""


NOTHING = Perturbable()

GENERIC: dict[str, str] = {name: f"pytest_tom.robustness.invariance:{name.upper()}"
                           for name in ("rename", "permute", "irrelevant", "whitespace", "rephrase")}


@functools.cache
def _benchmarks() -> Registry:
    from pytest_tom.evals import Registry

    return Registry()


@functools.cache
def perturbable(benchmark: str) -> Perturbable:
    """The benchmark's `Perturbable` (NOTHING for one that declares none or is not installed)."""
    try:
        target = getattr(_benchmarks().get(benchmark), "robustness", None)
    except TomConfigError:
        return NOTHING
    found = load_target(target) if target else NOTHING
    assert isinstance(found, Perturbable)
    return found


_ADDED: dict[str, StrategySpec] = {}
"""Strategies `register`ed in this process, on top of every registry built after."""


def registry() -> LazyRegistry[StrategySpec]:
    """Every strategy: the benchmarks' own first (counterfactuals), the generic ones, entry points, then `register`.
    Built afresh on each call (a few per run): a cached one would keep the strategies of modules that pytester's
    in-process runs drop, bound to a hypothesis they dropped too.
    """
    owned: dict[str, str] = {}
    for cls in _benchmarks().loadable():
        owned.update(perturbable(cls.name).strategies)
    found: LazyRegistry[StrategySpec] = LazyRegistry("robustness strategy", {**owned, **GENERIC}, "pytest_tom.strategies")
    for name, spec in _ADDED.items():
        found.add(name, spec)
    return found


def register(spec: StrategySpec) -> StrategySpec:
    """Add a strategy (third parties may register their own before the run collects)."""
    _ADDED[spec.name] = spec
    return spec


def resolve(names: str | list[str] | tuple[str, ...]) -> list[StrategySpec]:
    """Specs for a comma-separated list (or "all"); an unknown name is a configuration error listing the known ones."""
    known = registry()
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    if wanted == ["all"]:
        return [known.get(n) for n in known]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise TomConfigError(f"unknown robustness strategy {unknown[0]!r}; known: {', '.join(known)} (or all)"
                             f"{known.suggestion(unknown[0])}")
    return [known.get(n) for n in dict.fromkeys(wanted)]


def reason(fn: Callable[[Sample[Any]], object], *errors: type[Exception]) -> Callable[[Sample[Any]], str | None]:
    """A `why_not` from a strategy function: the message of the `InvalidArgument` (or `errors`) it raises, or None."""
    def why_not(sample: Sample[Any]) -> str | None:
        from hypothesis.errors import InvalidArgument

        caught: tuple[type[Exception], ...] = (InvalidArgument, *errors)
        try:
            fn(sample)
        except caught as exc:
            return str(exc)
        return None
    return why_not
