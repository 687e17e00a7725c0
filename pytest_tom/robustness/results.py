"""Robustness results: one derived record of kind "robustness" per (question, strategy), so it travels through
pytest-xdist and the JSON report like every aggregate assertion; its details say whether the original was right, how
many perturbations were tried, and the minimal breaking one. Per strategy they add up to the flip rate (share of
questions some perturbation broke) and the robust accuracy (share right on the original and under every perturbation
tried), both gateable. The hypothesis profiles (`tom-ci`, `tom-dev`) are registered here: the options check a profile
name before any item exists.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_tom.record import DerivedRecord, Verdict

KIND = "robustness"
MARK = "tom_robustness"

_registered_with: object = None
"""The hypothesis `settings` class our profiles were registered on: once per hypothesis import. Compared by identity,
not a flag: pytest's own tests (pytester) drop and re-import hypothesis between in-process runs while this module stays,
and a fresh hypothesis has no profiles.
"""


def register_profiles() -> None:
    """`tom-ci` (reproducible: derandomized, no database) and `tom-dev` (database on, so failures replay first)."""
    global _registered_with
    from hypothesis import HealthCheck, settings

    if _registered_with is settings:
        return
    quiet = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
    settings.register_profile("tom-ci", derandomize=True, database=None, deadline=None, suppress_health_check=quiet,
                              print_blob=False)
    settings.register_profile("tom-dev", deadline=None, suppress_health_check=quiet)
    _registered_with = settings


def judged(derived: Iterable[DerivedRecord]) -> list[DerivedRecord]:
    return [d for d in derived if d.kind == KIND and d.verdict in (Verdict.PASSED, Verdict.FAILED)]


def _question(d: DerivedRecord) -> str:
    return d.members[0] if d.members else d.derived_id


def _by_strategy(derived: Iterable[DerivedRecord]) -> list[tuple[str, list[DerivedRecord]]]:
    by_strategy: dict[str, list[DerivedRecord]] = defaultdict(list)
    for d in derived:
        if d.kind == KIND:
            by_strategy[str(d.details.get("strategy", "?"))].append(d)
    return sorted(by_strategy.items())


def units(derived: Iterable[DerivedRecord], cluster: Callable[[Mapping[str, str], str], str]
          ) -> dict[str, tuple[list[tuple[str, float, str]], str, bool]]:
    """Gate metric units by name: (unit id, value, cluster), a description, and whether higher is better."""
    rows = judged(derived)
    if not rows:
        return {}
    out: dict[str, tuple[list[tuple[str, float, str]], str, bool]] = {}
    for name, ds in _by_strategy(rows):
        out[f"flip_rate.{name}"] = (
            [(d.derived_id, 0.0 if d.passed else 1.0, cluster(d.facets, _question(d))) for d in ds],
            f"share of questions a {name} perturbation broke", False)
        out[f"robust_accuracy.{name}"] = (
            [(d.derived_id, 1.0 if d.passed and d.details.get("original_correct") else 0.0,
              cluster(d.facets, _question(d))) for d in ds],
            f"share of questions right on the original and under every {name} perturbation tried", True)
    per_question: dict[str, list[DerivedRecord]] = defaultdict(list)
    for d in rows:
        per_question[_question(d)].append(d)
    out["robust_accuracy"] = (
        [(q, 1.0 if all(d.passed and d.details.get("original_correct") for d in ds) else 0.0,
          cluster(ds[0].facets, q)) for q, ds in sorted(per_question.items())],
        "share of questions right on the original and under every perturbation of every strategy tried", True)
    return out


def summarize(derived: Sequence[DerivedRecord]) -> dict[str, Any]:
    """Per strategy: questions judged, perturbations tried, questions broken, flip rate, robust accuracy."""
    out: dict[str, Any] = {}
    for name, ds in _by_strategy(derived):
        rows = judged(ds)
        n = len(rows)
        broken = sum(not d.passed for d in rows)
        robust = sum(d.passed and bool(d.details.get("original_correct")) for d in rows)
        right = sum(bool(d.details.get("original_correct")) for d in rows)
        out[name] = {"kind": str(ds[0].details.get("perturbation_kind", "")), "questions": n,
                     "skipped": sum(d.verdict is Verdict.SKIPPED for d in ds),
                     "errors": sum(d.verdict is Verdict.ERROR for d in ds),
                     "tried": sum(int(d.details.get("tried", 0)) for d in rows), "broken": broken,
                     "flip_rate": broken / n if n else None, "robust_accuracy": robust / n if n else None,
                     "original_accuracy": right / n if n else None}
    return out


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    lines = []
    for name, s in summary.items():
        if not s["questions"]:
            lines.append(f"  robustness {name}: no question judged ({s['skipped']} skipped, {s['errors']} errors)")
            continue
        what = "broke" if s["kind"] == "invariance" else "was not followed on"
        lines.append(f"  robustness {name} ({s['kind']}): {s['questions']} questions, {s['tried']} perturbations tried; one "
                     f"{what} {s['broken']} ({s['flip_rate']:.1%}); robust accuracy {s['robust_accuracy']:.1%} "
                     f"(originals {s['original_accuracy']:.1%})" + (f"; {s['skipped']} skipped" if s["skipped"] else ""))
    return lines
