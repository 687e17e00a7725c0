"""The contract every benchmark fulfils: load samples, turn a sample into a program. A benchmark reads its official data
into typed `Sample`s (`load`), turns one into a `Program` that yields model requests and returns its scored `Record`,
declares `Derived` assertions and typed `metrics`. It never imports pytest, calls a model or writes output: the engine
and run layer do.
"""

from __future__ import annotations

import functools
import math
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
from pytest_tom.suggest import closest_hint

E = TypeVar("E")

Program = Generator[Sequence[Request], Sequence[Response], Record]
"""A sample's conversation with the engine: yield requests, receive their responses, return the record. Each `yield` is one
engine wave (all programs' requests deduplicated, cached or batched together); an empty list waits one wave.
"""


FLAG_WORDS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False, "": False}


@dataclass(frozen=True, slots=True)
class BenchmarkOption:
    """A benchmark setting: `--tom-set <benchmark>.<name>=VALUE`, an ini `tom_set` line or a suite keyword. `kind` is
    `str`, `int`, `float` or `bool`; the benchmark reads the converted value and `render` gives what the report records
    (a bool as `"true"`/`"false"`, as before it was typed).
    """

    name: str
    default: str
    help: str
    choices: tuple[str, ...] = ()
    kind: type = str
    many: bool = False
    """Whether a comma list of choices is one value (`languages=en,zh`); otherwise exactly one choice is allowed."""
    before: str | None = None
    """For a setting added after 0.1.0: the rendered value that reproduces what runs did before it existed, so a
    baseline saved without it is compared as if it had this value (and refused only if the run's value differs)."""
    bounds: tuple[float, float | None] | None = None
    """A number's range, `low <= value < high` (`(1, None)`: at least 1; `(0, 1)`: a share below 1)."""

    def convert(self, benchmark: str, raw: Any) -> Any:
        if self.kind is bool:
            if isinstance(raw, bool):
                return raw
            word = str(raw).strip().lower()
            if word not in FLAG_WORDS:
                raise TomConfigError(f"{benchmark} setting {self.name}={raw!r}: expected true or false")
            return FLAG_WORDS[word]
        value = raw
        if isinstance(raw, str) and self.kind is not str:
            try:
                value = self.kind(raw)
            except ValueError as exc:
                raise TomConfigError(f"{benchmark} setting {self.name}={raw!r}: expected {self.kind.__name__}") from exc
        if self.bounds is not None and not self.bounds[0] <= value < (self.bounds[1] or math.inf):
            low, high = self.bounds
            raise TomConfigError(f"{benchmark} setting {self.name}={raw!r}: must be "
                                 + (f"in [{low:g}, {high:g})" if high else f"at least {low:g}"))
        if self.choices:
            values = value.split(",") if isinstance(value, str) else list(value)
            bad = [v for v in values if v not in self.choices]
            if bad:
                raise TomConfigError(f"{benchmark} setting {self.name}={raw!r}: {bad[0]!r} is not one of "
                                     f"{', '.join(self.choices)}")
            if len(values) > 1 and not self.many:  # else a run would silently read "vanilla,cot" as one of them
                raise TomConfigError(f"{benchmark} setting {self.name}={raw!r}: one value only, one of "
                                     f"{', '.join(self.choices)}")
            if values and not self.many:
                value = values[0]  # a suite keyword's one-item list (`prompt=["cot"]`) is that value
        return value

    def render(self, value: Any) -> Any:
        """The value as reports, baselines and cache keys record it (a bool as `"true"`/`"false"`)."""
        return ("true" if value else "false") if self.kind is bool else value


@dataclass(frozen=True, slots=True)
class Facet:
    """One row of a benchmark's facet table: everything the framework does with one key of `Sample.facets`.

    `marks`: pytest marks with their `--markers` text (may include non-values, such as derived kinds);
    `stratum`: `--tom-sample` draws within each combination of strata; `tables`: summary tables led by it
    (`()` alone, `("task",)` crossed with task); `gate`: each value gets a gateable accuracy; `derived_gate`: each
    value also gets a gateable rate of each kind of derived result carrying it (`<kind>.<facet>.<value>`: BigToM's
    per-group TB AND FB pairs);
    `cluster`: it names the story or conversation, so intervals resample whole clusters; `whole` (cluster only):
    `--tom-sample` keeps or drops each cluster whole, for metrics that compare a cluster's questions (Hi-ToM's chains).
    """

    name: str
    marks: Mapping[str, str] = field(default_factory=dict)
    stratum: bool = False
    tables: tuple[tuple[str, ...], ...] = ()
    gate: bool = False
    derived_gate: bool = False
    cluster: bool = False
    whole: bool = False


