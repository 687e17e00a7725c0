"""Measure the noise floor: how many answers flip between two runs of the same model.

Greedy decoding is not deterministic across batchings and hardware (on a GPU a bf16 model can disagree with itself on a
large share of answers), so a candidate differs from its baseline on some questions by noise alone. Run the same model
twice without the cache (ideally with another `--tom-batch-size`), each with `--tom-report`, then:

    python -m pytest_tom.gates.flips first.json second.json

and pass the printed upper bound to `--tom-noise-flip-rate` so a gate never fails on that noise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_tom.errors import TomError
from pytest_tom.record import Record
from pytest_tom.stats import Estimate, flip_rate


def measure(first: Sequence[Record], second: Sequence[Record]) -> tuple[Estimate, int]:
    """The flip rate of correctness over the answered questions both runs share, and how many they share."""
    from pytest_tom.evals import Registry

    registry = Registry()
    b = {(r.suite, r.sample_id): r for r in second if r.scored}
    pairs = [(r, b[(r.suite, r.sample_id)]) for r in first if r.scored and (r.suite, r.sample_id) in b]
    if not pairs:
        raise TomError("the two reports share no answered question: run the same suites with the same settings")
    benches = {name: registry.get(name)({}) for name in {r.benchmark for r, _ in pairs}}
    clusters = [f"{r.suite}/{benches[r.benchmark].cluster(r.facets, r.sample_id)}" for r, _ in pairs]
    est = flip_rate([float(r.passed) for r, _ in pairs], [float(s.passed) for _, s in pairs], clusters)
    return est, len(pairs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_tom.gates.flips", description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="a --tom-report of one run")
    parser.add_argument("second", type=Path, help="a --tom-report of another run of the same model")
    args = parser.parse_args(argv)
    from pytest_tom.output.report import load_report

    try:
        est, n = measure(load_report(args.first).records, load_report(args.second).records)
    except TomError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"flip rate {est.point:.2%} ({est.level:.0%} interval {est.low:.2%}-{est.high:.2%}) over {n} questions in "
          f"{est.clusters} clusters; {est.method}")
    print(f"use: --tom-noise-flip-rate={est.high:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
