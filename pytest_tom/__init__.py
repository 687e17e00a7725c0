"""pytest-tom: theory-of-mind benchmarks as pytest regression tests. Public API: declare suites in test modules, hand in
your own model, or extend the plugin with new benchmarks and backends (see CONTRIBUTING.md).
"""

from __future__ import annotations

from pytest_tom.derived import Derived, Judgement, all_pass
from pytest_tom.errors import TomConfigError, TomDataError, TomDependencyError, TomError, TomModelError
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Program
from pytest_tom.models.base import CallableModel, Model, StreamingModel, per_prompt
from pytest_tom.models.mock import MockModel
from pytest_tom.output.report import LoadedReport, load_report
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.request import GenerationSettings, Message, Request, Response
from pytest_tom.sample import Choice, Conversation, Sample, Story, Turn, permute_choices, rename, rewrite_text
from pytest_tom.suite import Suite, suite


def model_from_config(config: object) -> Model:
    """The model that --tom-model names, for a conftest.py `tom_model` override that defers to the flag."""
    from pytest_tom.run.session import tom_session

    return tom_session(config).default_model()  # type: ignore[arg-type]


__all__ = [
    "Benchmark", "BenchmarkOption", "CallableModel", "Choice", "Conversation", "DataSource", "Derived",
    "DerivedRecord", "GenerationSettings", "Judgement", "LoadedReport", "Message", "MockModel", "Model", "Outcome",
    "Program", "Record", "Request", "Response", "Sample", "Story", "StreamingModel", "Suite", "TomConfigError",
    "TomDataError", "TomDependencyError", "TomError", "TomModelError", "Turn", "Verdict", "all_pass", "load_report",
    "model_from_config", "per_prompt", "permute_choices", "rename", "rewrite_text", "suite"
]
