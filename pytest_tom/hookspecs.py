"""Hooks pytest-tom offers to conftest.py files and third-party plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_tom.benchmarks import Registry
    from pytest_tom.models.base import Model


def pytest_tom_add_benchmarks(registry: Registry) -> None:
    """Register extra benchmark classes with ``registry.add(cls)``."""


@pytest.hookspec(firstresult=True)
def pytest_tom_make_model(uri: str, config: pytest.Config) -> Model | None:
    """Build the model for a ``--tom-model`` URI, or return None to leave it to the built-in schemes."""


def pytest_tom_results_ready(session: Any, results: dict[str, Any]) -> None:
    """Called once the engine has answered every selected question, with results keyed by item."""
