"""pytest-tom's hooks (`plugin.py`, the entry point, re-exports the module-level ones) and the `tom_model` fixture.
`TomHooks`, the hooks on the run's state, is registered by `pytest_configure`. See
https://docs.pytest.org/en/stable/reference/reference.html#hooks for the hooks.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Generator, Iterable, Iterator
from typing import Any

import pytest

from pytest_tom import hookspecs
from pytest_tom.errors import TomConfigError, TomError
from pytest_tom.evals import Registry
from pytest_tom.framework.base import Benchmark
from pytest_tom.models import SchemeRegistry
from pytest_tom.models.base import Model
from pytest_tom.options import TomOptions, add_benchmark_options, add_legacy_ini
from pytest_tom.options import add_options as _add_general_options
from pytest_tom.run import bounded
from pytest_tom.run.select import take_node_id_args
from pytest_tom.run.session import SESSION_KEY, TomSession, tom_session
from pytest_tom.run.xdist import OUTPUT_KEY, make_scheduler
from pytest_tom.settings import LIST_WORD, SET_INI, listing
from pytest_tom.suggest import mark_name, unknown_marks_line
from pytest_tom.suite import Suite

REGISTRY_PLUGIN = "pytest-tom-registry"


@contextlib.contextmanager
def _usage_errors() -> Iterator[None]:
    """A TomConfigError becomes pytest's one-line usage error (exit status 4)."""
    try:
        yield
    except TomConfigError as exc:
        raise pytest.UsageError(f"pytest-tom: {exc}") from None


class _RegistryHolder:
    """Carries the registries from pytest_addoption to pytest_configure as a named plugin. Each benchmark registered
    gets its hidden deprecated `--tom-<name>-*` flags at once, and its deprecated ini keys once the command line is
    known, unless it asks for `--help` (which lists them).
    """

    def __init__(self, parser: pytest.Parser) -> None:
        self.parser = parser
        self.registry = Registry(on_add=self.added)
        self.backends = SchemeRegistry()
        self.legacy_ini: set[str] | None = None
        """The deprecated ini keys registered; None until they may be (see the class docstring)."""

    def added(self, cls: type[Benchmark[object]]) -> None:
        add_benchmark_options(self.parser, cls)
        if self.legacy_ini is not None:
            add_legacy_ini(self.parser, cls, self.legacy_ini)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Offer the pytest_tom_* hooks to conftest.py files and plugins."""
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """The --tom-* options and their ini twins: for the built-in and entry-point benchmarks now, for hook-registered
    ones as they register. `pytest_tom_add_benchmarks` is historic: an initial conftest implementing it is called before
    the command line is parsed, so its settings work with `--tom-set`.
    """
    holder = _RegistryHolder(parser)
    _add_general_options(parser, holder.registry)
    pluginmanager.register(holder, REGISTRY_PLUGIN)
    pluginmanager.hook.pytest_tom_add_benchmarks.call_historic(kwargs={"registry": holder.registry})
    pluginmanager.hook.pytest_tom_add_backends.call_historic(kwargs={"registry": holder.backends})


def _registries(config: pytest.Config) -> tuple[Registry, SchemeRegistry]:
    """The registries the hooks filled (fresh built-in ones when the plugin registered late)."""
    holder = config.pluginmanager.get_plugin(REGISTRY_PLUGIN)
    if holder is None:
        return Registry(), SchemeRegistry()
    return holder.registry, holder.backends


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None, None, None]:
    """After the initial conftests, the deprecated ini keys of every benchmark now known (not for `--help`)."""
    yield
    holder = early_config.pluginmanager.get_plugin(REGISTRY_PLUGIN)
    show_help = getattr(early_config.known_args_namespace, "help", False)
    if isinstance(holder, _RegistryHolder) and not show_help and holder.legacy_ini is None:
        holder.legacy_ini = set()
        for cls in holder.registry.loadable():
            add_legacy_ini(holder.parser, cls, holder.legacy_ini)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """`pytest --tom-set list`: print every benchmark's settings (from the registry) and exit 0; None otherwise."""
    given = config.getoption(SET_INI, default=None) or []
    if LIST_WORD not in (str(g).strip() for g in given):
        return None
    registry, _ = _registries(config)
    sys.stdout.write("\n".join(listing(registry.loadable())) + "\n")
    return 0


_MARKS_KEY = pytest.StashKey[set[str]]()
"""The mark names this run has registered, so each is registered once."""

ACTIVATION = "with --tom-model, --tom-benchmark (or their ini keys) or a pytest_tom.suite(...) in a test module"


