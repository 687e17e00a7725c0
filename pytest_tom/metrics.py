"""Metric helpers every benchmark shares: accuracy with intervals, per-facet tables, micro and macro means. Errors are
never answers, so they are counted but left out of every denominator; unparseable answers are in the denominator (they
are wrong answers a parser could not read) and counted apart; a question without a gold (`Outcome.UNSCORED`) is in none.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_tom.record import Outcome, Record
from pytest_tom.sample import Sample
from pytest_tom.stats import wilson_z

Z95 = 1.959963984540054
F = TypeVar("F", Record, Sample[Any])


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval: unlike the normal approximation it stays inside [0, 1] for small n."""
    return wilson_z(successes / n, n, z) if n > 0 else (0.0, 1.0)


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, None for no values (a macro average over nothing is undefined, not 0)."""
    vals = list(values)
    return sum(vals) / len(vals) if vals else None


def accuracy(records: Iterable[Record]) -> float | None:
    """Micro accuracy over scored (non-error) records."""
    return tally(records).accuracy


@dataclass(frozen=True, slots=True)
class Tally:
    """Accuracy of a set of items, with the counts that explain it."""

    n: int
    """Scored items: correct + incorrect + unparseable (errors are not answers)."""
    correct: int
    unparseable: int
    errors: int
    parse_rate: float

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.correct, self.n)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "correct": self.correct, "accuracy": self.accuracy, "ci95": list(self.interval),
                "unparseable": self.unparseable, "errors": self.errors, "parse_rate": self.parse_rate}


def tally(records: Iterable[Record]) -> Tally:
    """Errors are counted apart and unscored questions (no gold) not at all: neither is an answer judged."""
    records = list(records)
    counts = Counter(r.outcome for r in records)
    rates = [r.parse_rate for r in records if r.scored]
    n = len(rates)
    return Tally(n=n, correct=counts[Outcome.CORRECT], unparseable=counts[Outcome.UNPARSEABLE],
                 errors=counts[Outcome.ERROR], parse_rate=sum(rates) / n if n else 0.0)


def groups(items: Iterable[F], facets: Sequence[str]) -> dict[tuple[str, ...], list[F]]:
    """Records or samples grouped by their values of `facets` (a missing facet reads ""), in first-seen order."""
    out: dict[tuple[str, ...], list[F]] = defaultdict(list)
    for x in items:
        out[tuple(str(x.facets.get(f, "")) for f in facets)].append(x)
    return dict(out)


def facet_table(records: Sequence[Record], facets: Sequence[str]) -> list[dict[str, Any]]:
    """Tally records grouped by the values of `facets`, in first-seen order."""
    return [{"facets": dict(zip(facets, key, strict=True)), **tally(rs).to_dict()} for key, rs in groups(records, facets).items()]


def group_by(records: Iterable[Record], facet: str) -> dict[str, list[Record]]:
    """Records grouped by one facet's value, in first-seen order."""
    return {key: rs for (key,), rs in groups(records, (facet,)).items()}
