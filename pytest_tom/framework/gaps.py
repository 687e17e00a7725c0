"""The difference of two groups' accuracies with an interval that holds when items come in clusters. A gap check
("deception costs accuracy") must fail only when the gap is beyond its tolerance with 95% confidence, though items of
one story are not independent and 10/10 is no certainty: hence the union of Newcombe's hybrid score interval and a
cluster bootstrap. Pure, deterministic per seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_tom.derived import Derived, Judgement, Rule
from pytest_tom.record import Record
from pytest_tom.stats import wilson

LEVEL = 0.95
RESAMPLES = 2000


@dataclass(frozen=True, slots=True)
class Gap:
    """A difference of two group accuracies with its interval."""

    point: float
    low: float
    high: float
    n_a: int
    n_b: int
    clusters: int

    def to_dict(self) -> dict[str, Any]:
        return {"gap": self.point, "ci95": [self.low, self.high], "n": [self.n_a, self.n_b], "clusters": self.clusters}


def gap_interval(a: Sequence[float], a_clusters: Sequence[str], b: Sequence[float], b_clusters: Sequence[str],
                 *, resamples: int = RESAMPLES, seed: int = 0) -> Gap:
    """mean(a) - mean(b) with the union of Newcombe's hybrid score interval and a cluster-bootstrap one. Both groups are
    resampled together (a cluster may hold items of both); one cluster: Newcombe's alone.
    """
    import numpy as np

    pa, pb = sum(a) / len(a), sum(b) / len(b)
    la, ua = wilson(pa, len(a), LEVEL)
    lb, ub = wilson(pb, len(b), LEVEL)
    d = pa - pb
    low = d - ((pa - la) ** 2 + (ub - pb) ** 2) ** 0.5
    high = d + ((ua - pa) ** 2 + (pb - lb) ** 2) ** 0.5
    keys = sorted(set(a_clusters) | set(b_clusters))
    k = len(keys)
    if k > 1 and resamples > 0:
        code = {c: i for i, c in enumerate(keys)}
        ca, cb = [code[c] for c in a_clusters], [code[c] for c in b_clusters]
        sums = np.array([np.bincount(ca, weights=a, minlength=k), np.bincount(ca, minlength=k),
                         np.bincount(cb, weights=b, minlength=k), np.bincount(cb, minlength=k)], dtype=float)
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(k, np.full(k, 1 / k), size=resamples).astype(float)
        tot = weights @ sums.T
        ok = (tot[:, 1] > 0) & (tot[:, 3] > 0)
        if ok.any():
            diffs = tot[ok, 0] / tot[ok, 1] - tot[ok, 2] / tot[ok, 3]
            tail = (1 - LEVEL) / 2 * 100
            low = min(low, float(np.percentile(diffs, tail)))
            high = max(high, float(np.percentile(diffs, 100 - tail)))
    return Gap(d, max(-1.0, low), min(1.0, high), len(a), len(b), k)


def split_gap(members: Sequence[Record], facet: str, a: str, b: str, cluster: str) -> Gap | None:
    """The gap of the members whose `facet` is `a` over those whose is `b`, clustered by the `cluster` facet (a record
    without it stands alone); None when either group is empty. An item's value is its share of runs right (its score),
    else its verdict.
    """
    ga, gb = ([r for r in members if r.facets.get(facet) == v] for v in (a, b))
    if not ga or not gb:
        return None
    units = [([float(r.passed if r.score is None else r.score) for r in g], [r.facets.get(cluster) or r.sample_id for r in g])
             for g in (ga, gb)]
    return gap_interval(*units[0], *units[1])


def gap_rule(facet: str, a: str, b: str, cluster: str, explain: Callable[[Derived, Gap, float], str], *,
             above: bool = True, items: str = "items") -> Rule:
    """The rule of a gap check: acc(`a`) - acc(`b`) over the `facet` groups fails only when its interval lies wholly
    above the derived result's `max_gap` (`above`), or wholly below -max_gap; `explain(derived, gap, max_gap)` says
    why. A missing side (its items all errored) passes: nothing shows a gap.
    """
    def rule(derived: Derived, members: Sequence[Record]) -> Judgement:
        tol = float(derived.params.get("max_gap", 0.05))
        g = split_gap(members, facet, a, b, cluster)
        if g is None:
            return Judgement(True, f"no {items} on one side of the comparison")
        beyond = g.low > tol if above else g.high < -tol
        return Judgement(not beyond, explain(derived, g, tol) if beyond else "", g.point, details=g.to_dict() | {"max_gap": tol})
    return rule