def register_marks(config: pytest.Config, classes: Iterable[type[Benchmark[object]]], names_only: bool = False) -> None:
    """Register the benchmarks' marks for --strict-markers and `pytest --markers` (each once). `names_only` registers
    just each benchmark's own mark (`tombench`): generic facet marks (`full`, `en`) would let a typo pass
    --strict-markers in a repo that never runs a benchmark, so they are registered only when pytest-tom runs
    (`ACTIVATION`). pytest looks registered marks up at each unknown one, so registering them at collection is in time.
    """
    done = config.stash.setdefault(_MARKS_KEY, set())
    for cls in classes:
        docs = dict(cls.mark_docs)
        if names_only:
            text = docs.get(cls.name, f"{cls.name} items.")
            docs = {cls.name: f"{text} Its other marks (pytest-tom facets) are registered when pytest-tom runs: {ACTIVATION}."}
        for mark, text in docs.items():
            if mark not in done:
                done.add(mark)
                config.addinivalue_line("markers", f"{mark}: {text}")


def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """Collect a module-level `pytest_tom.suite(...)` as a suite of question items, its benchmark's marks registered
    before its items are marked.
    """
    if not isinstance(obj, Suite):
        return None
    from pytest_tom.run.collect import SuiteCollector

    registry, _ = _registries(collector.config)
    with contextlib.suppress(Exception):  # the suite's collector reports an unknown or broken benchmark
        register_marks(collector.config, [registry.get(obj.benchmark)])
    return SuiteCollector.from_parent(collector, name=name, declaration=obj)


def pytest_configure(config: pytest.Config) -> None:
    """Parse the options once, register the benchmarks' marks (facet marks only when pytest-tom runs), start the
    session and register its hooks (then the xdist controller's).
    """
    registry, backends = _registries(config)
    node_ids = take_node_id_args(config.args, registry.names(), config.invocation_params.dir)
    with _usage_errors():
        options = TomOptions.from_config(config, registry, node_ids)
        for name in options.benchmarks:
            registry.get(name)
    # Facet marks only where pytest-tom runs; pytest_pycollect_makeitem covers a suite in a test module.
    register_marks(config, registry.loadable(), names_only=not (options.model or options.benchmarks))
    config.addinivalue_line("markers", "tom_robustness: pytest-tom's robustness items (--tom-robustness): hypothesis "
                                       "searches a question's perturbations for one that breaks the model.")
    config.addinivalue_line("markers", "tom_gate: pytest-tom's regression gates (--tom-threshold, --tom-baseline, "
                                       "a suite's gates=...), reported after every question has run.")
    tom = TomSession(config, options, registry, backends)
    from pytest_tom.run.baseline import load_for_run

    with _usage_errors():
        load_for_run(tom)
    config.stash[SESSION_KEY] = tom
    config.pluginmanager.register(TomHooks(tom), "pytest-tom-session")
    if tom.worker is None and config.pluginmanager.has_plugin("xdist"):  # the controller (or one process with xdist)
        config.pluginmanager.register(XdistController(tom), "pytest-tom-xdist")
    from pytest_tom.run.html_summary import register as register_html

    register_html(config, tom)  # metrics and --tom-reference rows in pytest-html's report


_BEFORE_SELECTION = pytest.StashKey[list[pytest.Item]]()
"""The items -m/-k chose from, kept from the first to the last collection_modifyitems hook."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the --tom-benchmark suites before -m/-k deselect, so marks select among them (only the addressed items when
    node ids were given).
    """
    tom = tom_session(config)
    if tom.options.benchmarks:
        from pytest_tom.run.collect import SuiteCollector

        for name in tom.options.benchmarks:
            node = SuiteCollector.from_parent(session, name=name, nodeid=name, declaration=Suite(name),
                                              wanted=tom.options.node_ids.get(name))
            items.extend(session.genitems(node))
    config.stash[_BEFORE_SELECTION] = list(items)


@pytest.fixture(scope="session")
def tom_model(request: pytest.FixtureRequest) -> Iterator[Model]:
    """The model under test, from --tom-model; override it in conftest.py to hand in your own. An override may return a
    `pytest_tom.Model` or any callable that takes a batch of chat conversations and a settings dict and returns one
    string per conversation.
    """
    try:
        model = tom_session(request.config).default_model()
    except TomError as exc:
        from pytest_tom.run.collect import RunStopped

        raise RunStopped(f"pytest-tom: {exc}") from None
    yield model
    model.close()


def _is_tom_item(item: pytest.Item) -> bool:
    from pytest_tom.engine.suites import LoadedSuite

    return isinstance(getattr(item, "suite", None), LoadedSuite)


