"""Metric helpers (intervals, tallies, tables, averages) and stratified sampling."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tom.engine.suites import stratified_sample
from pytest_tom.metrics import Tally, accuracy, facet_table, group_by, mean, tally, wilson_interval
from pytest_tom.record import Outcome, Record


def rec(outcome: str, parse_rate: float = 1.0, **facets: str) -> Record:
    return Record("t", f"q{id(facets)}", Outcome(outcome), facets, parse_rate=parse_rate)


def test_wilson_interval_known_values() -> None:
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    lo, hi = wilson_interval(0, 1)
    assert lo == 0.0 and hi == pytest.approx(0.7935, abs=1e-4)
    lo, hi = wilson_interval(100, 100)
    assert lo == pytest.approx(0.9630, abs=1e-4) and hi == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


@given(st.integers(min_value=1, max_value=5000).flatmap(lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))))
def test_wilson_interval_holds_the_rate_and_stays_in_the_unit_interval(case: tuple[int, int]) -> None:
    k, n = case
    lo, hi = wilson_interval(k, n)
    # (a rounding error of 1e-16 around the rate itself is harmless: wilson(0, 3) gives lo = 5.6e-17)
    assert 0.0 <= lo <= k / n + 1e-12 and k / n - 1e-12 <= hi <= 1.0
    assert lo < hi


def test_tally_leaves_errors_out_of_the_denominator() -> None:
    t = tally([rec("correct"), rec("error", parse_rate=0.0), rec("unparseable", parse_rate=0.0)])
    assert (t.n, t.correct, t.errors, t.unparseable) == (2, 1, 1, 1)
    assert t.accuracy == 0.5 and t.parse_rate == 0.5


def test_tally_leaves_a_question_without_a_gold_out_of_every_count() -> None:
    t = tally([rec("correct"), rec("unscored", parse_rate=1.0), rec("incorrect")])
    assert (t.n, t.correct, t.errors, t.unparseable, t.accuracy, t.parse_rate) == (2, 1, 0, 0, 0.5, 1.0)
    assert tally([rec("unscored")]).accuracy is None


def test_tally_of_nothing_or_only_errors_has_no_accuracy() -> None:
    assert tally([]) == Tally(n=0, correct=0, unparseable=0, errors=0, parse_rate=0.0)
    t = tally([rec("error")])
    assert t.n == 0 and t.errors == 1 and t.accuracy is None and t.interval == (0.0, 1.0)
    assert t.to_dict()["accuracy"] is None


def test_tally_as_the_report_stores_it() -> None:
    d = tally([rec("correct"), rec("incorrect"), rec("correct"), rec("unparseable", parse_rate=0.5)]).to_dict()
    lo, hi = wilson_interval(2, 4)
    assert d == {"n": 4, "correct": 2, "accuracy": 0.5, "ci95": [lo, hi], "unparseable": 1, "errors": 0, "parse_rate": 0.875}


def test_accuracy_is_micro_over_scored_records() -> None:
    assert accuracy([rec("correct"), rec("incorrect"), rec("unparseable"), rec("error")]) == pytest.approx(1 / 3)
    assert accuracy([rec("error")]) is None
    assert accuracy([]) is None


def test_mean() -> None:
    assert mean([1.0, 2.0, 6.0]) == 3.0
    assert mean([]) is None
    assert mean(iter([0.5])) == 0.5


def test_facet_table_groups_in_first_seen_order() -> None:
    records = [rec("correct", language="zh", task="b"), rec("incorrect", language="en", task="a"),
               rec("correct", language="zh", task="a"), rec("error", language="en", task="a")]
    by_language = facet_table(records, ["language"])
    assert [row["facets"] for row in by_language] == [{"language": "zh"}, {"language": "en"}]
    assert [(row["n"], row["correct"], row["errors"]) for row in by_language] == [(2, 2, 0), (1, 0, 1)]
    overall = facet_table(records, [])
    assert len(overall) == 1 and overall[0]["facets"] == {} and overall[0]["n"] == 3
    two = facet_table(records, ["language", "task"])
    assert [row["facets"] for row in two] == [{"language": "zh", "task": "b"}, {"language": "en", "task": "a"},
                                              {"language": "zh", "task": "a"}]
    missing = facet_table([rec("correct")], ["language"])
    assert missing[0]["facets"] == {"language": ""}
    assert facet_table([], ["language"]) == []


def test_group_by_one_facet() -> None:
    a, b, c = rec("correct", character="Ann"), rec("incorrect", character="Bo"), rec("correct", character="Ann")
    groups = group_by([a, b, c], "character")
    assert list(groups) == ["Ann", "Bo"] and groups["Ann"] == [a, c] and groups["Bo"] == [b]
    assert group_by([a], "absent") == {"": [a]}


# -- stratified sampling -----------------------------------------------------------------------------------------


def _entries() -> list[tuple[str, tuple[str, ...]]]:
    big = [(f"a{i}", ("en", "big")) for i in range(80)]
    return big + [(f"b{i}", ("en", "small")) for i in range(18)] + [("c0", ("en", "rare"))]


def test_sample_is_proportional_keeps_rare_strata_and_is_deterministic() -> None:
    picked = stratified_sample(_entries(), 10, seed=1)
    assert len(picked) == 10
    counts = Counter(p[0] for p in picked)
    assert counts["c"] == 1 and counts["a"] >= 6 and counts["b"] >= 1
    assert picked == stratified_sample(_entries(), 10, seed=1)
    assert picked != stratified_sample(_entries(), 10, seed=2)


def test_sample_allocates_by_largest_remainder() -> None:
    entries = [(f"{s}{i}", (s,)) for s, size in (("x", 50), ("y", 30), ("z", 20)) for i in range(size)]
    # one each, then 7 by quota (3.5, 2.1, 1.4): floors 3, 2, 1 and the largest remainder (x) takes the last
    assert Counter(p[0] for p in stratified_sample(entries, 10, seed=0)) == {"x": 5, "y": 3, "z": 2}
    # fewer picks than strata: no stratum is guaranteed, quotas decide
    assert Counter(p[0] for p in stratified_sample(entries, 2, seed=0)) == {"x": 1, "y": 1}


def test_sample_does_not_depend_on_the_order_of_entries() -> None:
    entries = _entries()
    assert stratified_sample(entries, 12, seed=3) == stratified_sample(list(reversed(entries)), 12, seed=3)


def test_sample_larger_than_population_keeps_everything() -> None:
    assert len(stratified_sample(_entries(), 1000, seed=0)) == 99
    assert stratified_sample(_entries(), 99, seed=0) == {e[0] for e in _entries()}


def test_sample_has_exactly_the_size_asked_for_when_small_strata_fill_up() -> None:
    entries = [(f"s{i}", (f"s{i}",)) for i in range(10)] + [(f"L{i}", ("L",)) for i in range(20)]
    assert len(stratified_sample(entries, 26, seed=0)) == 26


@st.composite
def populations(draw: Any) -> tuple[list[tuple[str, tuple[str, ...]]], int, int]:
    sizes = draw(st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=8))
    entries = [(f"{s}-{i}", (f"stratum{s}",)) for s, size in enumerate(sizes) for i in range(size)]
    n = draw(st.integers(min_value=1, max_value=len(entries)))
    return entries, n, draw(st.integers(min_value=0, max_value=3))


@settings(max_examples=200, deadline=None)
@given(populations())
def test_sample_invariants(case: tuple[list[tuple[str, tuple[str, ...]]], int, int]) -> None:
    entries, n, seed = case
    picked = stratified_sample(entries, n, seed)
    assert picked <= {e[0] for e in entries}
    assert len(picked) <= n
    strata = {e[1] for e in entries}
    if n >= len(strata):
        assert {e[1] for e in entries if e[0] in picked} == strata  # no stratum is sampled away
    assert picked == stratified_sample(list(reversed(entries)), n, seed)
