"""The baseline lifecycle in a run: save, compare, update (pytest-benchmark's save/compare, syrupy's update).

`--tom-baseline-save[=PATH]` stores this run; `--tom-baseline=PATH` compares with a stored
run under the `--tom-compare-fail` rules; `--tom-baseline-update` rewrites that file from
this run and reports the comparisons without failing on them. A missing baseline is a
failing gate that says how to create one; a comparison across other data, protocol or
settings is refused unless `--tom-baseline-force`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_tom.errors import TomError
from pytest_tom.gates.baseline import SuiteRun, build_baseline, describe_missing, load_baseline, write_baseline
from pytest_tom.gates.compare import compare, parse_compare_rule
from pytest_tom.gates.result import GateResult

if TYPE_CHECKING:
    from pytest_tom.run.gates import SuiteView
    from pytest_tom.run.session import TomSession


def suite_runs(views: Sequence[SuiteView], noise_flip_rate: float | None = None) -> list[SuiteRun]:
    """The run as the baseline module sees it; a measured flip rate is stored with a saved baseline."""
    return [
        SuiteRun(suite_id=v.name, benchmark=v.benchmark.name, settings=dict(v.info.get("settings") or {}),
                 data_fingerprint=str(v.info.get("data_fingerprint") or ""), records=v.records, derived=v.derived,
                 metrics=v.metrics(), noise_flip_rate=noise_flip_rate)
        for v in views
    ]


def _version() -> str:
    from pytest_tom.report import _version as report_version

    return report_version()


def baseline_results(views: Sequence[SuiteView], tom: TomSession) -> list[GateResult]:
    """Compare with `--tom-baseline` (or update it) and save `--tom-baseline-save`; the gates that result."""
    cfg = tom.options.gates
    runs = suite_runs(views, cfg.noise_flip_rate)
    model = tom.records.model or {}
    results: list[GateResult] = []
    if cfg.baseline is not None and (cfg.baseline.exists() or not cfg.update):
        results.extend(_compare(runs, tom))
    if cfg.update and cfg.baseline is not None:
        results = [replace(r, passed=True, details={**r.details, "updated": True},
                           message=f"{r.message}\n(--tom-baseline-update: not failing; the baseline is rewritten from "
                                   "this run)") for r in results]
    targets = [p for p in (cfg.save, cfg.baseline if cfg.update else None) if p is not None]
    if targets:
        data = build_baseline(runs, model_uri=str(model.get("uri") or tom.options.model or ""),
                              model_fingerprint=str(model.get("fingerprint") or ""), plugin_version=_version())
        for path in dict.fromkeys(targets):
            try:
                write_baseline(path, data)
                tom.notes.append(f"pytest-tom: baseline written to {path} ({sum(len(r.records) for r in runs)} questions)")
            except OSError as exc:
                results.append(GateResult(f"baseline-save:{path}", "baseline", "", False, None,
                                          f"the baseline could not be written to {path}: {exc}"))
    return results


def _compare(runs: Sequence[SuiteRun], tom: TomSession) -> list[GateResult]:
    cfg = tom.options.gates
    if cfg.baseline is None:
        return []
    name = f"baseline:{cfg.baseline.name}"
    if not cfg.baseline.exists():
        return [GateResult(name, "baseline", "", False, None, describe_missing(cfg.baseline))]
    try:
        baseline = load_baseline(cfg.baseline)
        rules = [parse_compare_rule(r) for r in cfg.compare] or [parse_compare_rule("*.accuracy")]
        return compare(baseline, runs, rules, alpha=cfg.alpha, force=cfg.force, noise_flip_rate=cfg.noise_flip_rate)
    except TomError as exc:
        return [GateResult(name, "baseline", "", False, None, str(exc))]
