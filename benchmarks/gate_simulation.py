"""Simulation proof for the regression-gate statistics of pytest_tom/stats.py (issue 10).

Usage: python benchmarks/gate_simulation.py [--reps 400] [--seed 0]

A ToMBench-shaped benchmark: 1,400 items in about 330 stories (140 of 4 questions, 100 of 5-10, the rest singletons)
over 7 abilities. P(correct) = expit(mu + ability + story + item) with story (SD 1.0) and item (SD 1.2) effects, so a
story's items are correlated. Answers are deterministic except on "unstable" items drawn afresh each run
(nondeterministic greedy decoding), tuned so two runs of one model disagree on 0%, 5% or 15% of the items.

The gate compares candidate and baseline on 8 metrics (overall and each ability), alpha 0.05,
Holm. Reported: 1. false alarms for the same model or a retrained one of equal accuracy;
2. the same with one baseline reused across candidates (conditional false-alarm rate);
3. power against a model 5 or 10 points worse on the smallest ability, or 3 points overall;
4. coverage of estimate_rate's 95% interval against per-item Wilson.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit, ndtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_tom.stats import compare_paired, estimate_rate, flip_rate, gate, holm, mcnemar_exact, wilson  # noqa: E402

ALPHA = 0.05
SHARES = np.array([0.10, 0.10, 0.12, 0.14, 0.16, 0.18, 0.20])
ABILITY_LOGIT = np.array([-0.6, -0.3, 0.0, 0.2, 0.4, 0.6, 0.9])
BASE_LOGIT, STORY_SD, ITEM_SD = 0.7, 1.0, 1.2
METRICS = ["overall"] + [f"ability{a}" for a in range(len(SHARES))]


@dataclass(frozen=True)
class Bench:
    story: np.ndarray  # item -> story id
    ability: np.ndarray  # item -> ability (the story's)
    n_stories: int

    def masks(self) -> dict[str, np.ndarray]:
        out = {"overall": np.ones(len(self.story), dtype=bool)}
        out.update({f"ability{a}": self.ability == a for a in range(len(SHARES))})
        return out


def make_bench(seed: int = 2024, n_items: int = 1400) -> Bench:
    rng = np.random.default_rng(seed)
    sizes = [4] * 140 + list(rng.integers(5, 11, size=100))
    sizes += [1] * (n_items - sum(sizes))
    # Abilities by story, filled to their item shares (the smallest ability first, so it is not starved).
    order = rng.permutation(len(sizes))
    target = SHARES * n_items
    filled = np.zeros(len(SHARES))
    story_ability = np.empty(len(sizes), dtype=int)
    for s in order:
        a = int(np.argmax(target - filled))
        story_ability[s] = a
        filled[a] += sizes[s]
    story = np.repeat(np.arange(len(sizes)), sizes)
    return Bench(story, story_ability[story], len(sizes))


@dataclass(frozen=True)
class World:
    """One draw of item difficulties for one benchmark: the model's chances and its deterministic answers."""

    logit: np.ndarray
    u: np.ndarray
    unstable: np.ndarray


def draw_world(rng: np.random.Generator, bench: Bench, instability: float, shift: float = 0.0) -> World:
    story = rng.normal(0, STORY_SD, bench.n_stories)[bench.story]
    item = rng.normal(0, ITEM_SD, len(bench.story))
    logit = BASE_LOGIT + shift + ABILITY_LOGIT[bench.ability] + story + item
    return World(logit, rng.random(len(logit)), rng.random(len(logit)) < instability)


def run(rng: np.random.Generator, world: World, drop: np.ndarray | float = 0.0) -> np.ndarray:
    """One run: deterministic answers, unstable items drawn afresh; `drop` lowers the log-odds (a worse model)."""
    p = expit(world.logit - drop)
    return np.where(world.unstable, rng.random(len(p)) < p, world.u < p).astype(np.float64)


def population(bench: Bench, rng: np.random.Generator, draws: int = 40) -> dict[str, float]:
    """Expected accuracy per metric over many worlds: the quantity the intervals should cover."""
    acc = {m: 0.0 for m in METRICS}
    for _ in range(draws):
        p = expit(draw_world(rng, bench, 0.0).logit)
        for m, mask in bench.masks().items():
            acc[m] += p[mask].mean() / draws
    return acc


def instability_for(flip: float, bench: Bench, rng: np.random.Generator) -> float:
    """Share of unstable items that makes two runs disagree on `flip` of the items: flip = s * E[2p(1-p)]."""
    p = np.concatenate([expit(draw_world(rng, bench, 0.0).logit) for _ in range(20)])
    return flip / float(np.mean(2 * p * (1 - p)))


