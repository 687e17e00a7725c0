"""Gate items: thresholds and baseline comparisons, judged once every question has run. A gate reads the whole run's
records, so it can only be judged after the last item: in one process after the run loop, under pytest-xdist on the
controller once every worker has finished (the same place derived items are judged there). Each gate is reported through
pytest's ordinary reporting hooks as an item marked `tom_gate`, so `N passed, N failed`, junitxml (with the gate's
numbers as properties), `--lf` and the exit status see it like any test; nothing is raised from the terminal summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import pytest

from pytest_tom.gates import GateResult
from pytest_tom.gates.metrics import SuiteView as SuiteView  # re-exported: the gates' view of a suite lives there
from pytest_tom.gates.thresholds import threshold_results
from pytest_tom.output.junit import gate_properties
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.run.baseline import baseline_results, suite_labels

if TYPE_CHECKING:
    from pytest_tom.run.session import TomSession

GATE_MARK = "tom_gate"

When = Literal["setup", "call", "teardown"]


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


def _gate_report(nodeid: str, when: When, outcome: Literal["passed", "failed"], longrepr: Any = None,
                 props: list[tuple[str, object]] | None = None) -> pytest.TestReport:
    location = (GATE_MARK, None, nodeid)
    keywords: dict[str, Any] = {GATE_MARK: 1, nodeid: 1}
    return pytest.TestReport(nodeid, location, keywords, outcome, longrepr, when, user_properties=props or [])


def report_gates(session: pytest.Session, results: Sequence[GateResult]) -> None:
    """Report each gate through the ordinary hooks, as the xdist controller reports derived items."""
    hook = session.config.hook
    session.testscollected += len(results)
    for result in results:
        nodeid = f"{GATE_MARK}[{result.name}]"
        location = (GATE_MARK, None, nodeid)
        hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        props = gate_properties(result)  # on every phase, as an item's user_properties are (junitxml reads teardown's)
        hook.pytest_runtest_logreport(report=_gate_report(nodeid, "setup", "passed", None, props))
        call = _gate_report(nodeid, "call", "passed" if result.passed else "failed",
                            None if result.passed else result.message, props)
        _html_extras(call, result)
        hook.pytest_runtest_logreport(report=call)
        hook.pytest_runtest_logreport(report=_gate_report(nodeid, "teardown", "passed", None, props))
        hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


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
    from pytest_tom.constants import RECORD_PROPERTY

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
