"""The baseline lifecycle in a run: save, compare, update (pytest-benchmark's save/compare, syrupy's update).
`--tom-baseline-save[=PATH]` stores this run; `--tom-baseline=PATH` compares with a stored run under the
`--tom-compare-fail` rules; `--tom-baseline-update` rewrites it, never failing. What can make a comparison meaningless
is checked before the first model request: the file at configure time (`load_for_run`), and after selection whether it
covers the selected items with the same data and settings (`check_before_run`, `gates.coverage`); so is a published
row for each `--tom-reference` model and `ref:` threshold: a usage error now, not an empty comparison after the run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_tom.errors import TomConfigError, TomError
from pytest_tom.framework.reference import check_names, shipped
from pytest_tom.gates.baseline import SuiteRun, build_baseline, describe_missing, load_baseline, write_baseline
from pytest_tom.gates.compare import CompareRule, compare, parse_compare_rule
from pytest_tom.gates.coverage import PlannedSuite, check_coverage, planned_metrics
from pytest_tom.gates.result import GateResult
from pytest_tom.gates.thresholds import parse_threshold, reference_problem
from pytest_tom.output.report import version

if TYPE_CHECKING:
    from pytest_tom.gates.metrics import SuiteView
    from pytest_tom.run.session import TomSession

DEFAULT_RULE = "*.accuracy"
"""What a comparison gates on when no --tom-compare-fail rule is given: each suite's accuracy."""


def rules(tom: TomSession) -> list[CompareRule]:
    return [parse_compare_rule(r) for r in tom.options.gates.compare] or [parse_compare_rule(DEFAULT_RULE)]


def load_for_run(tom: TomSession) -> None:
    """Read and validate --tom-baseline now, at configure time: a bad file is a usage error before any collection.
    Raises TomConfigError. Not when --tom-baseline-update is to create a file that is not there (a dangling symlink is
    there: it is refused).
    """
    cfg = tom.options.gates
    if cfg.baseline is None or (cfg.update and not os.path.lexists(cfg.baseline)):
        return
    tom.baseline = load_baseline(cfg.baseline)


def _selected(items: Sequence[Any]) -> dict[str, list[Any]]:
    """The selected question items by suite id, suites in the order of their first item."""
    from pytest_tom.engine.suites import LoadedSuite

    out: dict[str, list[Any]] = {}
    for it in items:
        if isinstance(getattr(it, "suite", None), LoadedSuite) and hasattr(it, "sample") and hasattr(it, "tom_key"):
            out.setdefault(it.suite.sid, []).append(it)
    return out


def planned_suites(items: Sequence[Any]) -> list[PlannedSuite]:
    """The suites of the selected items as a comparison will see them: names, settings, data, each metric's units. Named
    as `run.gates.suite_views` names them; a group counts only when all its members are selected (otherwise it is
    skipped, never judged on part of its members).
    """
    chosen = _selected(items)
    suites = {sid: its[0].suite for sid, its in chosen.items()}
    selected = {it.tom_key for its in chosen.values() for it in its}
    derived: dict[str, list[Any]] = {}
    for it in items:
        if hasattr(it, "derived") and it.suite.sid in suites and all(k in selected for k in it.member_keys()):
            derived.setdefault(it.suite.sid, []).append(it.derived)
    return [PlannedSuite(
        name=name, benchmark=suite.benchmark.name,
        settings=dict(suite.info.get("settings") or {}), data_fingerprint=str(suite.info.get("data_fingerprint") or ""),
        metrics=planned_metrics(suite.benchmark, [it.sample for it in chosen[sid]], derived.get(sid, [])),
        group_metrics=frozenset(d.kind for d in derived.get(sid, [])), settings_before=suite.benchmark.settings_before())
        for (sid, suite), name in zip(suites.items(), suite_labels(list(suites)), strict=True)]


def suite_labels(sids: Sequence[str]) -> list[str]:
    """Each suite's name in gate rules: its last part, or its full id when two modules both name a suite `tombench`."""
    short = [sid.rsplit("::", 1)[-1] for sid in sids]
    return [name if short.count(name) == 1 else sid for sid, name in zip(sids, short, strict=True)]