def drop_for(points: float, mask: np.ndarray, bench: Bench, rng: np.random.Generator) -> float:
    """Log-odds drop on `mask` that lowers its expected accuracy by `points` (bisection on a fixed sample)."""
    logits = np.concatenate([draw_world(rng, bench, 0.0).logit[mask] for _ in range(20)])
    lo, hi = 0.0, 3.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if expit(logits).mean() - expit(logits - mid).mean() < points / 100:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def naive_unpaired(base: np.ndarray, new: np.ndarray) -> float:
    """Per-item two-proportion z test, one-sided (lm-evaluation-harness style): ignores pairing and stories."""
    n = len(base)
    pooled = (base.sum() + new.sum()) / (2 * n)
    se = np.sqrt(max(pooled * (1 - pooled), 1e-12) * 2 / n)
    return float(ndtr((new.mean() - base.mean()) / se))


def naive_mcnemar(base: np.ndarray, new: np.ndarray) -> float:
    """Exact one-sided McNemar on items: paired, but takes the items of a story as independent."""
    return mcnemar_exact(int(((new - base) < 0).sum()), int(((new - base) > 0).sum()))[1]


def gate_fails(bench: Bench, base: np.ndarray, new: np.ndarray, noise: float | None) -> tuple[bool, set[str]]:
    comps = {m: compare_paired(base[mask], new[mask], bench.story[mask], resamples=0, noise_flip_rate=noise)
             for m, mask in bench.masks().items()}
    failed = {m for m, c in gate(comps, ALPHA).items() if c.regressed}
    return bool(failed), failed


def naive_fails(bench: Bench, base: np.ndarray, new: np.ndarray, test: Callable[[np.ndarray, np.ndarray], float]) -> bool:
    ps = {m: test(base[mask], new[mask]) for m, mask in bench.masks().items()}
    return any(rej for _, rej in holm(ps, ALPHA).values())


METHODS = ["unpaired z", "McNemar (items)", "gate", "gate + noise floor"]


def one_comparison(bench: Bench, base: np.ndarray, new: np.ndarray, repeat: np.ndarray) -> tuple[list[bool], set[str]]:
    noise = flip_rate(base, repeat, resamples=0).point
    plain, failed = gate_fails(bench, base, new, None)
    floored, failed_floored = gate_fails(bench, base, new, noise)
    naive = [naive_fails(bench, base, new, naive_unpaired), naive_fails(bench, base, new, naive_mcnemar)]
    return [*naive, plain, floored], failed_floored


def scenario(bench: Bench, rng: np.random.Generator, reps: int, instability: float,
             drop: np.ndarray | float = 0.0, retrained: bool = False) -> tuple[np.ndarray, dict[str, float]]:
    """Rates at which each method fails the gate, and how often each metric failed (gate + noise floor)."""
    fails = np.zeros(len(METHODS))
    per_metric = dict.fromkeys(METRICS, 0.0)
    for _ in range(reps):
        world = draw_world(rng, bench, instability)
        base, repeat = run(rng, world), run(rng, world)
        if retrained:  # another model with the same expected accuracy, correlated 0.7 with this one story by story
            other = draw_world(rng, bench, instability)
            fixed = BASE_LOGIT + ABILITY_LOGIT[bench.ability]
            logit = fixed + 0.7 * (world.logit - fixed) + np.sqrt(1 - 0.49) * (other.logit - fixed)
            mixed = World(logit, world.u, other.unstable)
            new = run(rng, mixed)
        else:
            new = run(rng, world, drop)
        got, failed = one_comparison(bench, base, new, repeat)
        fails += got
        for m in failed:
            per_metric[m] += 1 / reps
    return fails / reps, per_metric


def reused_baseline(bench: Bench, rng: np.random.Generator, baselines: int, candidates: int, instability: float) -> np.ndarray:
    """Conditional false-alarm rate of each baseline run reused for `candidates` runs of the same model."""
    rates = np.zeros((baselines, 2))
    for b in range(baselines):
        world = draw_world(rng, bench, instability)
        base = run(rng, world)
        for _ in range(candidates):
            new, repeat = run(rng, world), run(rng, world)
            noise = flip_rate(new, repeat, resamples=0).point
            rates[b] += [gate_fails(bench, base, new, None)[0], gate_fails(bench, base, new, noise)[0]]
    return rates / candidates


def coverage(bench: Bench, rng: np.random.Generator, reps: int, truth: dict[str, float],
             settings: dict[str, tuple[np.ndarray, float]]) -> dict[str, np.ndarray]:
    """Coverage of estimate_rate, of its bootstrap percentile interval alone, and of per-item Wilson."""
    out = {name: np.zeros(3) for name in settings}
    for _ in range(reps):
        world = draw_world(rng, bench, 0.1)
        high_world = World(world.logit + 3.0, world.u, world.unstable)
        for name, (mask, shift) in settings.items():
            w = high_world if shift else world
            v = run(rng, w)[mask]
            est = estimate_rate(v, bench.story[mask], seed=int(rng.integers(1 << 30)))
            t = truth[name]
            boot = _percentile(v, bench.story[mask], rng)
            lo, hi = wilson(float(v.mean()), len(v))
            out[name] += [est.low <= t <= est.high, boot[0] <= t <= boot[1], lo <= t <= hi]
    return {k: v / reps for k, v in out.items()}


