"""Hooks pytest-tom offers to conftest.py files and third-party plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_tom.evals import Registry
    from pytest_tom.models import SchemeRegistry
    from pytest_tom.models.base import Model


@pytest.hookspec(historic=True)
def pytest_tom_add_benchmarks(registry: Registry) -> None:
    """Register benchmark classes with ``registry.add(cls)``; their settings work with ``--tom-set <name>.<setting>=...``."""


@pytest.hookspec(historic=True)
def pytest_tom_add_backends(registry: SchemeRegistry) -> None:
    """Register model URI schemes with ``registry.add(scheme, factory)``; ``factory(spec)`` returns a `Model`."""


@pytest.hookspec(firstresult=True)
def pytest_tom_make_model(uri: str, config: pytest.Config) -> Model | None:
    """Build the model for a ``--tom-model`` URI, or return None to leave it to the registered schemes."""


def pytest_tom_results_ready(session: Any, results: dict[str, Any]) -> None:
    """Called each time the engine has answered a planning unit, with the records keyed by item."""