def described(template: str, *names: str) -> dict[str, str]:
    """Marks for a `Facet`, each with its `--markers` text: `template` filled with the mark's words (`_` read as a space),
    e.g. `described("OpenToM {} question.", "first_order")` -> {"first_order": "OpenToM first order question."}.
    """
    return {n: template.format(n.replace("_", " ")) for n in names}


def stop_at_answer_option(why: str) -> BenchmarkOption:
    """The `stop_at_answer` setting of a benchmark whose parser settles on an answer-shaped string (see README)."""
    return BenchmarkOption("stop_at_answer", "true", f"true: stop generating once the answer contains {why}, after which the "
                           "parser provably reads the same answer whatever follows (shorter raw answers, same scores; part of "
                           "the cache key); false: generate the whole token budget.", kind=bool)


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
    derived_gate_facets: ClassVar[tuple[str, ...]] = ()
    cluster_facet: ClassVar[str | None] = None
    sample_whole: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "facets" not in cls.__dict__:
            return
        rows = cls.facets
        clusters = [f.name for f in rows if f.cluster]
        if len(clusters) > 1:
            raise TypeError(f"{cls.__qualname__}: only one facet can be the cluster, got {clusters}")
        if wrong := [f.name for f in rows if f.whole and not f.cluster]:
            raise TypeError(f"{cls.__qualname__}: whole=True needs cluster=True, not so on {wrong}")
        cls.mark_docs = {cls.name: cls.description, **{m: d for f in rows for m, d in f.marks.items()}}
        cls.strata = tuple(f.name for f in rows if f.stratum)
        cls.summary_facets = tuple((f.name, *t) for f in rows for t in f.tables)
        cls.gate_facets = tuple(f.name for f in rows if f.gate)
        cls.derived_gate_facets = tuple(f.name for f in rows if f.derived_gate)
        cls.cluster_facet = clusters[0] if clusters else None
        cls.sample_whole = any(f.whole for f in rows)

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        given = dict(settings or {})
        known = {o.name: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise TomConfigError(f"{self.name} has no setting {unknown[0]!r}{closest_hint(unknown[0], known)}; known settings: "
                                 f"{', '.join(sorted(known)) or 'none'}")
        self.settings: dict[str, Any] = {o.name: o.convert(self.name, given.get(o.name, o.default)) for o in self.options}

    @abstractmethod
    def load(self, source: DataSource) -> list[Sample[E]]:
        """Read the official data and return the samples in a stable order (ids unique)."""

    @abstractmethod
    def program(self, sample: Sample[E]) -> Program:
        """Yield the requests `sample` needs and return its scored record."""

    def check_ready(self, samples: Sequence[Sample[E]]) -> None:
        """Raise a `TomError` when something answering `samples` needs is missing (FANToM's embedder). Called before the
        first model request, never when loading or collecting: data needs none of it.
        """

    def derived(self, samples: Sequence[Sample[E]]) -> list[Derived]:
        """Aggregate assertions over `samples` (coherent stories, question sets...); none by default."""
        return []

    def rule(self, kind: str) -> Rule:
        """The rule judging derived results of `kind`."""
        return self.rules.get(kind, all_pass)

    def cluster(self, facets: Mapping[str, str], unit_id: str) -> str:
        """The story or conversation a unit belongs to (its facet table's cluster facet; else the unit alone). Units of one
        cluster are not independent: intervals and paired comparisons resample whole clusters.
        """
        return (facets.get(self.cluster_facet) if self.cluster_facet else None) or unit_id

    def gate_rates(self, records: Sequence[Record]) -> list[MetricData]:
        """Gateable rates beyond accuracies and derived kinds (ToMValley's statuses), with clustered units; none by default."""
        return []

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        """The paper's aggregate metrics over the suite's records, typed: the shared renderer prints and serialises them."""
        return []

    @classmethod
    def settings_before(cls) -> dict[str, str]:
        """The value each later-added setting stands for in a baseline saved before it existed (`BenchmarkOption.before`)."""
        return {o.name: o.before for o in cls.options if o.before is not None}

    def describe(self) -> dict[str, Any]:
        """What the report records about this benchmark's configuration."""
        known = {o.name: o for o in self.options}
        return {"name": self.name,
                "settings": {k: known[k].render(v) if k in known else v for k, v in self.settings.items()}}


@functools.lru_cache(maxsize=4096)
def slug(text: str) -> str:
    """Lower-case identifier usable as a mark name and in node ids: runs of other characters become one `_`."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
