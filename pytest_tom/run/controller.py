"""The pytest-xdist controller's own items: derived results judged over every worker's records. A derived item's members
may run on different workers, so workers hand the definitions over (`TomSession.hand_derived_to_controller`) and the
controller judges each after the last worker finished, reporting it through the ordinary hooks like an item that ran.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Literal

import pytest

from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.derived import partial_group
from pytest_tom.engine.records import DerivedSpec
from pytest_tom.record import Record, Verdict
from pytest_tom.run.failures import derived_failure
from pytest_tom.run.gates import is_gate_run

if TYPE_CHECKING:
    from pytest_tom.run.session import TomSession


Outcome = Literal["passed", "failed", "skipped"]
When = Literal["setup", "call", "teardown"]


def _report(spec: DerivedSpec, when: When, outcome: Outcome, longrepr: Any = None,
            props: list[tuple[str, object]] | None = None) -> pytest.TestReport:
    keywords: dict[str, Literal[1]] = {m: 1 for m in spec.derived.marks}
    keywords[spec.nodeid.rsplit("::", 1)[-1]] = 1
    return pytest.TestReport(spec.nodeid, spec.location, keywords, outcome, longrepr, when, user_properties=props or [])


def judge_derived(config: pytest.Config, session: pytest.Session, tom: TomSession) -> None:
    """Judge and report every derived item the workers handed over."""
    specs = tom.derived_specs
    if not specs or session.shouldfail or session.shouldstop:
        return
    members: dict[str, dict[str, Record]] = defaultdict(dict)
    for r in tom.records.items.values():
        members[r.suite][r.sample_id] = r
    within_budget = tom.records.errors() <= tom.options.max_errors
    session.testscollected += len(specs)
    hook = config.hook
    for spec in specs:
        hook.pytest_runtest_logstart(nodeid=spec.nodeid, location=spec.location)
        reports = _judge_one(spec, members[spec.suite], tom, within_budget)
        for rep in reports:
            hook.pytest_runtest_logreport(report=rep)
        hook.pytest_runtest_logreport(report=_report(spec, "teardown", "passed"))
        hook.pytest_runtest_logfinish(nodeid=spec.nodeid, location=spec.location)


def _judge_one(spec: DerivedSpec, members: dict[str, Record], tom: TomSession, within_budget: bool) -> list[pytest.TestReport]:
    path, line, _ = spec.location
    d = spec.derived
    if not spec.selected:
        reason = partial_group(d, sum(m in members for m in d.members))
        return [_report(spec, "setup", "skipped", (path, line, f"Skipped: {reason}"))]
    bench = tom.records.benchmark(spec.suite)
    if bench is None:
        return [_report(spec, "setup", "failed", f"pytest-tom: cannot rebuild benchmark {d.benchmark!r} to judge {d.id}")]
    rec = tom.records.judge(spec, members, bench)
    props: list[tuple[str, object]] = [(RECORD_PROPERTY, rec.to_dict())]
    if rec.verdict is Verdict.ERROR:
        if within_budget:
            reason = f"tolerated by --tom-max-errors={tom.options.max_errors}: {rec.message}"
            return [_report(spec, "setup", "skipped", (path, line, f"Skipped: {reason}"), props)]
        return [_report(spec, "setup", "failed", rec.message, props)]
    if rec.verdict is Verdict.SKIPPED:
        return [_report(spec, "setup", "skipped", (path, line, f"Skipped: {rec.message}"))]
    setup = _report(spec, "setup", "passed")
    if rec.verdict is Verdict.PASSED or is_gate_run(tom):
        return [setup, _report(spec, "call", "passed", None, props)]
    return [setup, _report(spec, "call", "failed", derived_failure(tom.config, rec, path), props)]
