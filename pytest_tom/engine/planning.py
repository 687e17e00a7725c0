"""Planning: which samples to answer together, and the engine that answers them. Dedupe and batching need as much of the
run as possible in one engine run, so the first item needing an answer answers its whole planning unit: in one process
every selected question; on an xdist worker its block of the collection (`blocks`, computed alike on both sides, so
under `--dist load` no request is sent twice; other modes may ask a few twice but never lose one).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from pytest_tom.engine import Engine, ProgressCallback, ResponseCache, error_record
from pytest_tom.errors import TomConfigError
from pytest_tom.framework.base import Program
from pytest_tom.framework.judge import JUDGE
from pytest_tom.models import as_model, make_model
from pytest_tom.models.base import Model
from pytest_tom.models.embedding import make_scoring_model
from pytest_tom.options import TomOptions
from pytest_tom.record import Outcome, Record

if TYPE_CHECKING:
    from pytest_tom.engine.suites import LoadedSuite
    from pytest_tom.sample import Sample


@cache
def _compiled(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) or r"(?!)"
    return re.compile(r"(?:^|::)(?:" + alternatives + r")\[[^\[\]]*\]$")


def question_pattern(names: Sequence[str]) -> re.Pattern[str]:
    """Matches the node id of a question item of any registered benchmark (`<name>[<sample id>]`)."""
    return _compiled(tuple(names))


def blocks(is_question: Sequence[bool], count: int) -> list[int]:
    """The block (0..count-1) of each collected item, with the questions split evenly into contiguous blocks. Other
    items stay with the questions around them; worker and controller see the same collection, so they agree on every
    block.
    """
    total, n = sum(is_question), len(is_question)
    before = itertools.accumulate(is_question, initial=0)  # questions before each position
    return [min(count - 1, (seen * count) // total if total else (pos * count) // max(1, n))
            for pos, seen in zip(range(n), before, strict=False)]


class PlannedItem(Protocol):
    """What planning needs from a question item (the run layer's `QuestionItem`)."""

    nodeid: str
    tom_key: str
    sample: Sample[Any]
    suite: LoadedSuite


class Planner:
    """Owns the engine and the answers of this process; answers planning units on demand."""

    def __init__(self, options: TomOptions, *, benchmark_names: Sequence[str], worker: tuple[int, int] | None,
                 progress: ProgressCallback | None = None,
                 on_results: Callable[[dict[str, Record]], None] | None = None) -> None:
        self.options = options
        self.names = list(benchmark_names)
        self.worker = worker
        """(rank, count) on a pytest-xdist worker, None in one process or on the controller."""
        self.progress = progress
        self.on_results = on_results
        self.results: dict[str, Record] = {}
        self.errors = 0
        """Questions whose answer is an ERROR (for --tom-max-errors)."""
        self.engine: Engine | None = None
        self.model: Model | None = None
        self._cache: ResponseCache | None = None
        self._order: list[PlannedItem] | None = None
        self._unit_of: dict[str, int] = {}

    def _start(self, model: object) -> Engine:
        if self.engine is None:
            self.model = as_model(model)
            self._cache = None if self.options.no_cache else ResponseCache(self.options.cache_dir)
            download = self.options.download
            self.engine = Engine(
                self.model, self._cache, batch_size=self.options.batch_size, progress=self.progress,
                scoring_models=lambda name: (make_model(self.options.judge or "") if name == JUDGE
                                             else make_scoring_model(name, allow_download=download)),
                absent=() if self.options.judge else (JUDGE,),
            )
        return self.engine

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close_scoring_models()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def ensure(self, keys: Sequence[str], items: Sequence[Any], model: Callable[[], object],
               on_unit: Callable[[int], None] | None = None) -> None:
        """Make sure `keys` have records, answering the planning unit of each missing one in one engine run. Afterwards
        every question of the unit has a record, so a failure is recorded once, never re-sent by each later item: a
        program that cannot be built, or an exception out of the engine, is an ERROR. Only a `TomConfigError` (a damaged
        cache) escapes: the run layer stops the run with it. An interruption other than the user's (pytest-timeout's
        signal) leaves the unit's unanswered questions as ERRORs and reaches the item. `on_unit(n)` hears the size of a
        unit about to be answered.
        """
        missing = [k for k in keys if k not in self.results]
        if not missing:
            return
        engine = self.engine or self._start(model())
        unit = self._unit(missing, items)
        if on_unit is not None:
            on_unit(len(unit))
        programs: dict[str, tuple[Sample[Any], Program]] = {}
        fresh: dict[str, Record] = {}
        for it in unit:
            try:
                programs[it.tom_key] = (it.sample, it.suite.benchmark.program(it.sample))
            except Exception as exc:  # noqa: BLE001 - one benchmark bug costs one question
                fresh[it.tom_key] = error_record(
                    it.sample, f"{it.sample.benchmark} could not build the program of {it.sample.id}: "
                               f"{type(exc).__name__}: {exc}")
        try:
            fresh.update(engine.run(programs))
        except (TomConfigError, KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - recorded for the unit, never retried per item
            message = f"pytest-tom's engine failed while answering this question: {type(exc).__name__}: {exc}"
            for key, (sample, _) in programs.items():
                fresh.setdefault(key, error_record(sample, message))
        except BaseException as exc:  # pytest's outcome (pytest-timeout's signal): the item hears it, the unit keeps it
            message = f"interrupted while answering this question: {type(exc).__name__}: {exc}"
            self._keep(fresh | {key: error_record(sample, message) for key, (sample, _) in programs.items()})
            raise
        self._keep(fresh)

    def _keep(self, fresh: dict[str, Record]) -> None:
        for key, record in fresh.items():
            self.results[key] = record
            if record.outcome is Outcome.ERROR:
                self.errors += 1
        if self.on_results is not None:
            self.on_results(self.results)

    def answer(self, sample: Sample[Any], benchmark: Any, model: Callable[[], object]) -> Record:
        """One sample's record now, through the engine and its cache (a robustness item's perturbations). Outside any
        planning unit: a perturbed sample is no selected question, and each of hypothesis' draws depends on the answers
        to the ones before it.
        """
        engine = self.engine or self._start(model())
        try:
            program = benchmark.program(sample)
        except Exception as exc:  # noqa: BLE001 - a benchmark bug on a rewritten sample is an error for it
            return error_record(sample, f"{sample.benchmark} could not build the program of a perturbed {sample.id}: "
                                        f"{type(exc).__name__}: {exc}")
        try:
            return engine.run({"perturbed": (sample, program)})["perturbed"]
        except TomConfigError:
            raise
        except Exception as exc:  # noqa: BLE001
            return error_record(sample, f"pytest-tom's engine failed on a perturbed question: {type(exc).__name__}: {exc}")

    def _questions(self, items: Sequence[Any]) -> list[PlannedItem]:
        if self._order is None:
            self._order = [it for it in items if hasattr(it, "tom_key") and hasattr(it, "sample")]
            by_pos = {it.nodeid: i for i, it in enumerate(items)}
            pattern = question_pattern(self.names)
            block = blocks([bool(pattern.search(it.nodeid)) for it in items], self.worker[1] if self.worker else 1)
            self._unit_of = {it.tom_key: block[by_pos[it.nodeid]] for it in self._order}  # one process: one block
        return self._order

    def _unit(self, missing: Sequence[str], items: Sequence[Any]) -> list[PlannedItem]:
        order = self._questions(items)
        unknown = [k for k in missing if k not in self._unit_of]
        if unknown:
            raise KeyError(f"pytest-tom: {unknown[0]} is not a selected question")
        units = {self._unit_of[k] for k in missing}
        return [it for it in order if self._unit_of[it.tom_key] in units and it.tom_key not in self.results]

    def within_error_budget(self) -> bool:
        """True when this process's erroring questions fit the --tom-max-errors budget."""
        return self.errors <= self.options.max_errors

    def describe_model(self) -> dict[str, Any]:
        return self.model.describe() if self.model is not None else {"uri": self.options.model}
