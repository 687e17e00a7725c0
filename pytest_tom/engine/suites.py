"""Suites of one run: loading each declared benchmark with its settings, and drawing samples. A suite is a benchmark
instance with its settings (from flags, ini values and the suite declaration), its loaded samples and its derived
assertions. Sampling (`--tom-sample`) draws a stratified subset after -m/-k, so the sample is drawn from what the user
selected; a benchmark whose cluster facet is `whole` is sampled by whole clusters.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.errors import TomConfigError
from pytest_tom.evals import Registry
from pytest_tom.framework.base import Benchmark, DataSource
from pytest_tom.gates.baseline import data_fingerprint
from pytest_tom.options import TomOptions
from pytest_tom.sample import Sample
from pytest_tom.suite import Suite


@dataclass
class LoadedSuite:
    """One suite as collected: its benchmark instance, samples and derived assertions."""

    sid: str
    """Node id of the suite's collector; prefixes its items' keys."""
    benchmark: Benchmark[Any]
    samples: list[Sample[Any]]
    derived: list[Derived]
    sample: int | None
    seed: int
    info: dict[str, Any] = field(default_factory=dict)
    """`benchmark.describe()`, for the report."""
    robustness: tuple[str, ...] = ()
    """Robustness strategies searched per question (the option's and the suite's)."""

    def key(self, sample_id: str) -> str:
        """The run-wide key of one of this suite's samples."""
        return f"{self.sid}::{sample_id}"


class Suites:
    """Loads suites and keeps them by id for the rest of the run."""

    def __init__(self, options: TomOptions, registry: Registry) -> None:
        self.options = options
        self.registry = registry
        self.loaded: dict[str, LoadedSuite] = {}

    def load(self, sid: str, declaration: Suite) -> LoadedSuite:
        cls = self.registry.get(declaration.benchmark)
        settings: dict[str, Any] = dict(self.options.benchmark_settings.get(cls.name, {}))
        settings.update(declaration.settings)
        bench = cls(settings)
        data_dir = Path(declaration.data_dir) if declaration.data_dir is not None else self.options.data_dir
        source = DataSource(root=data_dir, download=self.options.download, cache_dir=self.options.cache_dir / "data")
        samples = bench.load(source)
        seen: set[str] = set()
        for s in samples:
            if s.id in seen:
                raise TomConfigError(f"{cls.name}: duplicate sample id {s.id!r}; ids must be unique")
            seen.add(s.id)
        loaded = LoadedSuite(
            sid=sid, benchmark=bench, samples=samples, derived=bench.derived(samples),
            sample=declaration.sample if declaration.sample is not None else self.options.sample,
            seed=declaration.seed if declaration.seed is not None else self.options.seed,
            info={**bench.describe(), "gates": list(declaration.gates), "data_fingerprint": data_fingerprint(samples)},
            robustness=tuple(dict.fromkeys([*self.options.robustness, *declaration.robustness])),
        )
        self.loaded[sid] = loaded
        return loaded

    def info(self) -> dict[str, dict[str, Any]]:
        """Each suite's configuration, by suite id (what the report and the xdist controller need)."""
        return {sid: s.info for sid, s in self.loaded.items()}


def stratified_sample(entries: Sequence[tuple[str, tuple[str, ...]]], n: int, seed: int) -> set[str]:
    """Pick `n` ids, allocated to strata in proportion to their size (largest remainder). Every stratum gets a pick when
    `n` allows, so rare abilities are never sampled away; order within a stratum is a seeded hash, so a seed picks the
    same ids on every machine.
    """
    if n >= len(entries):
        return {e[0] for e in entries}
    strata: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for qid, stratum in entries:
        strata[stratum].append(qid)
    total = len(entries)
    keys = sorted(strata)
    alloc = dict.fromkeys(keys, 1 if n >= len(keys) else 0)
    budget = n - sum(alloc.values())
    quotas = {k: budget * len(strata[k]) / total for k in keys}
    for k in keys:
        alloc[k] += min(int(quotas[k]), len(strata[k]) - alloc[k])
    remaining = n - sum(alloc.values())
    order = sorted(keys, key=lambda k: (-(quotas[k] - int(quotas[k])), k))
    while remaining > 0:  # repeated: a stratum that is already full passes its pick on
        for k in order:
            if remaining <= 0:
                break
            if alloc[k] < len(strata[k]):
                alloc[k] += 1
                remaining -= 1
    chosen: set[str] = set()
    for k in keys:
        ranked = sorted(strata[k], key=lambda q: hashlib.sha256(f"{seed}:{q}".encode()).hexdigest())
        chosen.update(ranked[: alloc[k]])
    return chosen


def whole_cluster_sample(entries: Sequence[tuple[str, str, tuple[str, ...]]], n: int, seed: int) -> tuple[set[str], list[int]]:
    """Keep whole clusters holding about `n` of the (id, cluster, strata) `entries`: ceil(n x clusters / ids) of them
    (so equal-sized clusters reach at least `n` ids), drawn by `stratified_sample` over the strata constant within
    every cluster (one varying inside a cluster, such as Hi-ToM's order, is kept whole anyway). Returns the kept ids
    and the positions of the strata used. Clusters of one id each draw exactly what `stratified_sample` draws.
    """
    members: dict[str, list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
    for qid, cluster, stratum in entries:
        members[cluster].append((qid, stratum))
    used = [i for i in range(len(entries[0][2])) if all(len({s[i] for _, s in m}) == 1 for m in members.values())]
    picked = stratified_sample([(c, tuple(m[0][1][i] for i in used)) for c, m in members.items()],
                               min(len(members), math.ceil(n * len(members) / len(entries))), seed)
    return {qid for c in picked for qid, _ in members[c]}, used
