"""Scores of a classification read off free text (OpenToM's labels): per cell of questions, the official numbers over the
answers a rule could read (accuracy, scikit-learn's macro-F1), the counts and rates of what it could not read beside
them, the units of a macro-F1 gate, and, for a protocol of sampled batches or runs, the batches drawn as the papers drew
them (`chunks`, `in_batches`) and the mean and population std over them. A record's `gold` and `parsed` are the labels;
`parsed` None is unparseable, `gold` None a question with no scorable gold (a release defect). A rate with an empty
denominator is None (null), never 0: nothing was read, so nothing was wrong.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pytest_tom.framework.metric import Metric
from pytest_tom.record import MetricData, Record
from pytest_tom.sample import Sample
from pytest_tom.stats import macro_f1, macro_f1_gap

COUNTS = ("n", "n_scored", "unparseable", "no_gold")
"""The integer members of `scores`; the rest are rates."""


def scores(recs: Sequence[Record]) -> dict[str, float | None]:
    """n, n_scored (a label read against an existing gold), unparseable, no_gold; accuracy and macro_f1 over the answers
    read (the official metrics drop the rest); accuracy_strict over every scorable question (unparseable is wrong); and
    corrupted_rate, the share not scored.
    """
    pairs = [(r.gold, r.parsed) for r in recs if r.parsed is not None and r.gold is not None]
    gold_n = sum(r.gold is not None for r in recs)
    return {"n": len(recs), "n_scored": len(pairs), "unparseable": sum(r.parsed is None for r in recs),
            "no_gold": len(recs) - gold_n, "accuracy": sum(g == p for g, p in pairs) / len(pairs) if pairs else None,
            "macro_f1": macro_f1([g for g, _ in pairs], [p for _, p in pairs]) if pairs else None,
            "accuracy_strict": sum(r.passed for r in recs) / gold_n if gold_n else None,
            "corrupted_rate": (len(recs) - len(pairs)) / len(recs) if recs else None}


def spread(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and population std (ddof 0: the papers' "mean ± std over 5 runs/batches") of per-batch values, with numpy's
    operations (a sum in order, then squares by multiplication): for fewer than 8 values, where numpy sums in order too,
    they equal the official `np.mean` and `np.std` to the last bit, which `statistics` does not (from 8 on numpy sums in
    unrolled blocks and may differ in the last bit). Both None when a batch has no value: the mean is then undefined.
    """
    nums = [float(v) for v in values if v is not None]
    if not nums or len(nums) != len(values):
        return None, None
    total = 0.0
    for v in nums:  # in order, not `sum`, which compensates rounding on Python 3.12+ where numpy does not
        total += v
    mean, squares = total / len(nums), 0.0
    for v in nums:
        squares += (v - mean) * (v - mean)
    return mean, math.sqrt(squares / len(nums))


def cell(key: tuple[str, ...], numbers: Mapping[str, float | None], shown: Mapping[str, str], table: str) -> list[Metric]:
    """Each of a cell's `scores` as `<key>.<name>`; `shown` labels the printed rates, whose n is the answers read."""
    return [Metric((*key, name), v, shown.get(name, ""), "count" if name in COUNTS else "rate", table,
                   n=int((numbers["n_scored"] if name in shown else numbers["n"]) or 0)) for name, v in numbers.items()]


def batched(key: tuple[str, ...], per: Sequence[Mapping[str, float | None]], shown: Mapping[str, str], table: str,
            n: int) -> list[Metric]:
    """Each number of the per-batch `scores` as `<key>.<name>.{mean, std, per_batch}`; `shown` labels the printed means."""
    out: list[Metric] = []
    for name in per[0]:
        vals = tuple(p[name] for p in per)
        mean, std = spread(vals)
        label = f"{shown[name]} (mean over {len(vals)} batches)" if name in shown else ""
        out += [Metric((*key, name, "mean"), mean, label, "score", table, n=n, std=std),
                Metric((*key, name, "std"), std, "", "score", table), Metric((*key, name, "per_batch"), vals, "", "list", table)]
    return out


