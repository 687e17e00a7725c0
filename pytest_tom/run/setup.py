"""What the plugin's hooks do, one function per hook, so `plugin.py` stays a list of one-liners."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.evals import Registry
from pytest_tom.models import SchemeRegistry
from pytest_tom.options import TomOptions, add_benchmark_options
from pytest_tom.options import add_options as _add_general_options
from pytest_tom.run.select import take_node_id_args
from pytest_tom.run.session import SESSION_KEY, TomSession
from pytest_tom.run.xdist import OUTPUT_KEY, make_scheduler

REGISTRY_PLUGIN = "pytest-tom-registry"


class _RegistryHolder:
    """Carries the registries from pytest_addoption to pytest_configure as a named plugin."""

    def __init__(self, registry: Registry, backends: SchemeRegistry) -> None:
        self.registry = registry
        self.backends = backends


def add_options(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Options for the built-in and entry-point benchmarks now; for hook-registered ones as they register.

    `pytest_tom_add_benchmarks` is a historic hook: a conftest.py that implements
    it is called as soon as it is loaded, which for the initial conftests is
    before the command line is parsed, so their `--tom-<name>-*` options work.
    """
    registry = Registry(on_add=lambda cls: add_benchmark_options(parser, cls))
    backends = SchemeRegistry()
    _add_general_options(parser, registry)
    pluginmanager.register(_RegistryHolder(registry, backends), REGISTRY_PLUGIN)
    pluginmanager.hook.pytest_tom_add_benchmarks.call_historic(kwargs={"registry": registry})
    pluginmanager.hook.pytest_tom_add_backends.call_historic(kwargs={"registry": backends})


def configure(config: pytest.Config) -> None:
    holder = config.pluginmanager.get_plugin(REGISTRY_PLUGIN)
    registry: Registry = holder.registry if holder is not None else Registry()
    backends: SchemeRegistry = holder.backends if holder is not None else SchemeRegistry()
    seen: set[str] = set()
    for cls in registry.loadable():
        for mark, text in cls.mark_docs.items():
            if mark not in seen:
                seen.add(mark)
                config.addinivalue_line("markers", f"{mark}: {text}")
    node_ids = take_node_id_args(config.args, registry.names(), config.invocation_params.dir)
    try:
        options = TomOptions.from_config(config, registry, node_ids)
        for name in options.benchmarks:
            registry.get(name)
    except TomConfigError as exc:
        raise pytest.UsageError(f"pytest-tom: {exc}") from None
    tom = TomSession(config, options, registry, backends)
    config.stash[SESSION_KEY] = tom
    from pytest_tom.plugin import TomHooks

    config.pluginmanager.register(TomHooks(tom), "pytest-tom-session")
    if tom.worker is None and config.pluginmanager.has_plugin("xdist"):
        config.pluginmanager.register(XdistController(tom), "pytest-tom-xdist")


def add_cli_suites(session: pytest.Session, tom: TomSession, items: list[pytest.Item]) -> None:
    """Collect the --tom-benchmark suites (only the addressed items when node ids were given)."""
    if not tom.active:
        return
    from pytest_tom.run.collect import SuiteCollector
    from pytest_tom.suite import Suite

    for name in tom.options.benchmarks:
        node = SuiteCollector.from_parent(session, name=name, nodeid=name, declaration=Suite(name),
                                          wanted=tom.options.node_ids.get(name))
        items.extend(session.genitems(node))


def select(config: pytest.Config, tom: TomSession, items: list[pytest.Item]) -> None:
    kept, deselected = tom.sample(items)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
    tom.hand_derived_to_controller(items)


def after_loop(session: pytest.Session, tom: TomSession) -> None:
    if tom.is_controller:
        from pytest_tom.run.controller import judge_derived

        judge_derived(session.config, session, tom)


def terminal_summary(terminalreporter: Any, tom: TomSession) -> None:
    if tom.worker is not None:
        return
    lines = tom.summary_lines()
    if lines:
        terminalreporter.write_sep("=", "pytest-tom summary")
        for line in lines:
            terminalreporter.write_line(line)


def finish(tom: TomSession) -> None:
    tom.close()
    if tom.worker is not None:
        tom.publish()
    else:
        tom.finish()


class XdistController:
    """The controller's xdist hooks; registered only where pytest-xdist is installed (syrupy's DeferXDist)."""

    def __init__(self, tom: TomSession) -> None:
        self.tom = tom

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Contiguous question blocks under --dist load (see `run.xdist`); other modes stay xdist's."""
        if config.getoption("dist") != "load":
            return None
        return make_scheduler(config, log, self.tom.registry.names())

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Take in the worker's records metadata, engine statistics and derived definitions."""
        output = getattr(node, "workeroutput", None) or {}
        if OUTPUT_KEY in output:
            self.tom.absorb(output[OUTPUT_KEY])
