"""Items judged once every question has run, reported through pytest's ordinary reporting hooks like items that ran, so
`N passed, N failed`, junitxml, `--lf` and the exit status see them like any test; nothing is raised from the terminal
summary. Gates (thresholds and baseline comparisons, marked `tom_gate`, their numbers as junitxml properties) read the
whole run's records: in one process after the run loop, under pytest-xdist on the controller once every worker has
finished. There too the controller judges the derived items: their members may run on different workers, so workers hand
the definitions over (`TomSession.hand_derived_to_controller`).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pytest

from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.derived import partial_group
from pytest_tom.engine.records import DerivedSpec
from pytest_tom.gates import GateResult
from pytest_tom.gates.metrics import SuiteView as SuiteView  # re-exported: the gates' view of a suite lives there
from pytest_tom.gates.thresholds import threshold_results
from pytest_tom.output.junit import gate_properties
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.run.baseline import baseline_results, suite_labels
from pytest_tom.run.failures import derived_failure

if TYPE_CHECKING:
    from pytest_tom.run.session import TomSession

GATE_MARK = "tom_gate"

When = Literal["setup", "call", "teardown"]
Report = Callable[..., pytest.TestReport]
"""`_report` with the item's node id, location and keywords given: (when, outcome, longrepr=None, props=None)."""


def _report(nodeid: str, location: tuple[str, int | None, str], keywords: Iterable[str], when: When,
            outcome: Literal["passed", "failed", "skipped"], longrepr: Any = None,
            props: list[tuple[str, object]] | None = None) -> pytest.TestReport:
    return pytest.TestReport(nodeid, location, dict.fromkeys(keywords, 1), outcome, longrepr, when,
                             user_properties=props or [])


def _log(session: pytest.Session, nodeid: str, location: tuple[str, int | None, str],
         reports: Sequence[pytest.TestReport]) -> None:
    """Report one item that ran nowhere, phase by phase, as the runner reports an item that ran."""
    hook = session.config.hook
    hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    for rep in reports:
        hook.pytest_runtest_logreport(report=rep)
    hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def is_gate_run(tom: TomSession) -> bool:
    """Thresholds or a baseline configured, or a suite declaring its own gates: wrong answers then do not fail items."""
    return tom.options.gates.active or any(s.info.get("gates") for s in tom.suites.loaded.values()) or any(
        info.get("gates") for info in tom.records.suites.values())


def suite_views(tom: TomSession) -> list[SuiteView]:
    tom.gather()
    records: dict[str, list[Record]] = {}
    for r in tom.records.items.values():
        records.setdefault(r.suite, []).append(r)
    derived: dict[str, list[DerivedRecord]] = {}
    for d in tom.records.derived.values():
        derived.setdefault(d.suite, []).append(d)
    sids = sorted(set(records) | set(derived))
    return [SuiteView(sid, label, bench, dict(tom.records.suites.get(sid) or {}), records.get(sid, []), derived.get(sid, []))
            for sid, label in zip(sids, suite_labels(sids), strict=True) if (bench := tom.records.benchmark(sid))]


def judge_gates(session: pytest.Session, tom: TomSession) -> list[GateResult]:
    """Evaluate every configured gate and report each as an item; the results also go to the report."""
    cfg = tom.options.gates
    if not is_gate_run(tom) or session.shouldfail or session.shouldstop:
        return []
    views = suite_views(tom)
    results = threshold_results(views, cfg.thresholds)
    results.extend(baseline_results(views, tom))
    report_gates(session, results)
    return results


def report_gates(session: pytest.Session, results: Sequence[GateResult]) -> None:
    """Report each gate through the ordinary hooks, as the xdist controller reports derived items."""
    session.testscollected += len(results)
    for result in results:
        nodeid = f"{GATE_MARK}[{result.name}]"
        location = (GATE_MARK, None, nodeid)
        report: Report = functools.partial(_report, nodeid, location, (GATE_MARK, nodeid))
        props = gate_properties(result)  # on every phase, as an item's user_properties are (junitxml reads teardown's)
        call = report("call", "passed" if result.passed else "failed", None if result.passed else result.message, props)
        _html_extras(call, result)
        _log(session, nodeid, location, [report("setup", "passed", None, props), call, report("teardown", "passed", None, props)])


