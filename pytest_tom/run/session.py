"""Per-run state, split by concern: suites and sampling, planning, records and report. `TomSession` only composes them
and answers the plugin's hooks, each of which is a line or two in `plugin.py`. It lives in the config stash.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_tom.engine.planning import Planner
from pytest_tom.engine.records import DerivedSpec, RunRecords
from pytest_tom.engine.suites import Suites, whole_cluster_sample
from pytest_tom.errors import TomConfigError
from pytest_tom.evals import Registry
from pytest_tom.models import SchemeRegistry, as_model
from pytest_tom.models.base import Model
from pytest_tom.options import TomOptions, report_path_problem
from pytest_tom.run.progress import Progress
from pytest_tom.run.xdist import OUTPUT_KEY, worker_of

SESSION_KEY = pytest.StashKey["TomSession"]()


def tom_session(config: pytest.Config) -> TomSession:
    return config.stash[SESSION_KEY]


class TomSession:
    def __init__(self, config: pytest.Config, options: TomOptions, registry: Registry,
                 backends: SchemeRegistry | None = None) -> None:
        self.config = config
        self.options = options
        self.registry = registry
        self.backends = backends or SchemeRegistry()
        self.worker = worker_of(config)
        self.suites = Suites(options, registry)
        self.planner = Planner(options, benchmark_names=registry.names(), worker=self.worker,
                               progress=Progress(config, options.progress),
                               on_results=lambda results: config.hook.pytest_tom_results_ready(session=self, results=results))
        self.records = RunRecords(registry)
        self._selected: set[str] | None = None
        self.sample_notes: list[str] = []
        self._report: dict[str, Any] | None = None
        self._gathered = False
        self.derived_specs: list[DerivedSpec] = []
        """On the xdist controller: the derived items the workers handed over."""
        self.collection_order: list[str] = []
        """On the xdist controller: the node ids as a worker collected them, so the report lists records in
        collection order as one process does, not in the order workers finished."""
        self.problems: list[str] = []
        """Lines the run's end must show (the report not written, the cache not closed)."""
        self.notes: list[str] = []
        """Lines for the end of the terminal summary (a baseline written...)."""
        self.gate_results: list[Any] = []
        """The gates' `GateResult`s, once judged (one process, or the xdist controller)."""
        self.baseline: Any = None
        """--tom-baseline as read and validated at configure time (`run.baseline.load_for_run`)."""
        self.refusal: str | None = None
        """On an xdist worker: why the run must not start (a baseline that does not cover it); the first item stops it."""

    @property
    def is_controller(self) -> bool:
        """True on the pytest-xdist controller, which runs no items itself."""
        return self.worker is None and self.config.pluginmanager.has_plugin("dsession")

    def default_model(self) -> Model:
        """The model --tom-model names (what the `tom_model` fixture returns unless overridden)."""
        uri = self.options.model
        if not uri:
            raise TomConfigError("no model to test: pass --tom-model=URI (e.g. random, mock:first, python:pkg.mod:fn, "
                                 "replay:report.json) or override the tom_model fixture in conftest.py")
        made = self.config.hook.pytest_tom_make_model(uri=uri, config=self.config)
        return as_model(made, uri=uri) if made is not None else self.backends.make(uri)

    def sample(self, items: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """Keep a stratified sample of each sampled suite's questions; return (kept, deselected)."""
        by_suite: dict[str, list[Any]] = defaultdict(list)
        for it in items:
            if hasattr(it, "sample") and it.suite.sample is not None:
                by_suite[it.suite.sid].append(it)
        if not by_suite:
            return list(items), []
        drop: set[str] = set()
        strata: dict[str, list[str]] = {}
        for sid, qitems in by_suite.items():
            suite, b = qitems[0].suite, qitems[0].suite.benchmark
            keep, used = whole_cluster_sample(
                [(s.id, b.cluster(s.facets, s.id) if b.sample_whole else s.id, tuple(s.facets.get(f, "") for f in b.strata))
                 for s in (it.sample for it in qitems)], suite.sample or 0, suite.seed)
            strata[sid] = [b.strata[i] for i in used]
            drop.update(it.tom_key for it in qitems if it.sample.id not in keep)
        kept_keys = {it.tom_key for it in items if hasattr(it, "sample") and it.tom_key not in drop}
        kept: list[Any] = []
        deselected: list[Any] = []
        for it in items:
            if hasattr(it, "sample"):
                (deselected if it.tom_key in drop else kept).append(it)
            elif hasattr(it, "question_key") and it.suite.sample is not None:
                (kept if it.question_key in kept_keys else deselected).append(it)  # a robustness item follows its question
            elif hasattr(it, "derived") and it.suite.sample is not None:
                # A sample splits groups at random; drop them rather than skip hundreds.
                (kept if set(it.member_keys()) <= kept_keys else deselected).append(it)
            else:
                kept.append(it)
        self.sample_notes = [n for n in (note_sample(q, deselected, strata[sid]) for sid, q in by_suite.items()) if n]
        return kept, deselected

    def selected_keys(self, items: Sequence[Any]) -> set[str]:
        if self._selected is None:
            self._selected = {it.tom_key for it in items if hasattr(it, "sample")}
        return self._selected

    def hand_derived_to_controller(self, items: list[Any]) -> None:
        """On an xdist worker: take derived items out of the run and publish them for the controller."""
        if self.worker is None:
            return
        derived = [it for it in items if hasattr(it, "derived")]
        if not derived:
            return
        selected = self.selected_keys([it for it in items if not hasattr(it, "derived")])
        items[:] = [it for it in items if not hasattr(it, "derived")]
        out = self.config.workeroutput.setdefault(OUTPUT_KEY, {})  # type: ignore[attr-defined]
        out["derived"] = [it.spec(selected).to_dict() for it in derived]

    def publish(self) -> None:
        """On an xdist worker: hand suite settings, engine statistics and answers to the controller."""
        out = self.config.workeroutput.setdefault(OUTPUT_KEY, {})  # type: ignore[attr-defined]
        out["suites"] = self.suites.info()
        out["engine"], out["responses"], out["model"] = self._engine_share()

    def _engine_share(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]:
        """This process's engine statistics, answers (None without an engine) and model description."""
        engine = self.planner.engine
        return (engine.stats.to_dict() if engine else None,
                {k: r.to_dict() for k, r in engine.responses.items()} if engine else None, self.planner.describe_model())

    def absorb(self, output: dict[str, Any]) -> None:
        """On the controller: take in one worker's published share."""
        self.records.suites.update(output.get("suites") or {})
        self.records.add_engine(output.get("engine"), output.get("responses"), output.get("model"))
        if not self.derived_specs and output.get("derived"):
            self.derived_specs = [DerivedSpec.from_dict(d) for d in output["derived"]]

    def report(self) -> dict[str, Any] | None:
        if self._report is None:
            self.gather()
            self._report = self.records.report()
            if self._report is not None and self.options.references:
                from pytest_tom.output.report import add_references

                add_references(self._report, self.options.references)
            if self._report is not None and self.gate_results:
                self._report["gates"] = [r.to_dict() for r in self.gate_results]
        return self._report

    def gather(self) -> None:
        """Bring this process's suite settings, engine statistics and model into `records` (once), for gates and report."""
        if self._gathered:
            return
        self._gathered = True  # once, even if building the report below raises and is retried
        if self.worker is None and not self.is_controller:
            self.records.suites.update(self.suites.info())
            self.records.add_engine(*self._engine_share())
        elif self.collection_order:  # the controller's records as the workers collected them (they arrive as workers finish)
            position = {nodeid: i for i, nodeid in enumerate(self.collection_order)}
            last = len(position)
            self.records.items = dict(sorted(self.records.items.items(), key=lambda kv: position.get(kv[0], last)))
            self.records.derived = dict(sorted(self.records.derived.items(), key=lambda kv: position.get(kv[0], last)))

    def summary_lines(self) -> list[str]:
        """The summary's lines; never raises, so a bug in building them cannot take the test results with it."""
        from pytest_tom.output.summary import summary_lines

        try:
            report = self.report()
            return summary_lines(report, self.records.benchmark) if report else []
        except Exception as exc:  # noqa: BLE001 - the rest of the terminal output must still print
            return [f"pytest-tom: the summary could not be built: {type(exc).__name__}: {exc}"]

    def finish(self) -> str | None:
        """Write the report if one was asked for; None, or the one line saying why it was not written. Never raises: the
        terminal summary and the final counts come after this hook, and a traceback here would take them with it.
        """
        problems = [p for p in (self._write_markdown(), self._write_html()) if p]
        problem = "\n".join(problems) or None
        path = self.options.report
        if path is None:
            return problem
        from pytest_tom.output.report import write_report

        try:
            report = self.report()
            if report is None:
                return problem
            write_report(path, report)
        except Exception as exc:  # noqa: BLE001 - disk full, a race on the path, a metric that breaks JSON
            return f"pytest-tom: ERROR: the report was not written to {path}: {_why_not_written(path, exc)}"
        return problem

    def _write_html(self) -> str | None:
        """Write --tom-html, the page of the report (`output.html`); never raises, like the report."""
        path = self.options.html
        if path is None:
            return None
        from pytest_tom.output.html import write_html

        try:
            report = self.report()
            if report is not None:
                write_html(path, report)
        except Exception as exc:  # noqa: BLE001 - one line, never a lost summary
            return f"pytest-tom: ERROR: the HTML report was not written to {path}: {_why_not_written(path, exc)}"
        return None

    def _write_markdown(self) -> str | None:
        """Append the gates' Markdown summary to --tom-markdown (GitHub's $GITHUB_STEP_SUMMARY); never raises."""
        path = self.options.gates.markdown
        if path is None:
            return None
        from pytest_tom.output.markdown import render_markdown, write_markdown
        from pytest_tom.output.summary import every_suite_metrics

        cfg = self.options.gates
        try:
            report = self.report()
            text = render_markdown(self.gate_results, model_uri=str((self.records.model or {}).get("uri") or self.options.model),
                                   baseline=str(cfg.baseline) if cfg.baseline else None, summary_lines=self.summary_lines(),
                                   metrics=every_suite_metrics(report, self.records.benchmark) if report else (),
                                   references={s["id"]: s["reference"] for s in (report or {}).get("suites", [])
                                               if "reference" in s})
            write_markdown(path, text)
        except Exception as exc:  # noqa: BLE001 - as for the report: one line, never a lost summary
            return f"pytest-tom: ERROR: the Markdown summary was not written to {path}: {type(exc).__name__}: {exc}"
        return None


def _why_not_written(path: Path, exc: Exception) -> str:
    """The reason in words: what is wrong with the path now if anything (it was fine at configure time), else the error."""
    if not isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc}"
    problem = report_path_problem(path)
    if problem is not None:
        return problem
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def note_sample(questions: Sequence[Any], deselected: Sequence[Any], strata: Sequence[str]) -> str:
    """One line saying why a sample dropped items (no -m/-k explains pytest's "N deselected"); empty if none."""
    suite, b = questions[0].suite, questions[0].suite.benchmark
    dropped = [it for it in deselected if it.suite.sid == suite.sid]
    if not dropped:
        return ""
    groups = sum(1 for it in dropped if hasattr(it, "derived"))
    whole = ""
    if b.sample_whole:
        gone = {it.tom_key for it in dropped if hasattr(it, "sample")}
        kept = {b.cluster(q.sample.facets, q.sample.id) for q in questions if q.tom_key not in gone}
        every = {b.cluster(q.sample.facets, q.sample.id) for q in questions}
        whole = f"{len(kept)} of {len(every)} whole {b.cluster_facet} clusters, "
    line = (
        f"{suite.sid}: sample={suite.sample} keeps {len(questions) - (len(dropped) - groups)} of {len(questions)} "
        f"questions ({whole}stratified by {', '.join(strata) or 'nothing'}; seed {suite.seed}); "
        f"{len(dropped) - groups} questions deselected"
    )
    if groups:
        line += f", and {groups} aggregate assertions whose groups the sample splits"
    return line
