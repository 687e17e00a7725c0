"""Macro-F1 (scikit-learn's macro average over the labels of gold and predictions) and its comparison: the comparison's
points are macro-F1 computed by hand here, its decision follows a real drop and not a tie, and it resamples clusters."""

from __future__ import annotations

import math
import random

import pytest

from pytest_tom.stats import compare_macro_f1, macro_f1


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
