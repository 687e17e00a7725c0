"""The contract every benchmark fulfils: load samples, turn a sample into a program.

A benchmark reads its official data into typed `Sample`s (`load`), and turns one
sample into a `Program` (`program`): a generator that yields the model requests
the sample needs (several tries, a dependent follow-up) and returns its scored
`Record`. It declares its aggregate assertions as `Derived` definitions with the
rules that judge them, and aggregates records the way its paper does
(`metrics`, typed `Metric`s). It never imports pytest, never calls a model and never writes
output: the engine owns every model call and the run layer owns pytest.
"""

from __future__ import annotations

import difflib
import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pytest_tom.derived import Derived, Rule, all_pass
from pytest_tom.errors import TomConfigError
from pytest_tom.framework.metric import Metric
from pytest_tom.record import MetricData, Record
from pytest_tom.request import Request, Response
from pytest_tom.sample import Sample

E = TypeVar("E")

Program = Generator[Sequence[Request], Sequence[Response], Record]
"""A sample's conversation with the engine: yield requests, receive their responses, return the record.

Each `yield` is one engine wave: every program's requests of a wave are planned,
deduplicated, answered from the cache or batched to the model together. A
program may yield an empty list to wait one wave.
"""


FLAG_WORDS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False, "": False}


@dataclass(frozen=True, slots=True)
class BenchmarkOption:
    """A benchmark-specific setting, set as `--tom-set <benchmark>.<name>=VALUE`, an ini `tom_set` line or a suite keyword.

    `kind` is `str`, `int`, `float` or `bool`; the benchmark reads the converted value
    (`self.settings["partial"]` is a bool) and `render` gives the text the report
    records, so a bool is recorded as `"true"`/`"false"` exactly as before it was typed.
    """

    name: str
    default: str
    help: str
    choices: tuple[str, ...] = ()
    kind: type = str

    def convert(self, benchmark: str, raw: Any) -> Any:
        if self.kind is bool:
            if isinstance(raw, bool):
                return raw
            word = str(raw).strip().lower()
            if word not in FLAG_WORDS:
                raise TomConfigError(f"{benchmark} setting {self.name}={raw!r}: expected true or false")
            return FLAG_WORDS[word]
        if isinstance(raw, str) and self.kind is not str:
            try:
                value = self.kind(raw)
            except ValueError as exc:
                raise TomConfigError(f"{benchmark} setting {self.name}={raw!r}: expected {self.kind.__name__}") from exc
        else:
            value = raw
        if self.choices:
            values = value.split(",") if isinstance(value, str) else list(value)
            bad = [v for v in values if v not in self.choices]
            if bad:
                raise TomConfigError(
                    f"{benchmark} setting {self.name}={raw!r}: {bad[0]!r} is not one of {', '.join(self.choices)}"
                )
        return value

    def render(self, value: Any) -> Any:
        """The value as reports, baselines and cache keys record it (a bool as `"true"`/`"false"`)."""
        if self.kind is bool:
            return "true" if value else "false"
        return value


@dataclass(frozen=True, slots=True)
class Facet:
    """One row of a benchmark's facet table: what a facet of its samples is used for.

    A facet is a key of `Sample.facets` (`language`, `ability`, `order`...). One row
    says everything the framework does with it, instead of five parallel lists:

    * `marks`: the pytest marks its values put on items, each with its `--markers` text
      (a row may hold marks that are not values of a facet, such as derived-check kinds);
    * `stratum`: `--tom-sample` draws within each combination of the stratum facets;
    * `tables`: terminal/report tables led by this facet: `()` is the facet alone,
      `("task",)` tabulates it crossed with `task`;
    * `gate`: each value gets a gateable accuracy (`ability.faux_pas`);
    * `cluster`: the facet names the story or conversation a unit belongs to, so
      intervals and paired comparisons resample whole clusters.
    """

    name: str
    marks: Mapping[str, str] = field(default_factory=dict)
    stratum: bool = False
    tables: tuple[tuple[str, ...], ...] = ()
    gate: bool = False
    cluster: bool = False


def stop_at_answer_option(why: str) -> BenchmarkOption:
    """The `stop_at_answer` setting of a benchmark whose parser settles on an answer-shaped string (see README)."""
    return BenchmarkOption(
        "stop_at_answer", "true",
        f"true: stop generating once the answer contains {why}, after which the parser provably reads the same "
        "answer whatever follows (shorter raw answers, same scores; part of the cache key); false: generate the "
        "whole token budget.", kind=bool,
    )


