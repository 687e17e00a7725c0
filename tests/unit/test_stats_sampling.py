"""Intervals and stratified sampling."""

from __future__ import annotations

from collections import Counter

import pytest

from pytest_tom.session import stratified_sample
from pytest_tom.stats import tally, wilson_interval


def test_wilson_interval_known_values() -> None:
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    lo, hi = wilson_interval(0, 1)
    assert lo == 0.0 and hi == pytest.approx(0.7935, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_tally_leaves_errors_out_of_the_denominator() -> None:
    t = tally([{"outcome": "correct"}, {"outcome": "error"}, {"outcome": "unparseable", "parse_rate": 0.0}])
    assert (t.n, t.correct, t.errors, t.unparseable) == (2, 1, 1, 1)
    assert t.accuracy == 0.5 and t.parse_rate == 0.5


def _entries() -> list[tuple[str, tuple[str, ...]]]:
    return [(f"a{i}", ("en", "big")) for i in range(80)] + [(f"b{i}", ("en", "small")) for i in range(18)] + [("c0", ("en", "rare"))] * 1


def test_sample_is_proportional_keeps_rare_strata_and_is_deterministic() -> None:
    picked = stratified_sample(_entries(), 10, seed=1)
    assert len(picked) == 10
    counts = Counter(p[0] for p in picked)
    assert counts["c"] == 1 and counts["a"] >= 6 and counts["b"] >= 1
    assert picked == stratified_sample(_entries(), 10, seed=1)
    assert picked != stratified_sample(_entries(), 10, seed=2)


def test_sample_larger_than_population_keeps_everything() -> None:
    assert len(stratified_sample(_entries(), 1000, seed=0)) == 99
