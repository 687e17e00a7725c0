"""pytest hooks and fixtures of pytest-tom; each hands its work to the run layer (`pytest_tom.run`). See
https://docs.pytest.org/en/stable/reference/reference.html#hooks for the hooks.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest

from pytest_tom import hookspecs
from pytest_tom.errors import TomError
from pytest_tom.models.base import Model
from pytest_tom.run import setup
from pytest_tom.run.session import TomSession, tom_session
from pytest_tom.suite import Suite


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Offer the pytest_tom_* hooks to conftest.py files and plugins."""
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Add the --tom-* options and their ini twins, also for benchmarks a conftest.py registers."""
    setup.add_options(parser, pluginmanager)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None, None, None]:
    """After the initial conftests (and the benchmarks they register): the deprecated ini keys, unless for --help."""
    yield
    setup.initial_conftests_loaded(early_config)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """`pytest --tom-set list` prints every benchmark's settings, then exits."""
    return setup.show_settings(config)


def pytest_configure(config: pytest.Config) -> None:
    """Parse the options once, register the benchmarks' marks (facet marks only when pytest-tom runs), start the
    session. The session's hooks (`TomHooks`) are built here on the session, then the xdist controller's.
    """
    tom = setup.configure(config)
    config.pluginmanager.register(TomHooks(tom), "pytest-tom-session")
    setup.add_xdist_controller(tom)


def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """Collect a module-level `pytest_tom.suite(...)` as a suite of question items."""
    if isinstance(obj, Suite):
        from pytest_tom.run.collect import SuiteCollector

        setup.register_suite_marks(collector.config, obj.benchmark)
        return SuiteCollector.from_parent(collector, name=name, declaration=obj)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the --tom-benchmark suites before -m/-k deselect, so marks select among them."""
    setup.add_cli_suites(session, tom_session(config), items)


class TomHooks:
    """Hooks that need the run's state; registered in pytest_configure, one instance per run."""

    def __init__(self, tom: TomSession) -> None:
        self.tom = tom

    def pytest_sessionstart(self) -> None:
        """Check --tom-model before collection: a misspelled model id is a usage error in a second."""
        setup.check_model(self.tom)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Draw --tom-sample after -m/-k (and say when -m names no mark); on an xdist worker, hand derived items over."""
        setup.select(config, self.tom, items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A suite whose data cannot be loaded ends the run as a usage error (exit 4), shown under any --tb and -q."""
        setup.stop_at_load_error(self.tom, report)

    def pytest_report_collectionfinish(self) -> list[str]:
        """Say why items were deselected when a sample (not -m/-k) dropped them."""
        return [f"pytest-tom: {note}" for note in self.tom.sample_notes]

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        """In a gate run, wrong answers get their own status (`27 wrong`): the gates, not they, decide the exit."""
        from pytest_tom.run.gates import teststatus

        return teststatus(report, self.tom)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather records (on the xdist controller they arrive from the workers)."""
        self.tom.logreport(report)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """Judge the derived items on the xdist controller; a run stopped by a configuration error ends as a usage error."""
        from pytest_tom.run.collect import RunStopped

        try:
            result = yield
        except RunStopped as stop:  # a usage error reads as one line, not as "! _pytest.outcomes.Exit: ... !"
            raise pytest.UsageError(str(stop.msg)) from None
        setup.after_loop(session, self.tom)
        return result

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        """Around pytest's own summary: bound its failure listing, then print the accuracies (not on xdist workers).
        Before it, the failures beyond the first few per group are left out of what pytest's FAILURES section and short
        summary list (`run.bounded`); after it they are put back and counted per group, and the accuracies close the
        run.
        """
        hidden = setup.bound_failures(terminalreporter, self.tom)
        try:
            yield
        finally:
            setup.restore_failures(terminalreporter, self.tom, hidden)
        setup.terminal_summary(terminalreporter, self.tom)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the JSON report (the controller under xdist); workers publish their share."""
        setup.finish(self.tom)


@pytest.fixture(scope="session")
def tom_model(request: pytest.FixtureRequest) -> Iterator[Model]:
    """The model under test, from --tom-model; override it in conftest.py to hand in your own. An override may return a
    `pytest_tom.Model` or any callable that takes a batch of chat conversations and a settings dict and returns one
    string per conversation.
    """
    try:
        model = tom_session(request.config).default_model()
    except TomError as exc:
        from pytest_tom.run.collect import stop_run

        raise stop_run(f"pytest-tom: {exc}") from None
    yield model
    model.close()
