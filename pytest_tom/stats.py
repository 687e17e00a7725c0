"""Small, dependency-free statistics for accuracies and their intervals."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval: unlike the normal approximation it stays inside [0, 1] for small n."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return sum(vals) / len(vals) if vals else None


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
        lo, hi = self.interval
        return {
            "n": self.n,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "ci95": [lo, hi],
            "unparseable": self.unparseable,
            "errors": self.errors,
            "parse_rate": self.parse_rate,
        }


def tally(records: Sequence[Mapping[str, Any]]) -> Tally:
    """Count outcomes of result records (dicts with "outcome" and "parse_rate")."""
    correct = unparseable = errors = 0
    rates = []
    for r in records:
        outcome = r["outcome"]
        if outcome == "error":
            errors += 1
            continue
        if outcome == "correct":
            correct += 1
        elif outcome == "unparseable":
            unparseable += 1
        rates.append(float(r.get("parse_rate", 1.0)))
    n = len(rates)
    return Tally(n=n, correct=correct, unparseable=unparseable, errors=errors, parse_rate=sum(rates) / n if n else 0.0)