def mark_typo_note(config: pytest.Config, before: Iterable[pytest.Item], after: Iterable[pytest.Item]) -> str | None:
    """A line when `-m` left none of the collected pytest-tom items and names a word that is no mark; else None. Known
    marks are the registered ones and, only when a word is none of those, the marks the collected items carry (an
    unregistered mark is still a mark).
    """
    expression = str(config.getoption("markexpr", "") or "")
    before = list(before)
    if not expression or any(_is_tom_item(it) for it in after) or not any(_is_tom_item(it) for it in before):
        return None
    known = {mark_name(line) for line in config.getini("markers")}
    if unknown_marks_line(expression, known) is None:
        return None
    known.update(mark.name for it in before for mark in it.iter_markers())
    return unknown_marks_line(expression, known)


REPORT_NOT_WRITTEN = pytest.ExitCode.INTERNAL_ERROR
"""The exit status of a run that passed but whose --tom-report could not be written (a run that failed keeps its own
status): CI must not see such a run as green."""

_SUMMARY_CODES = frozenset({0, 1, 2, 4, 5, 6})
"""Exit statuses after which pytest calls pytest_terminal_summary (see _pytest.terminal)."""


class TomHooks:
    """Hooks that need the run's state; registered by `configure`, one instance per run."""

    def __init__(self, tom: TomSession) -> None:
        self.tom = tom

    def pytest_sessionstart(self) -> None:
        """Before collection, check --tom-model's URI without building the model: a misspelled one is one usage error
        now, not a minute per item (`SchemeRegistry.check`). Not on an xdist worker (the controller checked), and not
        when a pytest_tom_make_model hook may build the model from the URI itself.
        """
        uri = self.tom.options.model
        if uri and self.tom.worker is None and not self.tom.config.hook.pytest_tom_make_model.get_hookimpls():
            with _usage_errors():
                self.tom.backends.check(uri)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Draw --tom-sample after -m/-k (and say when -m names no mark); refuse a baseline that does not cover the
        selected items, or a published model or `ref:` threshold with no row for them, before any model request
        (`run.baseline`): in one process a usage error now, on an xdist worker (where raising here reads as a crash) the
        first item stops the run with the message. On a worker, hand derived items over.
        """
        before = config.stash.get(_BEFORE_SELECTION, None)
        if before is not None:
            del config.stash[_BEFORE_SELECTION]
            note = mark_typo_note(config, before, items)
            if note is not None:
                self.tom.notes.append(note)
        kept, deselected = self.tom.sample(items)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept
        from pytest_tom.run.baseline import check_before_run

        try:
            check_before_run(self.tom, items)
        except TomConfigError as exc:
            if self.tom.worker is None:
                raise pytest.UsageError(f"pytest-tom: {exc}") from None
            self.tom.refusal = f"pytest-tom: {exc}"
        self.tom.hand_derived_to_controller(items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A suite whose data cannot be loaded ends the run as a usage error (exit 4, `collect.stop_at_load_error`),
        shown under any --tb and -q. Not on an xdist worker: an exit there reads as a crash; its collection error reaches
        the controller, which stops the run the same way.
        """
        if self.tom.worker is None:
            from pytest_tom.run.collect import stop_at_load_error

            stop_at_load_error(self.tom.config, report, controller=self.tom.is_controller)

    def pytest_report_collectionfinish(self) -> list[str]:
        """Say why items were deselected when a sample (not -m/-k) dropped them."""
        return [f"pytest-tom: {note}" for note in self.tom.sample_notes]

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        """In a gate run, wrong answers get their own status (`27 wrong`): the gates, not they, decide the exit."""
        from pytest_tom.run.gates import teststatus

        return teststatus(report, self.tom)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> None:
        """pytest-timeout arms an item's timer: remember its settings, so the item that answers a planning unit can
        stretch them (`collect.stretch_timeout`); pytest-timeout still arms it.
        """
        from pytest_tom.run.collect import TIMEOUT_KEY, SuiteCollector

        if isinstance(item.parent, SuiteCollector) and TIMEOUT_KEY not in item.stash:
            item.stash[TIMEOUT_KEY] = settings

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """pytest-tom's own skips are reported at their item (`collect.at_item`)."""
        from pytest_tom.run.collect import at_item

        return at_item(item, (yield))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather records (on the xdist controller they arrive from the workers)."""
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.tom.records.add_properties(report.nodeid, report.user_properties)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """After the loop, judge what needs every record: derived items on the xdist controller, then the gates (one
        process or controller). Uncaught, an exception from a rule would end the session as an INTERNALERROR and take the
        summary with it; here it counts as a failure, shown in one line after the summary. A run stopped by a
        configuration error ends as a usage error.
        """
        from pytest_tom.run.collect import RunStopped

        try:
            result = yield
        except RunStopped as stop:  # a usage error reads as one line, not as "! _pytest.outcomes.Exit: ... !"
            raise pytest.UsageError(str(stop.msg)) from None
        tom = self.tom
        if tom.is_controller:
            from pytest_tom.run.gates import judge_derived

            try:
                judge_derived(session, tom)
            except Exception as exc:  # noqa: BLE001 - see the docstring
                session.testsfailed += 1
                tom.problems.append(f"pytest-tom: ERROR: judging aggregate assertions on the xdist controller failed, "
                                    f"those not reported above were not judged: {type(exc).__name__}: {exc}")
        if tom.worker is None:
            from pytest_tom.run.gates import judge_gates

            try:
                tom.gate_results = judge_gates(session, tom)
            except Exception as exc:  # noqa: BLE001 - see the docstring
                session.testsfailed += 1
                tom.problems.append(f"pytest-tom: ERROR: judging the gates failed: {type(exc).__name__}: {exc}")
        return result

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        """Around pytest's own summary (not on xdist workers): before it, the failures beyond the first few per group are
        left out of what pytest's FAILURES section and short summary list (`run.bounded`); after it they are put back and
        counted per group, and the accuracies, gates, notes and problems close the run.
        """
        tom = self.tom
        hidden = bounded.hide(terminalreporter, tom) if tom.worker is None else None
        try:
            yield
        finally:
            bounded.restore(terminalreporter, hidden)
            bounded.write(terminalreporter, hidden, tom)
        if tom.worker is not None:
            return
        from pytest_tom.run.gates import summary_lines as gate_lines

        lines = tom.summary_lines()
        if lines:
            terminalreporter.write_sep("=", "pytest-tom summary")
            for line in lines:
                terminalreporter.write_line(line)
        gates = gate_lines(tom.gate_results)
        if gates:
            terminalreporter.write_sep("=", "pytest-tom gates")
            for line in gates:
                terminalreporter.write_line(line, red=line.startswith("  FAIL") or "failed" in line.split(":")[1][:40],
                                            green=line.startswith("  PASS") or line.endswith("passed"))
        for note in tom.notes:
            terminalreporter.write_line(note)
        tom.notes.clear()
        for problem in tom.problems:
            terminalreporter.write_line(problem, red=True, bold=True)
        tom.problems.clear()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        """Close the engine, then publish (xdist worker) or write the report; never raises. This runs before the terminal
        summary, which an exception would lose: a problem becomes one line after the summary (or at once when none
        follows), and a report not written makes a passing run exit with `REPORT_NOT_WRITTEN`.
        """
        tom = self.tom
        try:
            tom.planner.close()
        except Exception as exc:  # noqa: BLE001 - the answers are in memory: still publish and write them
            tom.problems.append(f"pytest-tom: warning: closing the engine or the response cache failed: "
                                f"{type(exc).__name__}: {exc}")
        if tom.worker is not None:
            tom.publish()
            return
        problem = tom.finish()
        session = tom.config.pluginmanager.get_plugin("session")
        status = getattr(session, "exitstatus", None)
        if problem is not None:
            tom.problems.append(problem)
            if session is not None and status == pytest.ExitCode.OK:
                session.exitstatus = REPORT_NOT_WRITTEN
        reporter = tom.config.pluginmanager.get_plugin("terminalreporter")
        if tom.problems and (reporter is None or status not in _SUMMARY_CODES):
            for line in tom.problems:
                if reporter is not None:
                    reporter.write_line(line, red=True, bold=True)
                else:
                    sys.stderr.write(line + "\n")
            tom.problems.clear()


class XdistController:
    """The controller's xdist hooks; registered only where pytest-xdist is installed (syrupy's DeferXDist)."""

    def __init__(self, tom: TomSession) -> None:
        self.tom = tom

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Contiguous question blocks under --dist load (see `run.xdist`); other modes stay xdist's."""
        if config.getoption("dist") != "load":
            return None
        return make_scheduler(config, log, self.tom.registry.names())

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Keep the collection order (every worker collects the same), for the report's record order."""
        if not self.tom.collection_order:
            self.tom.collection_order = list(ids)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Take in the worker's records metadata, engine statistics and derived definitions."""
        output = getattr(node, "workeroutput", None) or {}
        if OUTPUT_KEY in output:
            self.tom.absorb(output[OUTPUT_KEY])