@dataclass(frozen=True, slots=True)
class DataSource:
    """Where benchmark data lives: a local root folder, and whether downloading is allowed."""

    root: Path | None
    download: bool
    cache_dir: Path


class Benchmark(ABC, Generic[E]):
    """Base class of a benchmark; register a subclass by name in `pytest_tom/evals/__init__.py`."""

    name: ClassVar[str]
    description: ClassVar[str]
    options: ClassVar[tuple[BenchmarkOption, ...]] = ()
    facets: ClassVar[tuple[Facet, ...]] = ()
    """The facet table: one `Facet` row per facet, in the order tables and marks are listed."""
    robustness: ClassVar[str | None] = None
    """"module:attr" of the benchmark's `robustness.Perturbable` (its question templates, its own strategies)."""
    rules: ClassVar[Mapping[str, Rule]] = {}
    """Rule of each kind of derived result this benchmark declares; kinds not listed use `all_pass`."""

    # Read by the run layer; computed from `facets` when a subclass is defined.
    mark_docs: ClassVar[Mapping[str, str]] = {}
    strata: ClassVar[tuple[str, ...]] = ()
    summary_facets: ClassVar[tuple[tuple[str, ...], ...]] = ()
    gate_facets: ClassVar[tuple[str, ...]] = ()
    cluster_facet: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "facets" not in cls.__dict__:
            return
        rows = cls.facets
        clusters = [f.name for f in rows if f.cluster]
        if len(clusters) > 1:
            raise TypeError(f"{cls.__qualname__}: only one facet can be the cluster, got {clusters}")
        cls.mark_docs = {cls.name: cls.description, **{m: d for f in rows for m, d in f.marks.items()}}
        cls.strata = tuple(f.name for f in rows if f.stratum)
        cls.summary_facets = tuple((f.name, *t) for f in rows for t in f.tables)
        cls.gate_facets = tuple(f.name for f in rows if f.gate)
        cls.cluster_facet = clusters[0] if clusters else None

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        given = dict(settings or {})
        known = {o.name: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TomConfigError(
                f"{self.name} has no setting {unknown[0]!r}{hint}; known settings: {', '.join(sorted(known)) or 'none'}"
            )
        self.settings: dict[str, Any] = {o.name: o.convert(self.name, given.get(o.name, o.default)) for o in self.options}

    @abstractmethod
    def load(self, source: DataSource) -> list[Sample[E]]:
        """Read the official data and return the samples in a stable order (ids unique)."""

    @abstractmethod
    def program(self, sample: Sample[E]) -> Program:
        """Yield the requests `sample` needs and return its scored record."""

    def check_ready(self, samples: Sequence[Sample[E]]) -> None:
        """Raise a `TomError` when something answering `samples` needs is missing (FANToM's embedder).

        The run layer calls it before the first model request, never when loading or for
        `--collect-only`, so data and collection need none of it. Nothing by default.
        """

    def derived(self, samples: Sequence[Sample[E]]) -> list[Derived]:
        """Aggregate assertions over `samples` (coherent stories, question sets...); none by default."""
        return []

    def rule(self, kind: str) -> Rule:
        """The rule judging derived results of `kind`."""
        return self.rules.get(kind, all_pass)

    def cluster(self, facets: Mapping[str, str], unit_id: str) -> str:
        """The story or conversation a question or assertion belongs to: units of one are not independent.

        Gate intervals and paired comparisons resample whole clusters; by default the facet table's
        cluster facet names it, and a unit without one stands alone.
        """
        return (facets.get(self.cluster_facet) if self.cluster_facet else None) or unit_id

    def gate_rates(self, records: Sequence[Record]) -> list[MetricData]:
        """Gateable rates beyond accuracies and derived kinds (ToMValley's compositional statuses); none by default.

        Each is a list of units with a value in [0, 1] and a cluster, so thresholds get clustered
        intervals and baselines pair units by id, as for every other gate metric.
        """
        return []

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        """The paper's aggregate metrics over the suite's records, typed: the shared renderer prints and serialises them."""
        return []

    def describe(self) -> dict[str, Any]:
        """What the report records about this benchmark's configuration."""
        known = {o.name: o for o in self.options}
        return {"name": self.name,
                "settings": {k: known[k].render(v) if k in known else v for k, v in self.settings.items()}}


@functools.lru_cache(maxsize=4096)
def slug(text: str) -> str:
    """Lower-case identifier usable as a mark name and in node ids: runs of other characters become one `_`."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
