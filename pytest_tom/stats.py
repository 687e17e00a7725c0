"""The statistics behind regression gates: rates with clustered intervals, paired comparisons, Holm. Pure functions of
per-item values in [0, 1], so a gate's decision can be reproduced from a report and tested without pytest or a model. A
story's questions are not independent, so every interval and test works on whole clusters (per-item Wilson is too
narrow: see benchmarks/gate_simulation.py). numpy and scipy are imported inside the functions, so importing pytest_tom
stays cheap for runs that never gate.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Floats = NDArray[np.float64]

CHUNK_CELLS = 4_000_000
"""Cells of the resample-count matrix built at once: bounds memory when there are many clusters."""


@dataclass(frozen=True)
class Estimate:
    """A rate (or a difference of rates) with its interval and how the interval was made."""

    point: float
    low: float
    high: float
    n: int
    """Items behind the estimate."""
    clusters: int
    """Independent units (stories, conversations) behind the interval; n when items stand alone."""
    level: float
    method: str
    """In words, for reports: a reader must be able to tell a cluster bootstrap from a fallback."""


@dataclass(frozen=True)
class Comparison:
    """A candidate run against a baseline run over the same items: is the candidate worse beyond the margin?"""

    base: float
    new: float
    diff: Estimate
    """new - base, with an interval that resamples whole clusters (the same clusters for both runs)."""
    n_pairs: int
    right_to_wrong: int
    wrong_to_right: int
    mcnemar_p: float
    """Exact two-sided McNemar p on the discordant items, as usually reported; clustering is ignored in it."""
    margin: float
    """Absolute drop tolerated (non-inferiority margin): H0 is new - base >= -margin."""
    p_regression: float
    """One-sided p of H0 for this metric alone."""
    p_adjusted: float
    """p_regression after Holm across the metrics gated together (`gate`); p_regression until then."""
    regressed: bool
    noise_flip_rate: float | None = None


def estimate_rate(values: Sequence[float], clusters: Sequence[Hashable] | None = None, *, level: float = 0.95,
                  resamples: int = 2000, seed: int = 0) -> Estimate:
    """The mean of per-item values with an interval that respects clustering. The interval is the union of a cluster
    bootstrap percentile interval and Wilson on the effective sample size (n / design effect from the cluster-level
    variance, k/(k-1) factor, Student's t on k-1 df). Why both: the bootstrap alone covers too little with few clusters
    (0.91 for 10 stories in benchmarks/gate_simulation.py) and collapses when every value is equal. With no spread, or
    one cluster, it is Wilson on the items (10/10 gives [0.72, 1]), and `method` says so. `clusters=None`: each item its
    own cluster; `resamples=0` skips the bootstrap.
    """
    return _estimate(_values(values, "values"), clusters, level=level, resamples=resamples, seed=seed)


def flip_rate(run_a: Sequence[float], run_b: Sequence[float], clusters: Sequence[Hashable] | None = None, *,
              level: float = 0.95, resamples: int = 2000, seed: int = 0) -> Estimate:
    """Share of items whose result differs between two runs of the same model: the noise floor. Greedy decoding is not
    deterministic across batchings and hardware; `compare_paired` takes this rate so a gate does not fail on that noise.
    For scores a flip is |a - b|. Pass `.high` rather than `.point` when the repeat covered only a small sample.
    """
    a, b = _values(run_a, "run_a"), _values(run_b, "run_b")
    _same_length(a, b)
    import numpy as np

    est = _estimate(np.abs(a - b), clusters, level=level, resamples=resamples, seed=seed)
    return replace(est, method="flips between two runs; " + est.method)


def compare_paired(base: Sequence[float], new: Sequence[float], clusters: Sequence[Hashable] | None = None, *,
                   margin: float = 0.0, level: float = 0.95, alpha: float = 0.05, resamples: int = 2000, seed: int = 0,
                   noise_flip_rate: float | None = None) -> Comparison:
    """Test whether `new` is worse than `base` by more than `margin`, over the same items in the same order. One-sided,
    H0: new - base >= -margin; p_regression = max(p_t, p_exact):
      - p_t: cluster-robust t test (CR1 standard error from cluster totals, k-1 df), the usual recipe for clustered
        means with tens of clusters;
      - p_exact: exact one-sided McNemar on the discordant items, exact where few items changed.
    Each is valid in its own regime, so their maximum is valid in both (and conservative).

    Noise floor: with `noise_flip_rate` f, one run's noise variance (f / 2 per item) is added once more to the squared
    standard error. The paired variance holds both runs' noise, but a baseline saved once and reused becomes a fixed
    offset, and a lucky one would fail candidate after candidate; counted twice, a baseline lucky by its 90th percentile
    keeps false alarms near alpha (Phi(-2.85 + 1.28) = 0.06 at alpha 0.05, against 0.15 without), at a cost in power
    (benchmarks/gate_simulation.py measures both). The reported interval is the union of the paired cluster bootstrap
    and the t interval, never narrower than what the decision used.
    """
    b, w = _values(base, "base"), _values(new, "new")
    _same_length(b, w)
    _check_open("level", level)
    _check_open("alpha", alpha)
    if not 0 <= margin < 1:
        raise ValueError(f"margin is an absolute drop in [0, 1), got {margin}; convert a relative margin with the base rate")
    if noise_flip_rate is not None and not 0 <= noise_flip_rate <= 1:
        raise ValueError(f"noise_flip_rate must be in [0, 1], got {noise_flip_rate}")
    import numpy as np
    from scipy.special import stdtr, stdtrit

    n = len(b)
    codes, k = _codes(clusters, n)
    fallback = ""
    if k == 1 and n > 1:
        codes, k = np.arange(n), n
        fallback = "; one cluster, so items taken as independent"
    d = w - b
    point = float(d.mean())
    r2w, w2r = int((d < 0).sum()), int((d > 0).sum())
    mcnemar, p_exact = mcnemar_exact(r2w, w2r)

    sums, sizes = _totals(d, codes, k)
    noise_var = (noise_flip_rate or 0.0) / 2 / n
    se = math.sqrt(_ratio_var(sums, sizes, point) + noise_var) if k > 1 else math.inf
    stat = point + margin
    if se == 0:
        p_t = 0.0 if stat < 0 else 1.0
    elif math.isinf(se):
        p_t = 1.0
    else:
        p_t = float(stdtr(k - 1, stat / se))
    p_regression = max(p_t, p_exact)

    half = float(stdtrit(k - 1, 0.5 + level / 2)) * se if k > 1 else math.inf
    low, high = max(-1.0, point - half), min(1.0, point + half)
    method = f"t interval (cluster-robust SE, {k} clusters"
    method += f", noise floor {noise_flip_rate:.3g})" if noise_flip_rate else ")"
    if resamples > 0 and k > 1:
        low, high = _widen(low, high, sums, sizes, resamples, seed, level)
        method = f"paired cluster bootstrap ({resamples} resamples, {k} clusters) widened to the {method}"
    diff = Estimate(point, low, high, n, k, level, method + fallback)
    return Comparison(float(b.mean()), float(w.mean()), diff, n, r2w, w2r, mcnemar, margin, p_regression, p_regression,
                      p_regression <= alpha, noise_flip_rate)


def macro_f1(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> float:
    """scikit-learn's `f1_score(gold, pred, average="macro")` without scikit-learn: the unweighted mean over the labels
    in gold or predictions of 2TP / (2TP + FP + FN); 0.0 for no items.
    """
    per = []
    for lab in dict.fromkeys([*gold, *pred]):
        tp = sum(g == p == lab for g, p in zip(gold, pred, strict=True))
        wrong = sum((g == lab) != (p == lab) for g, p in zip(gold, pred, strict=True))
        per.append(2 * tp / (2 * tp + wrong))
    return sum(per) / len(per) if per else 0.0


def compare_macro_f1(gold: Sequence[Hashable], base: Sequence[Hashable], new: Sequence[Hashable],
                     clusters: Sequence[Hashable] | None = None, *, margin: float = 0.0, level: float = 0.95,
                     alpha: float = 0.05, resamples: int = 2000, seed: int = 0) -> Comparison:
    """Test whether `new`'s macro-F1 against `gold` is worse than `base`'s by more than `margin` (same items, same order).
    Macro-F1 is not a mean of per-item values, so neither the t test nor McNemar applies (`mcnemar_p` is NaN): the paired
    cluster bootstrap resamples whole clusters (OpenToM's narratives), recomputes both F1s on each resample (labels: those
    present in its gold or predictions, as scikit-learn's `average="macro"`), and p_regression is the share of resampled
    differences at or above -margin (one-sided, H0: new - base >= -margin), with the +1 correction.
    """
    _check_open("level", level)
    _check_open("alpha", alpha)
    if len(base) != len(gold) or len(new) != len(gold) or not gold:
        raise ValueError(f"gold, base and new must be equally long and not empty: {len(gold)}, {len(base)}, {len(new)}")
    if not 0 <= margin < 1 or resamples < 1:
        raise ValueError(f"margin must be in [0, 1) and resamples at least 1, got {margin} and {resamples}")
    import numpy as np

    n = len(gold)
    codes, k = _codes(clusters, n)
    labels = list(dict.fromkeys([*gold, *base, *new]))
    g, pb, pn = (np.array([labels.index(x) for x in seq]) for seq in (gold, base, new))
    cb, cn = _f1_counts(g, pb, codes, k, len(labels)), _f1_counts(g, pn, codes, k, len(labels))
    f_base, f_new = float(_f1(cb.sum(0))), float(_f1(cn.sum(0)))
    d = _f1_boot(cn, cb, resamples, seed)
    low, high = (float(x) for x in np.quantile(d, [(1 - level) / 2, (1 + level) / 2]))
    p = float((np.sum(d >= -margin) + 1) / (resamples + 1))
    right_b, right_n = g == pb, g == pn
    diff = Estimate(f_new - f_base, low, high, n, k, level,
                    f"paired cluster bootstrap of the macro-F1 difference ({resamples} resamples, {k} clusters)")
    return Comparison(f_base, f_new, diff, n, int(np.sum(right_b & ~right_n)), int(np.sum(~right_b & right_n)),
                      math.nan, margin, p, p, p <= alpha)


def macro_f1_gap(a: Sequence[tuple[Hashable, Hashable]], a_clusters: Sequence[Hashable],
                 b: Sequence[tuple[Hashable, Hashable]], b_clusters: Sequence[Hashable], *, level: float = 0.95,
                 resamples: int = 2000, seed: int = 0) -> Estimate:
    """macro-F1(a) - macro-F1(b) of two groups of (gold, prediction) pairs whose clusters overlap (OpenToM's first- and
    second-order questions on the same narratives), with the percentile interval of a paired cluster bootstrap: whole
    clusters are drawn once per resample and both groups' F1 recomputed on what the draw holds of each, so a narrative's
    questions of both groups move together. Each F1 uses the labels its own group has (scikit-learn's `average="macro"`).
    Macro-F1 is not a mean, and with few clusters its resampled differences can all fall on one side of the point
    estimate; the interval is then widened to hold the point, never narrowed.
    """
    _check_open("level", level)
    if not a or not b or len(a_clusters) != len(a) or len(b_clusters) != len(b) or resamples < 1:
        raise ValueError(f"two non-empty groups, a cluster per pair and resamples >= 1: {len(a)}, {len(b)}, {resamples}")
    import numpy as np

    codes, k = _codes([*a_clusters, *b_clusters], len(a) + len(b))
    counts = []
    for pairs, at in ((a, codes[:len(a)]), (b, codes[len(a):])):
        labels = list(dict.fromkeys(x for pair in pairs for x in pair))
        g, p = (np.array([labels.index(pair[i]) for pair in pairs]) for i in (0, 1))
        counts.append(_f1_counts(g, p, at, k, len(labels)))
    point = float(_f1(counts[0].sum(0)) - _f1(counts[1].sum(0)))
    boot = _f1_boot(counts[0], counts[1], resamples, seed)
    low, high = (float(x) for x in np.quantile(boot, [(1 - level) / 2, (1 + level) / 2]))
    return Estimate(point, min(low, point), max(high, point), len(a) + len(b), k, level,
                    f"paired cluster bootstrap of the macro-F1 difference ({resamples} resamples, {k} clusters)")


def _f1_counts(g: NDArray[np.intp], p: NDArray[np.intp], codes: NDArray[np.intp], k: int, labels: int) -> Floats:
    """Per cluster and label: true positives, false positives, false negatives (k x 3 x labels)."""
    import numpy as np

    out = np.zeros((k, 3, labels))
    for row, hit in enumerate(((g == p), (g != p), (g != p))):
        np.add.at(out[:, row], (codes[hit], (g if row == 2 else p)[hit]), 1.0)
    return out


def _f1(c: Floats) -> Floats:
    """Macro-F1 of summed counts (`_f1_counts` over the last two axes) over the labels present in them."""
    import numpy as np

    tp, fp, fn = c[..., 0, :], c[..., 1, :], c[..., 2, :]
    denom = 2 * tp + fp + fn
    present = denom > 0
    return np.asarray(np.where(present, 2 * tp / np.where(present, denom, 1), 0).sum(-1)
                      / np.maximum(present.sum(-1), 1), dtype=np.float64)


def _f1_boot(first: Floats, second: Floats, resamples: int, seed: int) -> Floats:
    """F1(first) - F1(second) on `resamples` draws of whole clusters with replacement (the same draw for both)."""
    import numpy as np

    k = len(first)
    rng, rows, boot = np.random.default_rng(seed), max(1, CHUNK_CELLS // (k * 3 * max(first.shape[2], second.shape[2]))), []
    for start in range(0, resamples, rows):
        draws = rng.integers(0, k, size=(min(rows, resamples - start), k))
        boot.append(_f1(first[draws].sum(1)) - _f1(second[draws].sum(1)))
    return np.concatenate(boot)


def mcnemar_exact(right_to_wrong: int, wrong_to_right: int) -> tuple[float, float]:
    """Exact McNemar p-values: two-sided, and one-sided for "more items went right->wrong". Under H0 right->wrong is
    Binomial(b + c, 1/2): scipy.stats.binomtest's numbers (the unit tests check), from scipy.special's binomial tails
    because a simulation calls this thousands of times.
    """
    from scipy.special import bdtr, bdtrc

    b, n = right_to_wrong, right_to_wrong + wrong_to_right
    if n == 0:
        return 1.0, 1.0
    upper = 1.0 if b == 0 else float(bdtrc(b - 1, n, 0.5))  # P(X >= b)
    lower = float(bdtr(b, n, 0.5))  # P(X <= b)
    return min(1.0, 2 * min(upper, lower)), upper


def holm(pvalues: Mapping[str, float], alpha: float) -> dict[str, tuple[float, bool]]:
    """Holm's step-down adjusted p-values and decisions, in the order given. Holm keeps the chance of any false alarm
    across the metrics gated together at alpha, with more power than Bonferroni; scipy.stats has only FDR control, which
    bounds the share of false alarms.
    """
    _check_open("alpha", alpha)
    for name, p in pvalues.items():
        if not 0 <= p <= 1:  # also refuses NaN
            raise ValueError(f"p-value of {name!r} must be in [0, 1], got {p}")
    ordered = sorted(pvalues, key=lambda name: pvalues[name])
    steps = (min(1.0, (len(ordered) - i) * pvalues[name]) for i, name in enumerate(ordered))
    adjusted = dict(zip(ordered, itertools.accumulate(steps, max), strict=True))
    return {name: (adjusted[name], adjusted[name] <= alpha) for name in pvalues}


def gate(comparisons: Mapping[str, Comparison], alpha: float = 0.05) -> dict[str, Comparison]:
    """The comparisons gated together, with Holm-adjusted p-values and the final decisions."""
    adjusted = holm({name: c.p_regression for name, c in comparisons.items()}, alpha)
    return {name: replace(c, p_adjusted=adjusted[name][0], regressed=adjusted[name][1]) for name, c in comparisons.items()}


def wilson(p: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a rate p over n (possibly effective, fractional) items."""
    from scipy.special import ndtri

    return wilson_z(p, n, float(ndtri(0.5 + level / 2)))


def _estimate(v: Floats, clusters: Sequence[Hashable] | None, *, level: float, resamples: int, seed: int) -> Estimate:
    _check_open("level", level)
    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")
    n = len(v)
    codes, k = _codes(clusters, n)
    point = float(v.mean())
    if k == 1:
        low, high = wilson(point, n, level)
        return Estimate(point, low, high, n, 1, level, f"Wilson on {n} items (one cluster: nothing to resample)")
    from scipy.special import stdtrit

    sums, sizes = _totals(v, codes, k)
    var = _ratio_var(sums, sizes, point)
    spread = point * (1 - point)
    if var == 0 or spread == 0:  # no spread to estimate a design effect from: Wilson on the items
        low, high = wilson(point, n, level)
        method = f"Wilson on {n} items (all clusters alike)"
    else:  # Student's t with k-1 degrees of freedom: the variance comes from k cluster totals
        n_eff = min(float(n), max(1.0, spread / var))
        low, high = wilson_z(point, n_eff, float(stdtrit(k - 1, 0.5 + level / 2)))
        method = f"Wilson on {n_eff:.0f} effective items of {n} (t, {k - 1} df)"
    if resamples > 0:
        low, high = _widen(low, high, sums, sizes, resamples, seed, level)
        method = f"cluster bootstrap ({resamples} resamples, {k} clusters) widened to the {method}"
    return Estimate(point, max(0.0, low), min(1.0, high), n, k, level, method)


def _values(values: Sequence[float], name: str) -> Floats:
    import numpy as np

    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        raise ValueError(f"{name} is empty: a rate over no items is undefined (nothing was scored)")
    if not np.all((v >= 0) & (v <= 1)):  # also refuses NaN
        raise ValueError(f"{name} must hold per-item values in [0, 1] (1.0/0.0 correctness or a score)")
    return v


def _same_length(a: Floats, b: Floats) -> None:
    if len(a) != len(b):
        raise ValueError(f"paired runs must cover the same items in the same order: {len(a)} values against {len(b)}")


def _check_open(name: str, value: float) -> None:
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value}")


def _codes(clusters: Sequence[Hashable] | None, n: int) -> tuple[NDArray[np.intp], int]:
    """Cluster labels as 0..k-1 in order of first appearance (deterministic for a seed)."""
    import numpy as np

    if clusters is None:
        return np.arange(n), n
    if len(clusters) != n:
        raise ValueError(f"clusters must label every item: {len(clusters)} labels for {n} items")
    if isinstance(clusters, np.ndarray) and clusters.ndim == 1 and clusters.dtype.kind in "iub":
        # Integer labels from a simulation: the same codes as below, without a Python loop.
        _, first, inverse = np.unique(clusters, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.intp)
        rank[np.argsort(first)] = np.arange(len(first))
        return rank[inverse], len(first)
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.intp, count=n)
    return codes, len(index)


def _totals(v: Floats, codes: NDArray[np.intp], k: int) -> tuple[Floats, Floats]:
    import numpy as np

    sums = np.bincount(codes, weights=v, minlength=k).astype(np.float64)
    sizes = np.bincount(codes, minlength=k).astype(np.float64)
    return sums, sizes


def _ratio_var(sums: Floats, sizes: Floats, point: float) -> float:
    """Variance of the item mean (a ratio of cluster totals) by linearisation, with the CR1 factor k/(k-1)."""
    k = len(sizes)
    resid = sums - point * sizes
    return float(k / (k - 1) * (resid @ resid)) / float(sizes.sum()) ** 2


def _widen(low: float, high: float, sums: Floats, sizes: Floats, resamples: int, seed: int,
           level: float) -> tuple[float, float]:
    """(low, high) widened to the percentile interval of `resamples` cluster bootstrap item means."""
    import numpy as np

    rng = np.random.default_rng(seed)
    k = len(sizes)
    rows = max(1, CHUNK_CELLS // k)
    boot = []
    for start in range(0, resamples, rows):
        draws = rng.integers(0, k, size=(min(rows, resamples - start), k))
        boot.append(np.take(sums, draws).sum(axis=1) / np.take(sizes, draws).sum(axis=1))
    b_lo, b_hi = np.quantile(np.concatenate(boot), [(1 - level) / 2, (1 + level) / 2])
    return min(low, float(b_lo)), max(high, float(b_hi))


def wilson_z(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson score interval for a rate p over n items at the normal (or t) quantile z."""
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))
