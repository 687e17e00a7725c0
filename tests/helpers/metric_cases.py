"""Records of every benchmark, answered by a seeded random model on the bundled fixtures.

Shared by the metric-parity test and the script that stored the expected metrics
(`metrics_c01d35f.json`, computed by the per-benchmark dict code before metrics were typed).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from pytest_tom.engine.engine import Engine
from pytest_tom.evals.fantom import FANToM
from pytest_tom.evals.simpletom import SimpleToM
from pytest_tom.evals.tomato import ToMATO
from pytest_tom.evals.tombench import ToMBench
from pytest_tom.evals.tomvalley import ToMValley
from pytest_tom.framework.base import Benchmark, DataSource
from pytest_tom.models import make_model
from pytest_tom.models.embedding import make_scoring_model
from pytest_tom.record import Record

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
EXPECTED = Path(__file__).with_name("metrics_c01d35f.json")

CASES: dict[str, tuple[type[Benchmark[Any]], dict[str, Any]]] = {
    "tombench": (ToMBench, {"partial": "true"}),
    "tombench-clean-cot": (ToMBench, {"partial": "true", "aggregation": "clean", "prompt": "cot"}),
    "fantom": (FANToM, {"partial": "true", "evaluator": "2023"}),  # the default before the 2024 evaluator
    "simpletom": (SimpleToM, {"partial": "true"}),
    "tomato": (ToMATO, {"partial": "true"}),
    "tomato-3-runs": (ToMATO, {"partial": "true", "runs": "3", "temperature": "0.7"}),
    "tomvalley": (ToMValley, {"partial": "true", "contexts": "7001-7002"}),
}

ADDED = {
    "fantom": ("evaluator", "contexts.*.control_task.accessible:set:ALL*:rev*", "contexts.*.control_task.accessible:set:ALL:rev*",
               "contexts.*.extra.accessible.sets_all_accessible", "contexts.*.extra.accessible.units_rev2024"),
}
"""Metrics added since c01d35f (a report may gain keys, never lose or change one): dotted globs, per case."""


def added_since(case: str, key: tuple[str, ...]) -> bool:
    return any(fnmatchcase(".".join(key), glob) for glob in ADDED.get(case, ()))


def bench_for(case: str) -> Benchmark[Any]:
    cls, settings = CASES[case]
    return cls(settings)


def records(case: str, tmp: Path, seed: int = 3) -> tuple[Benchmark[Any], list[Record]]:
    bench = bench_for(case)
    samples = bench.load(DataSource(FIXTURES, download=False, cache_dir=tmp))
    engine = Engine(make_model(f"random:{seed}"), scoring_models=lambda n: make_scoring_model(n, allow_download=False))
    out = engine.run({s.id: (s, bench.program(s)) for s in samples})
    return bench, list(out.values())
