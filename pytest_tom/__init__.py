"""pytest-tom: theory-of-mind benchmarks as pytest regression tests.

Public API: declare suites in test modules, hand in your own model, or extend the
plugin with new benchmarks and backends.
"""

from __future__ import annotations

from pytest_tom.benchmarks.base import Benchmark, BenchmarkOption, DataSource, Program
from pytest_tom.errors import TomConfigError, TomDataError, TomDependencyError, TomError, TomModelError
from pytest_tom.models.base import CallableModel, Model, per_prompt
from pytest_tom.suite import Suite, suite
from pytest_tom.types import GenerationSettings, Group, ItemResult, Message, Outcome, Question, Request, Response


def model_from_config(config: object) -> Model:
    """The model that --tom-model names, for a conftest.py `tom_model` override that defers to the flag."""
    from pytest_tom.plugin import tom_session

    return tom_session(config).default_model()  # type: ignore[arg-type]


__all__ = [
    "Benchmark",
    "BenchmarkOption",
    "CallableModel",
    "DataSource",
    "GenerationSettings",
    "Group",
    "ItemResult",
    "Message",
    "Model",
    "Outcome",
    "Program",
    "Question",
    "Request",
    "Response",
    "Suite",
    "TomConfigError",
    "TomDataError",
    "TomDependencyError",
    "TomError",
    "TomModelError",
    "model_from_config",
    "per_prompt",
    "suite",
]
