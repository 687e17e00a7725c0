"""Macro-F1 (scikit-learn's macro average over the labels of gold and predictions) and its comparison: the comparison's
points are macro-F1 computed by hand here, its decision follows a real drop and not a tie, and it resamples clusters."""

from __future__ import annotations

import math
import random

import pytest

from pytest_tom.stats import compare_macro_f1, macro_f1, macro_f1_gap


def hand_f1(gold: list[int], pred: list[int]) -> float:
    per = []
    for lab in set(gold) | set(pred):
        tp = sum(g == p == lab for g, p in zip(gold, pred, strict=True))
        fp = sum(p == lab != g for g, p in zip(gold, pred, strict=True))
        fn = sum(g == lab != p for g, p in zip(gold, pred, strict=True))
        per.append(2 * tp / (2 * tp + fp + fn))
    return sum(per) / len(per)


def test_macro_f1_is_the_mean_over_gold_and_predicted_labels() -> None:
    # label 1: tp 1, fp 1, fn 1 -> 0.5; label 2: tp 1, fp 0, fn 1 -> 2/3; label 3 (predicted only): 0
    assert macro_f1([1, 1, 2, 2], [1, 3, 2, 1]) == pytest.approx((0.5 + 2 / 3 + 0) / 3)
    assert macro_f1([0, 1], [0, 1]) == 1.0


def test_the_points_are_macro_f1_with_the_union_of_labels() -> None:
    gold, base, new = [1, 1, 2, 2, 3], [1, 1, 2, 2, 3], [1, 3, 2, 1, 3]
    c = compare_macro_f1(gold, base, new, resamples=50)
    assert c.base == 1.0 and c.new == pytest.approx(hand_f1(gold, new))
    assert (c.right_to_wrong, c.wrong_to_right, c.n_pairs) == (2, 0, 5) and math.isnan(c.mcnemar_p)


def test_a_real_drop_regresses_and_the_same_run_does_not() -> None:
    rng = random.Random(1)
    gold = [rng.choice([1, 2, 3]) for _ in range(600)]
    stories = [i // 6 for i in range(600)]
    good = [g if rng.random() < 0.9 else rng.choice([1, 2, 3]) for g in gold]
    bad = [g if rng.random() < 0.6 else rng.choice([1, 2, 3]) for g in gold]
    drop = compare_macro_f1(gold, good, bad, stories)
    assert drop.regressed and drop.diff.high < 0 and drop.diff.clusters == 100 and drop.p_regression < 0.01
    same = compare_macro_f1(gold, good, good, stories)
    assert not same.regressed and same.diff.point == 0 and same.p_regression == 1.0
    assert not compare_macro_f1(gold, good, bad, stories, margin=0.5).regressed


def pairs(rng: random.Random, n: int, right: float) -> list[tuple[int, int]]:
    gold = [rng.choice([1, 2, 3]) for _ in range(n)]
    return [(g, g if rng.random() < right else rng.choice([1, 2, 3])) for g in gold]


def test_the_gap_of_two_groups_is_their_macro_f1_difference_with_each_groups_own_labels() -> None:
    a, b = [(1, 1), (2, 2), (2, 1)], [(1, 1), (3, 3), (1, 2), (2, 2)]
    gap = macro_f1_gap(a, ["s1", "s2", "s2"], b, ["s1", "s1", "s2", "s3"], resamples=200)
    assert gap.point == pytest.approx(hand_f1([1, 2, 2], [1, 2, 1]) - hand_f1([1, 3, 1, 2], [1, 3, 2, 2]))
    assert (gap.n, gap.clusters) == (7, 3) and gap.low <= gap.point <= gap.high
    same = macro_f1_gap(a, ["s1", "s2", "s2"], a, ["s1", "s2", "s2"], resamples=200)
    assert (same.point, same.low, same.high) == (0.0, 0.0, 0.0)  # one draw for both groups: a paired bootstrap
    with pytest.raises(ValueError, match="two non-empty groups"):
        macro_f1_gap([], [], b, ["s1", "s1", "s2", "s3"])


def test_the_gap_interval_resamples_whole_clusters_and_finds_a_real_gap() -> None:
    rng = random.Random(3)
    stories = [i // 6 for i in range(600)]
    wide = [rng.random() < 0.5 for _ in range(100)]  # the gap is a story's: wide in half of them, none in the others
    a = [x for s in stories for x in pairs(rng, 1, 0.95 if wide[s] else 0.5)]
    b = [x for s in stories for x in pairs(rng, 1, 0.3 if wide[s] else 0.5)]
    gap = macro_f1_gap(a, stories, b, stories)
    assert gap.low > 0.05 and gap.clusters == 100 and "2000 resamples, 100 clusters" in gap.method
    one = macro_f1_gap(a, [0] * 600, b, [0] * 600, resamples=100)  # one cluster: every draw is the whole data
    assert one.low == one.point == one.high
    alone = macro_f1_gap(a, range(600), b, range(600))  # each pair of items its own cluster: too narrow here
    assert alone.point == gap.point and alone.high - alone.low < gap.high - gap.low
