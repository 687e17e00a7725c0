"""The gate statistics: known values, edge cases, determinism, and a quick version of the simulation proof."""

from __future__ import annotations

import importlib.util
import math
import sys
from math import comb
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from pytest_tom.stats import (
    Comparison,
    Estimate,
    _widen,
    compare_paired,
    estimate_rate,
    flip_rate,
    gate,
    holm,
    mcnemar_exact,
    wilson,
)

REPO = Path(__file__).resolve().parents[2]


def _paired(b: int, c: int, same_right: int = 5, same_wrong: int = 5) -> tuple[list[float], list[float]]:
    """Runs with b right->wrong, c wrong->right and some concordant items."""
    base = [1.0] * b + [0.0] * c + [1.0] * same_right + [0.0] * same_wrong
    new = [0.0] * b + [1.0] * c + [1.0] * same_right + [0.0] * same_wrong
    return base, new


# ---- McNemar ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("b", "c"), [(0, 1), (1, 0), (3, 0), (0, 3), (7, 2), (2, 9), (5, 5), (4, 6), (12, 3)])
def test_mcnemar_exact_matches_the_binomial_formula_and_binomtest(b: int, c: int) -> None:
    n = b + c
    tail_up = sum(comb(n, j) for j in range(b, n + 1)) / 2**n
    tail_low = sum(comb(n, j) for j in range(0, b + 1)) / 2**n
    two, one = mcnemar_exact(b, c)
    assert one == pytest.approx(tail_up, rel=1e-12)
    assert two == pytest.approx(min(1.0, 2 * min(tail_up, tail_low)), rel=1e-12)
    assert two == pytest.approx(binomtest(b, n, 0.5).pvalue, rel=1e-9)
    assert one == pytest.approx(binomtest(b, n, 0.5, alternative="greater").pvalue, rel=1e-9)


def test_mcnemar_by_hand_and_no_discordant_items() -> None:
    # b=7, c=2: 2 * (C(9,0) + C(9,1) + C(9,2)) / 2^9 = 2 * 46 / 512
    assert mcnemar_exact(7, 2) == pytest.approx((92 / 512, 46 / 512))
    assert mcnemar_exact(0, 0) == (1.0, 1.0)
    base, new = _paired(7, 2)
    comp = compare_paired(base, new)
    assert (comp.right_to_wrong, comp.wrong_to_right, comp.n_pairs) == (7, 2, 19)
    assert comp.mcnemar_p == pytest.approx(92 / 512)


# ---- Holm ---------------------------------------------------------------------------------------


def test_holm_on_a_textbook_example() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06.
    got = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005}, 0.05)
    assert list(got) == ["a", "b", "c", "d"]  # the order given
    assert {k: round(v[0], 10) for k, v in got.items()} == {"a": 0.03, "b": 0.06, "c": 0.06, "d": 0.02}
    assert {k: v[1] for k, v in got.items()} == {"a": True, "b": False, "c": False, "d": True}


def test_holm_caps_at_one_and_is_bonferroni_on_one_test() -> None:
    assert holm({"x": 0.5, "y": 0.6}, 0.05) == {"x": (1.0, False), "y": (1.0, False)}
    assert holm({"x": 0.03}, 0.05) == {"x": (0.03, True)}
    assert holm({}, 0.05) == {}


def test_holm_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="alpha"):
        holm({"x": 0.1}, 0.0)
    with pytest.raises(ValueError, match="'x'"):
        holm({"x": float("nan")}, 0.05)
    with pytest.raises(ValueError, match="'x'"):
        holm({"x": 1.5}, 0.05)


def test_gate_applies_holm_across_comparisons() -> None:
    base, new = _paired(12, 0, 30, 30)
    hit = compare_paired(base, new)
    miss = compare_paired(*_paired(2, 2))
    gated = gate({"hit": hit, "miss": miss, "miss2": miss}, 0.05)
    assert gated["hit"].p_adjusted == pytest.approx(min(1.0, 3 * hit.p_regression))
    assert gated["hit"].regressed and not gated["miss"].regressed
    assert gated["miss"].p_adjusted == 1.0


# ---- estimate_rate ------------------------------------------------------------------------------