def table(key: tuple[str, ...], recs: Sequence[Record], stats: Callable[[Sequence[Record]], Mapping[str, float | None]],
          shown: Mapping[str, str], title: str, batch: str = "") -> list[Metric]:
    """A cell's `stats` as metrics (`cell`); with `batch`, the facet listing the batches a record counts in (a question
    may count in several, space-separated), its `stats` per batch, then their mean and std (`batched`).
    """
    if not batch:
        return cell(key, stats(recs), shown, title)
    names = sorted({b for r in recs for b in r.facets[batch].split()}, key=lambda b: (len(b), b))  # "2" before "10"
    return batched(key, [stats([r for r in recs if b in r.facets[batch].split()]) for b in names], shown, title, len(recs))


def chunks(keys: Sequence[str], batches: int, size: int, seed: int) -> list[list[str]]:
    """The papers' sampled batches (`random.seed(seed)`; the chunks of a shuffled copy of the keys, taken afresh and
    shuffled again by the same generator while batches are wanted, so with few keys a key may be in several).
    """
    rng, out = random.Random(seed), list[list[str]]()
    while len(out) < batches:
        rng.shuffle(order := list(keys))
        out += [order[i:i + size] for i in range(0, len(order), size)]
    return out[:batches]


S = TypeVar("S", bound=Sample[Any])


def in_batches(samples: Sequence[S], batches: int, keeps: Callable[[S, int], bool], facet: str = "batch") -> list[S]:
    """The samples one of the `batches` keeps (`keeps(sample, b)`, b from 0), each asked once, its `facet` the numbers
    (from 1) of every batch keeping it: its one answer counts in each.
    """
    kept = {s.id: " ".join(str(b + 1) for b in range(batches) if keeps(s, b)) for s in samples}
    return [dataclasses.replace(s, facets={**s.facets, facet: kept[s.id]}) for s in samples if kept[s.id]]


def f1_gap(key: tuple[str, ...], label: str, table: str, a: Sequence[Record], b: Sequence[Record], cluster: str
           ) -> list[Metric]:
    """macro-F1(a) - macro-F1(b) over the answers read of each (as the official numbers), a difference of rates, with a paired
    bootstrap interval over the `cluster` facet (`stats.macro_f1_gap`); nothing when a side has no answer read.
    """
    ra, rb = ([r for r in rs if r.parsed is not None and r.gold is not None] for rs in (a, b))
    if not ra or not rb:
        return []
    est = macro_f1_gap([(r.gold, r.parsed) for r in ra], [r.facets[cluster] for r in ra],
                       [(r.gold, r.parsed) for r in rb], [r.facets[cluster] for r in rb])
    return [Metric(key, est.point, label, "points", table, (est.low, est.high), est.n, cluster)]


def unread_gate(name: str, recs: Sequence[Record], cluster: str, description: str) -> MetricData:
    """A gateable share of answers the rule could not read (lower is better), a unit per record in its `cluster` facet's
    value: the official metrics drop these answers, so a threshold on them is what keeps a headline honest.
    """
    return MetricData(name, tuple(r.sample_id for r in recs), tuple(float(r.parsed is None) for r in recs),
                      tuple(r.facets[cluster] for r in recs), description, False)


def f1_gate(name: str, recs: Sequence[Record], cluster: str, description: str) -> MetricData:
    """A gateable macro-F1: each record a unit in its `cluster` facet's value with its (gold, prediction), so a comparison
    bootstraps the F1 difference (`stats.compare_macro_f1`); an unparseable answer is the prediction -1, a wrong class
    of its own, as gates count unparseable answers wrong.
    """
    return MetricData(name, tuple(r.sample_id for r in recs), tuple(float(r.passed) for r in recs),
                      tuple(r.facets[cluster] for r in recs), description, True,
                      tuple((r.gold, -1 if r.parsed is None else r.parsed) for r in recs))
