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
from pytest_tom.run.session import tom_session
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
    session and register its hooks (`run.setup.TomHooks`).
    """
    setup.configure(config)


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