def _percentile(v: np.ndarray, story: np.ndarray, rng: np.random.Generator, resamples: int = 2000) -> tuple[float, float]:
    ids, codes = np.unique(story, return_inverse=True)
    sums, sizes = np.bincount(codes, weights=v), np.bincount(codes).astype(float)
    draws = rng.integers(0, len(ids), size=(resamples, len(ids)))
    means = sums[draws].sum(1) / sizes[draws].sum(1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=400, help="replicates per scenario (SE of a 5%% rate: sqrt(.05*.95/reps))")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    bench = make_bench()
    masks = bench.masks()
    start = time.perf_counter()
    sizes = {m: (int(mask.sum()), len(np.unique(bench.story[mask]))) for m, mask in masks.items()}
    print(f"benchmark: {len(bench.story)} items in {bench.n_stories} stories; "
          + ", ".join(f"{m} {n}/{k}" for m, (n, k) in sizes.items()) + " (items/stories)")
    truth = population(bench, rng)
    print("expected accuracy: " + ", ".join(f"{m} {truth[m]:.3f}" for m in METRICS))
    se = np.sqrt(ALPHA * (1 - ALPHA) / args.reps)
    print(f"\n1. false alarms: P(any of 8 metrics fails), alpha={ALPHA} with Holm, {args.reps} reps (SE at 5%: {se:.3f})")
    print(f"{'scenario':40s}" + "".join(f"{m:>20s}" for m in METHODS))
    for flip in (0.0, 0.05, 0.15):
        s = instability_for(flip, bench, rng)
        rates, _ = scenario(bench, rng, args.reps, s)
        print(f"{f'same model, flip rate {flip:.0%}':40s}" + "".join(f"{r:20.3f}" for r in rates))
    s5 = instability_for(0.05, bench, rng)
    rates, _ = scenario(bench, rng, args.reps, s5, retrained=True)
    print(f"{'retrained, same accuracy, flip 5%':40s}" + "".join(f"{r:20.3f}" for r in rates))

    s15 = instability_for(0.15, bench, rng)
    nb, nc = max(10, args.reps // 8), 25
    cond = reused_baseline(bench, rng, nb, nc, s15)
    print(f"\n2. one baseline run reused for {nc} candidates of the same model (flip rate 15%, {nb} baselines):")
    for j, name in enumerate(["gate", "gate + noise floor"]):
        c = cond[:, j]
        print(f"   {name:20s} conditional false-alarm rate: mean {c.mean():.3f}, 90th percentile {np.quantile(c, 0.9):.3f}, "
              f"max {c.max():.3f}; baselines above alpha: {np.mean(c > ALPHA):.0%}")

    print(f"\n3. power: P(gate fails), {args.reps} reps; and P(the changed metric itself fails) with the noise floor")
    print(f"{'scenario':40s}" + "".join(f"{m:>20s}" for m in METHODS) + f"{'that metric':>14s}")
    for label, metric, points in [("ability0 -5 points", "ability0", 5.0), ("ability0 -10 points", "ability0", 10.0),
                                  ("overall -3 points", "overall", 3.0)]:
        for flip in (0.05, 0.15):
            s = instability_for(flip, bench, rng)
            delta = drop_for(points, masks[metric], bench, rng)
            drop = delta * masks[metric].astype(float)
            rates, per_metric = scenario(bench, rng, args.reps, s, drop=drop)
            print(f"{f'{label}, flip {flip:.0%}':40s}" + "".join(f"{r:20.3f}" for r in rates) + f"{per_metric[metric]:14.3f}")

    print(f"\n4. coverage of 95% intervals (nominal 0.95), {args.reps} reps (SE {np.sqrt(0.95 * 0.05 / args.reps):.3f})")
    small = np.isin(bench.story, np.flatnonzero(np.bincount(bench.story) == 4)[:10])
    settings = {"overall": (masks["overall"], 0.0), "ability0": (masks["ability0"], 0.0),
                "10 stories x 4 items": (small, 0.0), "ability0, easier (+3 log-odds)": (masks["ability0"], 3.0)}
    truth.update({name: _truth(bench, rng, mask, shift) for name, (mask, shift) in settings.items()})
    cov = coverage(bench, rng, args.reps, truth, settings)
    print(f"{'setting':40s}{'estimate_rate':>16s}{'bootstrap alone':>18s}{'item Wilson':>14s}")
    for name, c in cov.items():
        n, k = int(settings[name][0].sum()), len(np.unique(bench.story[settings[name][0]]))
        print(f"{f'{name} ({n}/{k}, rate {truth[name]:.2f})':40s}{c[0]:16.3f}{c[1]:18.3f}{c[2]:14.3f}")
    print(f"\n({time.perf_counter() - start:.0f} s)")


def _truth(bench: Bench, rng: np.random.Generator, mask: np.ndarray, shift: float) -> float:
    """Expected accuracy on the items of `mask` over many worlds (the same expectation for any items of one ability)."""
    return float(np.mean([expit(draw_world(rng, bench, 0.0).logit[mask] + shift).mean() for _ in range(200)]))


if __name__ == "__main__":
    main()
