"""OpenToM's official sample written out as `run_baseline.py` runs it, to check the benchmark's own against: while
fewer than 5 batches are taken, `sample_entries` shuffles a fresh list of the keys (Python's generator, seed 42) and
yields all its chunks of 50 (the last may be shorter); per key of each batch, `multihop_fo` then `multihop_so` drop two
fullness indices (numpy's legacy generator, seed 42). The generators are instances seeded as the official globals."""

from __future__ import annotations

import random

import numpy as np


def official_sample(keys: list[str]) -> list[list[tuple[str, list[int], list[int]]]]:
    py, rs = random.Random(42), np.random.RandomState(42)
    chunks: list[list[str]] = []
    while len(chunks) < 5:
        fresh = list(keys)
        py.shuffle(fresh)
        chunks.extend(fresh[i:i + 50] for i in range(0, len(fresh), 50))
    return [[(k, sorted(int(i) for i in rs.choice([0, 1, 2, 3], 2, replace=False)),
              sorted(int(i) for i in rs.choice([0, 1, 2, 3], 2, replace=False))) for k in chunk]
            for chunk in chunks[:5]]


def as_drops(sample: list[list[tuple[str, list[int], list[int]]]]) -> list[dict[str, dict[str, list[int]]]]:
    """The sample in the benchmark's form: per batch, key -> the indices dropped from each multihop file."""
    return [{k: {"multihop_fo": fo, "multihop_so": so} for k, fo, so in chunk} for chunk in sample]
