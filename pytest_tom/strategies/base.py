"""What a perturbation is, and the registry of strategies that draw them.

A strategy is a hypothesis strategy over `Perturbation`s of one sample: the rewritten sample,
what changed in words, how big the change is, and whether the change must leave the answer's
correctness alone (invariance) or changes the gold (counterfactual). Strategies are built per
sample because what can change depends on it (its characters, its choices, its story); each
spec says which benchmarks and fields it touches and refuses, when built, a sample it cannot
change soundly, so a test never silently checks nothing. Draws are arranged so hypothesis
shrinks toward the smallest change: one rename, the nearest swap, one inserted sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pytest_tom.sample import Sample

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

Kind = Literal["invariance", "counterfactual"]


@dataclass(frozen=True, slots=True, repr=False)
class Perturbation:
    """One drawn change of one sample."""

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

    def applies(self, sample: Sample[Any]) -> bool:
        if "*" not in self.benchmarks and sample.benchmark not in self.benchmarks:
            return False
        return self.why_not(sample) is None

    def strategy(self, sample: Sample[Any]) -> SearchStrategy[Perturbation]:
        """The hypothesis strategy for `sample`; raises `InvalidArgument` for a sample it does not apply to."""
        from hypothesis.errors import InvalidArgument

        if "*" not in self.benchmarks and sample.benchmark not in self.benchmarks:
            raise InvalidArgument(f"strategy {self.name!r} applies to {', '.join(self.benchmarks)}, not "
                                  f"{sample.benchmark} (sample {sample.id})")
        reason = self.why_not(sample)
        if reason is not None:
            raise InvalidArgument(f"strategy {self.name!r} cannot change {sample.benchmark} sample {sample.id}: {reason}")
        return self.build(sample)


REGISTRY: dict[str, StrategySpec] = {}


def register(spec: StrategySpec) -> StrategySpec:
    """Add a strategy (third parties may register their own before the run collects)."""
    REGISTRY[spec.name] = spec
    return spec


def describe(specs: Mapping[str, StrategySpec] | None = None) -> list[dict[str, Any]]:
    """The registry as data (for the report and --markers)."""
    return [{"name": s.name, "kind": s.kind, "fields": list(s.fields), "benchmarks": list(s.benchmarks), "doc": s.doc}
            for s in (specs or REGISTRY).values()]