def check_before_run(tom: TomSession, items: Sequence[Any]) -> None:
    """Does the baseline cover the selected items, and has every wanted published model and `ref:` rule (the command
    line's or a suite's own) a row in them? TomConfigError if not, named as the gates name them. Notes on a partial
    comparison (a `:partial` rule, or --tom-baseline-update) go to the end of the run.
    """
    cfg = tom.options.gates
    if tom.baseline is not None:
        tom.notes.extend(f"pytest-tom: {note}" for note in check_coverage(
            tom.baseline, planned_suites(items), rules(tom), force=cfg.force, lenient=cfg.update))
    suites = [its[0].suite for its in _selected(items).values()]
    if not suites:
        return
    entries = [(name, s.benchmark.name, dict(s.info.get("settings") or {}))
               for name, s in zip(suite_labels([s.sid for s in suites]), suites, strict=True)]
    published = {bench: shipped(bench) for _, bench, _ in entries}
    if tom.options.references:
        check_names(tom.options.references, published)
    checks = [("--tom-threshold", rule, entries) for rule in cfg.thresholds]
    checks += [(f"suite {s.sid} gates", parse_threshold(text), [entry])
               for entry, s in zip(entries, suites, strict=True) for text in s.info.get("gates") or ()]
    for where, rule, scope in checks:
        if rule.reference:
            check_names([rule.reference], published, flag=f"{where} {rule.text!r}")
            problem = reference_problem(rule, scope, own=where != "--tom-threshold")
            if problem is not None:
                raise TomConfigError(f"{where}: {problem}")


def suite_runs(views: Sequence[SuiteView], noise_flip_rate: float | None = None) -> list[SuiteRun]:
    """The run as the baseline module sees it; a measured flip rate is stored with a saved baseline."""
    return [
        SuiteRun(suite_id=v.name, benchmark=v.benchmark.name, settings=dict(v.info.get("settings") or {}),
                 data_fingerprint=str(v.info.get("data_fingerprint") or ""), records=v.records, derived=v.derived,
                 metrics=v.metrics(), noise_flip_rate=noise_flip_rate, settings_before=v.benchmark.settings_before())
        for v in views
    ]


def baseline_results(views: Sequence[SuiteView], tom: TomSession) -> list[GateResult]:
    """Compare with `--tom-baseline` (or update it) and save `--tom-baseline-save`; the gates that result."""
    cfg = tom.options.gates
    runs = suite_runs(views, cfg.noise_flip_rate)
    model = tom.records.model or {}
    results: list[GateResult] = []
    if cfg.baseline is not None and (cfg.baseline.exists() or not cfg.update):
        results.extend(_compare(runs, tom, cfg.baseline))
    if cfg.update and cfg.baseline is not None:
        results = [replace(r, passed=True, details={**r.details, "updated": True},
                           message=f"{r.message}\n(--tom-baseline-update: not failing; the baseline is rewritten from "
                                   "this run)") for r in results]
    targets = [p for p in (cfg.save, cfg.baseline if cfg.update else None) if p is not None]
    if targets:
        data = build_baseline(runs, model_uri=str(model.get("uri") or tom.options.model or ""),
                              model_fingerprint=str(model.get("fingerprint") or ""), plugin_version=version())
        for path in dict.fromkeys(targets):
            try:
                write_baseline(path, data)
                tom.notes.append(f"pytest-tom: baseline written to {path} ({sum(len(r.records) for r in runs)} questions)")
            except OSError as exc:
                results.append(GateResult(f"baseline-save:{path}", "baseline", "", False, None,
                                          f"the baseline could not be written to {path}: {exc}"))
    return results


def _compare(runs: Sequence[SuiteRun], tom: TomSession, path: Path) -> list[GateResult]:
    cfg = tom.options.gates
    name = f"baseline:{path.name}"
    if tom.baseline is None and not path.exists():
        return [GateResult(name, "baseline", "", False, None, describe_missing(path))]
    try:
        baseline = tom.baseline if tom.baseline is not None else load_baseline(path)
        return compare(baseline, runs, rules(tom), alpha=cfg.alpha, force=cfg.force, noise_flip_rate=cfg.noise_flip_rate)
    except TomError as exc:
        return [GateResult(name, "baseline", "", False, None, str(exc))]