def _html_extras(report: pytest.TestReport, result: GateResult) -> None:
    """With pytest-html installed, its report shows each gate's numbers and message (its `extras` convention)."""
    try:
        from pytest_html import extras
    except ImportError:
        return
    import html

    report.extras = [  # type: ignore[attr-defined]
        extras.html(f"<pre>{html.escape(result.message)}</pre>"),
        extras.json(result.to_dict(), name="gate"),
    ]


def teststatus(report: pytest.TestReport, tom: TomSession) -> tuple[str, str, str] | None:
    """In a gate run, a wrong answer is its own status (`27 wrong`), neither a failure nor a pass."""
    if report.when != "call" or not report.passed or not is_gate_run(tom):
        return None
    for name, value in report.user_properties:
        if name != RECORD_PROPERTY or not isinstance(value, dict):
            continue
        if value.get("kind") == "group":
            if value.get("outcome") == Verdict.FAILED.value:
                return "inconsistent", "i", "INCONSISTENT"
        elif value.get("outcome") == Outcome.INCORRECT.value:
            return "wrong", "w", "WRONG"
        elif value.get("outcome") == Outcome.UNPARSEABLE.value:
            return "unparseable", "u", "UNPARSEABLE"
    return None


def summary_lines(results: Sequence[GateResult]) -> list[str]:
    """One line per gate for the terminal, in words (`gates.wording`); the failure section and report hold the rest."""
    if not results:
        return []
    from pytest_tom.gates.wording import line

    failed = sum(not r.passed for r in results)
    head = f"gates: all {len(results)} passed" if not failed else f"gates: {failed} of {len(results)} failed"
    return [head] + [f"  {line(r)}" for r in results]


def judge_derived(session: pytest.Session, tom: TomSession) -> None:
    """On the xdist controller: judge and report every derived item the workers handed over."""
    specs = tom.derived_specs
    if not specs or session.shouldfail or session.shouldstop:
        return
    members: dict[str, dict[str, Record]] = defaultdict(dict)
    for r in tom.records.items.values():
        members[r.suite][r.sample_id] = r
    within_budget = tom.records.errors() <= tom.options.max_errors
    session.testscollected += len(specs)
    for spec in specs:
        report: Report = functools.partial(_report, spec.nodeid, spec.location,
                                           (*spec.derived.marks, spec.nodeid.rsplit("::", 1)[-1]))
        reports = _judge_one(spec, report, members[spec.suite], tom, within_budget)
        _log(session, spec.nodeid, spec.location, [*reports, report("teardown", "passed")])


def _judge_one(spec: DerivedSpec, report: Report, members: dict[str, Record], tom: TomSession,
               within_budget: bool) -> list[pytest.TestReport]:
    path, line, _ = spec.location
    d = spec.derived

    def skipped(reason: str, props: list[tuple[str, object]] | None = None) -> list[pytest.TestReport]:  # at the suite's line
        return [report("setup", "skipped", (path, None if line is None else line + 1, f"Skipped: {reason}"), props)]

    if not spec.selected:
        return skipped(partial_group(d, sum(m in members for m in d.members)))
    bench = tom.records.benchmark(spec.suite)
    if bench is None:
        return [report("setup", "failed", f"pytest-tom: cannot rebuild benchmark {d.benchmark!r} to judge {d.id}")]
    rec = tom.records.judge(spec, members, bench)
    props: list[tuple[str, object]] = [(RECORD_PROPERTY, rec.to_dict())]
    if rec.verdict is Verdict.ERROR:
        if within_budget:
            return skipped(f"tolerated by --tom-max-errors={tom.options.max_errors}: {rec.message}", props)
        return [report("setup", "failed", rec.message, props)]
    if rec.verdict is Verdict.SKIPPED:
        return skipped(rec.message)
    if rec.verdict is Verdict.PASSED or is_gate_run(tom):
        return [report("setup", "passed"), report("call", "passed", None, props)]
    return [report("setup", "passed"), report("call", "failed", derived_failure(tom.config, rec, path), props)]
