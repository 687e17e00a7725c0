"""Combining several tries of one question into one answer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def majority(votes: Sequence[str]) -> str:
    """Most frequent vote; ties go to the vote recorded first (ToMBench upstream's sequential runner)."""
    counts = Counter(votes)
    best = max(counts.values())
    return next(v for v in votes if counts[v] == best)
