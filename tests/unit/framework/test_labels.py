"""Classification scores read off free text: the official numbers over the answers read, what was not read beside
them, batch means with the population std, and the macro-F1 gate's units."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics

import numpy as np
import pytest

from pytest_tom.framework import labels
from pytest_tom.record import Outcome, Record
from pytest_tom.sample import Sample, Story
from pytest_tom.stats import macro_f1


def rec(i: int, gold: int | None, parsed: int | None, narrative: str = "n1") -> Record:
    outcome = (Outcome.UNPARSEABLE if parsed is None else Outcome.CORRECT if parsed == gold else Outcome.INCORRECT)
    return Record("b", f"q{i}", outcome, facets={"narrative": narrative}, parsed=parsed, gold=gold)


RECS = [rec(0, 1, 1), rec(1, 1, 2), rec(2, 2, 2), rec(3, 2, None), rec(4, None, 1, "n2")]


def test_scores_are_over_the_answers_read_with_the_rest_counted_beside() -> None:
    s = labels.scores(RECS)
    assert {k: s[k] for k in labels.COUNTS} == {"n": 5, "n_scored": 3, "unparseable": 1, "no_gold": 1}
    assert s["accuracy"] == pytest.approx(2 / 3)
    assert s["macro_f1"] == pytest.approx((2 / 3 + 2 / 3) / 2)  # label 1: 2TP/(2TP+FN)=2/3; label 2: 2/(2+1)
    assert s["accuracy_strict"] == pytest.approx(2 / 4)  # the unparseable answer is wrong, the no-gold item not asked
    assert s["corrupted_rate"] == pytest.approx(2 / 5)


def test_a_cell_with_nothing_read_has_no_rate_not_a_rate_of_zero() -> None:
    s = labels.scores([rec(0, 1, None), rec(1, 2, None)])
    assert (s["accuracy"], s["macro_f1"], s["accuracy_strict"], s["corrupted_rate"]) == (None, None, 0.0, 1.0)
    assert labels.scores([])["corrupted_rate"] is None


def test_spread_is_the_mean_and_population_std_and_undefined_with_a_batch_missing() -> None:
    assert labels.spread([0.5, 0.7, 0.9]) == (pytest.approx(0.7), pytest.approx(math.sqrt(0.08 / 3)))
    assert labels.spread([0.5, None]) == (None, None)
    assert labels.spread([]) == (None, None)


def test_a_cell_prints_its_rates_with_the_answers_read_as_n() -> None:
    ms = {m.name: m for m in labels.cell(("loc",), labels.scores(RECS), {"accuracy": "loc accuracy"}, "T")}
    assert (ms["loc.accuracy"].label, ms["loc.accuracy"].n, ms["loc.accuracy"].unit) == ("loc accuracy", 3, "rate")
    assert (ms["loc.macro_f1"].label, ms["loc.macro_f1"].n) == ("", 5)
    assert (ms["loc.unparseable"].value, ms["loc.unparseable"].unit) == (1, "count")


def test_batched_metrics_are_mean_std_and_per_batch() -> None:
    per = [labels.scores(RECS[:2]), labels.scores(RECS[2:])]
    ms = {m.name: m for m in labels.batched(("loc",), per, {"accuracy": "loc accuracy"}, "T", 5)}
    assert ms["loc.accuracy.per_batch"].value == (0.5, 1.0)
    mean = ms["loc.accuracy.mean"]
    assert (mean.value, mean.std, mean.n, mean.label) == (0.75, 0.25, 5, "loc accuracy (mean over 2 batches)")
    assert ms["loc.accuracy.std"].value == 0.25 and ms["loc.n.mean"].label == ""


def test_the_f1_gate_keeps_each_units_labels_and_marks_unparseable_as_a_class_of_its_own() -> None:
    data = labels.f1_gate("macro_f1.loc", RECS[:4], "narrative", "loc macro-F1")
    assert data.labels == ((1, 1), (1, 2), (2, 2), (2, -1))
    assert data.values == (1.0, 0.0, 1.0, 0.0) and data.clusters == ("n1",) * 4 and data.higher_is_better


def test_the_f1_gap_is_over_the_answers_read_of_each_side_and_absent_without_one() -> None:
    other = [rec(5, 1, 1, "n1"), rec(6, 2, 1, "n2"), rec(7, 1, None, "n2")]
    (gap,) = labels.f1_gap(("order_gap", "x"), "x: a minus b", "T", RECS, other, "narrative")
    read = RECS[:3], other[:2]  # the unparseable answers and the question without a gold are not read
    want = [macro_f1([r.gold for r in rs], [r.parsed for r in rs]) for rs in read]
    assert (gap.name, gap.unit, gap.n, gap.cluster) == ("order_gap.x", "points", 5, "narrative")
    assert gap.value == pytest.approx(want[0] - want[1]) and gap.interval is not None
    assert labels.f1_gap(("g",), "", "T", RECS, [rec(8, 1, None)], "narrative") == []


def test_the_unread_gate_is_a_unit_per_record_lower_is_better() -> None:
    g = labels.unread_gate("unparseable.x", RECS, "narrative", "d")
    assert (g.ids, g.values, g.clusters, g.higher_is_better) == (
        ("q0", "q1", "q2", "q3", "q4"), (0.0, 0.0, 0.0, 1.0, 0.0), ("n1", "n1", "n1", "n1", "n2"), False)


def test_spread_equals_numpy_to_the_last_bit_over_five_batches_where_statistics_does_not() -> None:
    values = [0.0, 0.05, 0.1, 0.15, 0.3]
    assert labels.spread(values) == (float(np.mean(values)), float(np.std(values)))
    assert (statistics.fmean(values), statistics.pstdev(values)) != labels.spread(values)  # the input tells them apart


def test_a_table_is_one_cell_or_its_batches_with_a_question_counted_in_each_batch_it_is_in() -> None:
    batches = ("1", "1 2", "2", "2", "10")
    batched = [dataclasses.replace(r, facets={**r.facets, "batch": b}) for r, b in zip(RECS, batches, strict=True)]
    plain = {m.name: m.value for m in labels.table(("loc",), RECS, labels.scores, {}, "T")}
    assert plain == {m.name: m.value for m in labels.cell(("loc",), labels.scores(RECS), {}, "T")}
    ms = {m.name: m for m in labels.table(("loc",), batched, labels.scores, {}, "T", batch="batch")}
    assert ms["loc.n.per_batch"].value == (2, 3, 1)  # batches 1, 2 and 10, in number order; q1 counts in 1 and 2
    assert ms["loc.accuracy.per_batch"].value == (0.5, 0.5, None) and ms["loc.n.mean"].n == 5


def test_chunks_reshuffle_a_fresh_copy_while_batches_are_wanted() -> None:
    keys = [f"k{i}" for i in range(7)]
    rng, want = random.Random(3), list[list[str]]()
    while len(want) < 3:  # the official procedure: a fresh copy of the keys in file order, shuffled, cut in chunks
        rng.shuffle(order := list(keys))
        want += [order[:5], order[5:]]
    assert labels.chunks(keys, 3, 5, 3) == want[:3] and len(want[0]) == 5 and len(want[2]) == 5
    assert labels.chunks(keys, 2, 5, 3) == want[:2]


def test_in_batches_keeps_each_sample_once_with_every_batch_that_keeps_it() -> None:
    samples = [Sample("b", f"s{i}", Story("x"), "q?", (), "g", (), {}, (), None) for i in range(4)]
    kept = labels.in_batches(samples, 3, lambda s, b: int(s.id[1]) % 3 == b or s.id == "s2")
    assert [(s.id, s.facets["batch"]) for s in kept] == [("s0", "1"), ("s1", "2"), ("s2", "1 2 3"), ("s3", "1")]
    assert labels.in_batches(samples, 2, lambda s, b: s.id == "s1")[0].facets == {"batch": "1 2"}