def test_cluster_interval_is_wider_than_wilson_when_stories_are_all_or_nothing() -> None:
    # 20 stories of 10 items, each story wholly right or wholly wrong: 20 independent units, not 200.
    values = [1.0] * 120 + [0.0] * 80
    stories = [i // 10 for i in range(200)]
    est = estimate_rate(values, stories)
    lo, hi = wilson(0.6, 200)
    assert est.point == pytest.approx(0.6)
    assert (est.n, est.clusters) == (200, 20)
    assert est.high - est.low > 2 * (hi - lo)
    assert est.low < 0.42 and est.high > 0.78  # about Wilson on 20 items: [0.39, 0.78]
    assert "cluster bootstrap (2000 resamples, 20 clusters)" in est.method


def test_independent_items_give_about_wilson() -> None:
    rng = np.random.default_rng(3)
    values = (rng.random(500) < 0.7).astype(float)
    est = estimate_rate(list(values))
    lo, hi = wilson(est.point, 500)
    assert est.clusters == 500
    assert est.low == pytest.approx(lo, abs=0.01) and est.high == pytest.approx(hi, abs=0.01)
    assert est.low <= lo and est.high >= hi  # the union with Wilson on n_eff = n


def test_bootstrap_is_deterministic_per_seed() -> None:
    rng = np.random.default_rng(5)
    values = list((rng.random(300) < 0.6).astype(float))
    stories = [i // 6 for i in range(300)]
    a = estimate_rate(values, stories, seed=1)
    assert a == estimate_rate(values, stories, seed=1)
    assert a == estimate_rate(values, np.array(stories), seed=1)  # integer arrays take the same codes
    draws = [_widen(1.0, 0.0, np.array([3.0, 1.0, 4.0, 1.0, 5.0]), np.full(5, 6.0), 50, seed, 0.95) for seed in (1, 1, 2)]
    assert draws[0] == draws[1] != draws[2]
    comp = compare_paired(values, values[::-1], stories, seed=4)
    assert comp == compare_paired(values, values[::-1], stories, seed=4)


def test_all_equal_values_are_not_a_zero_width_interval() -> None:
    est = estimate_rate([1.0] * 10, ["a"] * 5 + ["b"] * 5)
    assert est.point == est.high == 1.0
    assert est.low == pytest.approx(wilson(1.0, 10)[0]) and est.low == pytest.approx(0.7225, abs=1e-3)
    zero = estimate_rate([0.0] * 30, [i // 3 for i in range(30)])
    assert zero.low == 0.0 and 0.05 < zero.high < 0.15


def test_one_cluster_falls_back_to_wilson_and_says_so() -> None:
    est = estimate_rate([1.0, 0.0, 1.0, 1.0], ["s"] * 4)
    assert (est.low, est.high) == pytest.approx(wilson(0.75, 4))
    assert est.clusters == 1 and "one cluster" in est.method


def test_scores_and_levels() -> None:
    est = estimate_rate([0.5, 0.25, 1.0, 0.75], level=0.9)
    assert est.point == pytest.approx(0.625) and est.level == 0.9
    assert 0 <= est.low < 0.625 < est.high <= 1
    assert estimate_rate([0.5] * 8, resamples=0).method == "Wilson on 8 items (all clusters alike)"
    assert estimate_rate([0.5, 1.0] * 4, resamples=0).method == "Wilson on 8 effective items of 8 (t, 7 df)"


@pytest.mark.parametrize(
    ("values", "clusters", "kwargs", "message"),
    [
        ([], None, {}, "empty"),
        ([0.5, 1.2], None, {}, r"\[0, 1\]"),
        ([0.5, float("nan")], None, {}, r"\[0, 1\]"),
        ([1.0, 0.0], ["a"], {}, "2 items"),
        ([1.0], None, {"level": 1.0}, "level"),
        ([1.0], None, {"resamples": -1}, "resamples"),
    ],
)
def test_estimate_rate_refuses_bad_input(values: list[float], clusters: list[str] | None, kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        estimate_rate(values, clusters, **kwargs)  # type: ignore[arg-type]


# ---- compare_paired -----------------------------------------------------------------------------


def test_identical_runs_never_regress() -> None:
    values = [1.0, 0.0, 1.0, 1.0] * 10
    comp = compare_paired(values, values, [i // 4 for i in range(40)])
    assert isinstance(comp, Comparison) and isinstance(comp.diff, Estimate)
    assert comp.diff.point == 0 and comp.p_regression == 1.0 and not comp.regressed
    assert (comp.right_to_wrong, comp.wrong_to_right, comp.mcnemar_p) == (0, 0, 1.0)


def test_a_clear_drop_regresses_and_a_margin_tolerates_a_small_one() -> None:
    base, new = _paired(12, 0, 60, 28)  # 100 items, 12 points worse
    comp = compare_paired(base, new)
    assert comp.base == pytest.approx(0.72) and comp.new == pytest.approx(0.60)
    assert comp.diff.point == pytest.approx(-0.12) and comp.diff.high < 0
    assert comp.regressed and comp.p_regression == pytest.approx(0.5**12)  # every story alike: the exact test decides
    assert not compare_paired(base, new, margin=0.2).regressed
    small = compare_paired(*_paired(3, 1, 70, 26))
    assert not small.regressed and small.p_regression >= mcnemar_exact(3, 1)[1]


def test_clustered_drop_is_less_certain_than_itemwise() -> None:
    # The same 10 right->wrong items, spread over 10 stories or packed into 2.
    base = [1.0] * 10 + [1.0] * 50 + [0.0] * 40
    new = [0.0] * 10 + [1.0] * 50 + [0.0] * 40
    spread = compare_paired(base, new, [i % 20 for i in range(100)])
    packed = compare_paired(base, new, [0] * 5 + [1] * 5 + [2 + i // 5 for i in range(90)])
    assert packed.p_regression > spread.p_regression
    assert packed.diff.low < spread.diff.low


def test_noise_floor_makes_the_gate_more_cautious() -> None:
    rng = np.random.default_rng(11)
    base = (rng.random(400) < 0.7).astype(float)
    new = base.copy()
    flip = rng.random(400) < 0.08
    new[flip] = 1 - new[flip]
    stories = [i // 4 for i in range(400)]
    plain = compare_paired(list(base), list(new), stories)
    floored = compare_paired(list(base), list(new), stories, noise_flip_rate=0.15)
    assert floored.p_regression >= plain.p_regression
    assert floored.diff.high - floored.diff.low > plain.diff.high - plain.diff.low
    assert floored.noise_flip_rate == 0.15 and "noise floor 0.15" in floored.diff.method


def test_one_cluster_and_one_pair() -> None:
    base, new = _paired(4, 0, 3, 3)
    comp = compare_paired(base, new, ["s"] * 10)
    assert comp.diff.clusters == 10 and "one cluster" in comp.diff.method
    single = compare_paired([1.0], [0.0])
    assert single.p_regression == 1.0 and not single.regressed  # one item cannot show a regression


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"margin": -0.1}, "margin"), ({"margin": 1.0}, "margin"), ({"noise_flip_rate": 1.5}, "noise_flip_rate"), ({"alpha": 0.0}, "alpha")],
)
def test_compare_paired_refuses_bad_settings(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compare_paired([1.0, 0.0], [1.0, 1.0], **kwargs)  # type: ignore[arg-type]


def test_compare_paired_refuses_unpaired_runs() -> None:
    with pytest.raises(ValueError, match="same items"):
        compare_paired([1.0, 0.0], [1.0])


# ---- flip_rate ----------------------------------------------------------------------------------


def test_flip_rate_counts_disagreements() -> None:
    a = [1.0, 1.0, 0.0, 0.0] * 25
    b = [1.0, 0.0, 0.0, 1.0] * 25
    est = flip_rate(a, b)
    assert est.point == pytest.approx(0.5) and est.n == 100
    assert est.low < 0.5 < est.high and est.method.startswith("flips between two runs")
    assert flip_rate([0.25, 1.0], [0.75, 1.0]).point == pytest.approx(0.25)  # scores: |a - b|
    with pytest.raises(ValueError, match="same items"):
        flip_rate([1.0], [1.0, 0.0])


# ---- the simulation proof, quick --------------------------------------------------------------


def _simulation():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gate_simulation", REPO / "benchmarks" / "gate_simulation.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gate_simulation"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_gate_false_alarms_stay_at_alpha_and_a_real_drop_is_caught() -> None:
    sim = _simulation()
    rng = np.random.default_rng(20)
    bench = sim.make_bench()
    reps = 120
    tolerance = sim.ALPHA + 3 * math.sqrt(sim.ALPHA * (1 - sim.ALPHA) / reps)
    gate_columns = [sim.METHODS.index("gate"), sim.METHODS.index("gate + noise floor")]
    noisy = sim.instability_for(0.15, bench, rng)
    rates, _ = sim.scenario(bench, rng, reps, noisy)
    assert all(rates[j] <= tolerance for j in gate_columns), rates
    rates, _ = sim.scenario(bench, rng, reps, sim.instability_for(0.05, bench, rng), retrained=True)
    assert all(rates[j] <= tolerance for j in gate_columns), rates
    drop = sim.drop_for(3.0, bench.masks()["overall"], bench, rng)
    rates, _ = sim.scenario(bench, rng, reps // 2, sim.instability_for(0.05, bench, rng), drop=drop)
    assert rates[gate_columns[1]] >= 0.7, rates
