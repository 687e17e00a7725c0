"""A benchmark with nothing to load and no requests, for tests of what is built from records (report, summary, page)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_tom.framework.base import Benchmark, DataSource, Program
from pytest_tom.framework.metric import Metric
from pytest_tom.metrics import accuracy
from pytest_tom.record import Record
from pytest_tom.sample import Sample


class Toy(Benchmark[None]):
    """One paper metric (`label`) and a per-language summary table."""

    name = "toy"
    description = "a toy benchmark for output tests"
    summary_facets = (("language",),)
    label = "toy accuracy"

    def load(self, source: DataSource) -> list[Sample[None]]:
        return []

    def program(self, sample: Sample[None]) -> Program:
        raise NotImplementedError
        yield []

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return [Metric(("accuracy",), accuracy(records), self.label)]
