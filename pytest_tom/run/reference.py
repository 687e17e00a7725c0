"""`--tom-reference` and `ref:` thresholds checked after selection, before any model request: a published model no
benchmark of the run has, or a `ref:` rule with no row under the run's settings, is a usage error now rather than an
empty comparison after an hour of model time. The rows themselves are shown by `output` (summary, report, Markdown).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_tom.errors import TomConfigError
from pytest_tom.framework.reference import check_names, shipped
from pytest_tom.gates.thresholds import parse_threshold, reference_problem
from pytest_tom.run.baseline import suite_labels

if TYPE_CHECKING:
    from pytest_tom.run.session import TomSession


def check_references(tom: TomSession, items: Sequence[Any]) -> None:
    """Raise TomConfigError when a wanted model or a `ref:` rule (the command line's or a suite's own) has nothing to
    compare with in the selected suites, named as the gates name them.
    """
    from pytest_tom.engine.suites import LoadedSuite

    suites: dict[str, LoadedSuite] = {}
    for it in items:
        suite = getattr(it, "suite", None)
        if isinstance(suite, LoadedSuite) and hasattr(it, "sample"):
            suites.setdefault(suite.sid, suite)
    if not suites:
        return
    entries = [(name, s.benchmark.name, dict(s.info.get("settings") or {}))
               for name, s in zip(suite_labels(list(suites)), suites.values(), strict=True)]
    rows = {bench: shipped(bench) for _, bench, _ in entries}
    if tom.options.references:
        check_names(tom.options.references, rows)
    rules = [("--tom-threshold", rule, entries) for rule in tom.options.gates.thresholds]
    rules += [(f"suite {s.sid} gates", parse_threshold(text), [entry])
              for entry, s in zip(entries, suites.values(), strict=True) for text in s.info.get("gates") or ()]
    for where, rule, scope in rules:
        if not rule.reference:
            continue
        check_names([rule.reference], rows, flag=f"{where} {rule.text!r}")
        problem = reference_problem(rule, scope, own=where != "--tom-threshold")
        if problem is not None:
            raise TomConfigError(f"{where}: {problem}")
