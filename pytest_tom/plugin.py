"""pytest hooks and fixtures of pytest-tom; each hands its work to `TomSession`.

See https://docs.pytest.org/en/stable/reference/reference.html#hooks for the hooks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_tom import hookspecs
from pytest_tom.benchmarks import Registry
from pytest_tom.errors import TomConfigError, TomError
from pytest_tom.models.base import Model
from pytest_tom.options import TomOptions, add_options
from pytest_tom.session import TomSession
from pytest_tom.suite import Suite

SESSION_KEY = pytest.StashKey[TomSession]()


def tom_session(config: pytest.Config) -> TomSession:
    return config.stash[SESSION_KEY]


def _registry(config: pytest.Config | None = None) -> Registry:
    registry = Registry()
    if config is not None:
        config.hook.pytest_tom_add_benchmarks(registry=registry)
    return registry


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Offer the pytest_tom_* hooks to conftest.py files and plugins."""
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the --tom-* options and their ini twins."""
    add_options(parser, _registry())


def pytest_configure(config: pytest.Config) -> None:
    """Register every benchmark mark and parse the options once."""
    registry = _registry(config)
    seen: set[str] = set()
    for name in registry.names():
        try:
            docs = registry.get(name).mark_docs
        except Exception:
            continue
        for mark, text in docs.items():
            if mark not in seen:
                seen.add(mark)
                config.addinivalue_line("markers", f"{mark}: {text}")
    try:
        options = TomOptions.from_config(config, registry)
        for name in options.benchmarks:
            registry.get(name)
    except TomConfigError as exc:
        raise pytest.UsageError(f"pytest-tom: {exc}") from None
    config.stash[SESSION_KEY] = TomSession(config, options, registry)
    config.pluginmanager.register(_SessionHooks(config), "pytest-tom-session")


def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """Collect a module-level `pytest_tom.suite(...)` as a suite of question items."""
    if isinstance(obj, Suite):
        from pytest_tom.collect import SuiteCollector

        return SuiteCollector.from_parent(collector, name=name, declaration=obj)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the --tom-benchmark suites before -m/-k deselect, so marks select among them."""
    tom = tom_session(config)
    if tom.active:
        from pytest_tom.collect import SuiteCollector

        for name in tom.options.benchmarks:
            node = SuiteCollector.from_parent(session, name=name, nodeid=name, declaration=Suite(name), cli=True)
            items.extend(session.genitems(node))


class _SessionHooks:
    """Hooks that need the run's state; registered in pytest_configure, one instance per run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Apply --tom-sample after -m/-k, so the sample is drawn from what the user selected."""
        kept, deselected = tom_session(config).sample(items)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather result records (on the xdist controller they arrive from the workers)."""
        tom_session(self.config).logreport(report)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print accuracies with intervals and parse rates per benchmark, task, ability and category."""
        lines = tom_session(self.config).summary_lines()
        if lines:
            terminalreporter.write_sep("=", "pytest-tom summary")
            for line in lines:
                terminalreporter.write_line(line)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the JSON report (on the controller only under xdist)."""
        tom = tom_session(self.config)
        tom.close()
        if not hasattr(self.config, "workerinput"):
            tom.finish()


@pytest.fixture(scope="session")
def tom_model(request: pytest.FixtureRequest) -> Iterator[Model]:
    """The model under test, from --tom-model; override it in conftest.py to hand in your own.

    An override may return a `pytest_tom.Model` or any callable that takes a batch
    of chat conversations and a settings dict and returns one string per conversation.
    """
    try:
        model = tom_session(request.config).default_model()
    except TomError as exc:
        pytest.exit(f"pytest-tom: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    yield model
    model.close()
