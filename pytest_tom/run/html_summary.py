"""pytest-tom in pytest-html's report (`--html=...`): its summary section gains each suite's metrics and, with
--tom-reference, a "pytest-tom" block with the published rows beside this run's numbers (`output.html_summary`).
pytest-html (4.x) calls `pytest_html_results_summary` from its own `pytest_sessionfinish` (trylast), just before it
writes the page: after the run loop, so every record is in (on the xdist controller too, where alone pytest-html writes)
and the gates are judged; the rows come from the same cached JSON report that the summary, `--tom-report` and
`--tom-markdown` use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_tom.run.session import TomSession


class HtmlSummary:
    """The pytest-html hook; registered by `register` only where it has something to add."""

    def __init__(self, tom: TomSession) -> None:
        self.tom = tom

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str], session: Any) -> None:
        """Append the block to `summary`. Never raises: pytest-html would lose the whole page with it; the terminal says
        what went wrong in one line instead.
        """
        from pytest_tom.output.html_summary import metrics_html, reference_html
        from pytest_tom.output.summary import every_suite_metrics

        tom = self.tom
        try:
            report = tom.report()
            if report is None:
                return
            metrics = every_suite_metrics(report, tom.records.benchmark)
            texts = [metrics_html(metrics), reference_html(metrics, {s["id"]: s["reference"] for s in report.get("suites", [])
                                                                     if "reference" in s})]
        except Exception as exc:  # noqa: BLE001 - see the docstring
            tom.problems.append(f"pytest-tom: ERROR: the metrics were not added to the HTML report: "
                                f"{type(exc).__name__}: {exc}")
            return
        summary.extend(text for text in texts if text)


def register(config: pytest.Config, tom: TomSession) -> None:
    """Register `HtmlSummary` where pytest-html is active, outside xdist workers (pytest-html writes on the controller), and
    only for a pytest-html whose hook passes `session` (4.x): 3.x's hook has no such argument and wants its own `py.xml`
    objects, and pluggy refuses an implementation that asks for an argument its spec lacks.
    """
    spec = getattr(getattr(config.hook, "pytest_html_results_summary", None), "spec", None)
    if tom.worker is None and spec is not None and "session" in spec.argnames:
        config.pluginmanager.register(HtmlSummary(tom), "pytest-tom-html")
