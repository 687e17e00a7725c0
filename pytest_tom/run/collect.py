"""pytest nodes: a suite collector, one item per question, one item per derived assertion. Question items are
`pytest.Function`s, so they request the `tom_model` fixture through pytest's fixture machinery (overridable in
conftest.py); they run no test function. The first item to run asks the planner to answer its whole planning unit, so
the engine can dedupe and batch across the selection.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.derived import Derived, partial_group
from pytest_tom.engine.records import DerivedSpec
from pytest_tom.errors import TomConfigError, TomError, TomModelError
from pytest_tom.models.base import Model, format_user_frames
from pytest_tom.record import Outcome, Record, Verdict
from pytest_tom.run import failures
from pytest_tom.run.gates import is_gate_run
from pytest_tom.run.nodeids import CacheComparableId, place
from pytest_tom.run.robustness import RobustnessItem
from pytest_tom.run.robustness import register_marks as register_robust_marks
from pytest_tom.run.session import tom_session

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from pytest_tom.engine.suites import LoadedSuite
    from pytest_tom.robustness.base import StrategySpec
    from pytest_tom.sample import Sample
    from pytest_tom.suite import Suite


class ItemFailed(AssertionError):
    """A question answered wrongly or unreadably, or an aggregate assertion that does not hold."""


class ModelFailed(TomModelError):
    """A question or aggregate without an answer: the model (or the tom_model fixture) failed. `error` is the model's
    error text, the same for every question it failed, so the first item shows it in full and the others point to it.
    """

    def __init__(self, message: str, *, error: str) -> None:
        super().__init__(message)
        self.error = error


class RunStopped(pytest.exit.Exception):  # type: ignore[name-defined,misc]
    """A configuration error that makes every item fail alike: the run stops once with a usage error. Raised inside an
    item, where pytest lets only an exit through; the runtest-loop wrapper turns it into `pytest.UsageError` (one
    `ERROR: pytest-tom: ...` line, exit status 4).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, returncode=pytest.ExitCode.USAGE_ERROR)


def _model_under_test(tom_model: Model) -> None:
    """Declares, through its signature, the fixture every question item needs."""


LOAD_ERROR = pytest.StashKey[str]()
"""The message of the suite that could not be loaded (bad data, settings or dependencies), for `stop_at_load_error`."""
LOAD_ERROR_PREFIX = "pytest-tom: "
MAX_LINES = 20
"""A load error is shown in one screen at most: a longer message keeps its first lines and counts the rest."""


def load_error(exc: TomError) -> str:
    """The one message a suite that cannot be loaded ends the run with, at most `MAX_LINES` lines."""
    lines = str(exc).splitlines() or [type(exc).__name__]
    if len(lines) > MAX_LINES:
        lines = [*lines[: MAX_LINES - 1], f"... ({len(lines) - MAX_LINES + 1} more lines)"]
    return LOAD_ERROR_PREFIX + "\n".join(lines)


def stop_at_load_error(config: pytest.Config, report: pytest.CollectReport, *, controller: bool) -> None:
    """A suite's data (or settings) cannot be loaded: end the run now as a usage error, exit status 4. A collection
    error shows as "1 error" under `--tb=no` and `-q`, its cause hidden; a `pytest.UsageError` is one `ERROR:
    pytest-tom: ...` line under every option, and nothing more is collected or asked. Raised from
    `pytest_collectreport`, since pytest turns any exception in a collector into a collection error; on the xdist
    controller the worker's report is the message.
    """
    if not report.failed:
        return
    message = config.stash.get(LOAD_ERROR, None)
    if message is not None:
        del config.stash[LOAD_ERROR]
    elif controller and isinstance(report.longrepr, str) and report.longrepr.startswith(LOAD_ERROR_PREFIX):
        message = report.longrepr
    if message is not None:
        raise pytest.UsageError(message)


class SuiteCollector(pytest.Collector):
    """All questions of one suite (a benchmark with its settings). Module suites nest under their test module; suites
    from --tom-benchmark hang off the session under the benchmark's name.
    """

    def __init__(self, *, declaration: Suite, wanted: frozenset[str] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.declaration = declaration
        self.wanted = wanted
        """Item names addressed on the command line (None: every item)."""
        module = isinstance(self.parent, pytest.Module)
        self.place: Path = self.path if module else self.session.path / self.name
        """Where its items are placed: the test module, or `<rootdir>/<benchmark>` as --tom-benchmark's node ids say."""
        self.line = suite_line(self.path, self.name) if module else 0
        """0-based line of the suite's assignment in its test module (0 for --tom-benchmark)."""

    def collect(self) -> Iterator[pytest.Item]:
        """The suite's items; a suite that cannot be loaded stops the run as a usage error (`LOAD_ERROR`)."""
        try:
            loaded = tom_session(self.config).suites.load(self.nodeid, self.declaration)
            if not self.config.option.collectonly:  # a run, not a listing: what answering needs, before any request
                loaded.benchmark.check_ready(loaded.samples)
        except TomError as exc:
            message = load_error(exc)
            self.config.stash[LOAD_ERROR] = message
            raise self.CollectError(message) from None
        for item in suite_items(self, loaded):
            if self.wanted is None or item.name in self.wanted:
                yield item


@functools.lru_cache(maxsize=64)
def _module_lines(path: Path) -> tuple[str, ...]:
    try:
        return tuple(path.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return ()


def suite_line(path: Path, name: str) -> int:
    """The 0-based line that assigns the suite `name` at the module's top level (`name = pytest_tom.suite(...)`), else 0.
    pytest places an item there: a skip mark's report and JUnit XML's line need one, and a skip of pytest-tom's own
    is reported there rather than at the pytest-tom line that raised it.
    """
    assign = re.compile(rf"{re.escape(name)}\s*(:[^=]*)?=(?!=)")
    return next((i for i, line in enumerate(_module_lines(path)) if assign.match(line)), 0)


def at_item(item: pytest.Item, report: pytest.TestReport) -> pytest.TestReport:
    """A skip raised inside pytest-tom (an unscored question, an error --tom-max-errors tolerates, a partial group) is
    reported at its item, the suite's line, not at the line of pytest-tom that raised it; other skips are left as they are.
    """
    longrepr = report.longrepr
    if (report.skipped and isinstance(item.parent, SuiteCollector) and isinstance(longrepr, tuple) and len(longrepr) == 3
            and Path(str(longrepr[0])).resolve().is_relative_to(_PACKAGE)):
        path, line = place(item)
        report.longrepr = (os.fspath(path), line + 1, longrepr[2])
    return report


TIMEOUT_KEY = pytest.StashKey[Any]()
"""pytest-timeout's settings for an item (its `Settings` named tuple), as its `pytest_timeout_set_timer` hook gave them."""


def stretch_timeout(item: pytest.Item, questions: int) -> None:
    """Under pytest-timeout's per-test limit (`--timeout`, ini `timeout`, a `timeout` mark), the item that answers a
    planning unit of `questions` questions gets that many times the limit, counted from now: each question keeps its
    per-test budget, and a model that hangs still times out. Without the stretch every item would time out in turn,
    each restarting the unit.
    """
    settings = item.stash.get(TIMEOUT_KEY, None)
    if settings is None or questions <= 1:
        return
    hook = item.config.hook
    hook.pytest_timeout_cancel_timer(item=item)
    hook.pytest_timeout_set_timer(item=item, settings=settings._replace(timeout=settings.timeout * questions))


_PACKAGE = Path(__file__).resolve().parents[1]
"""pytest_tom's own folder: skips raised under it are pytest-tom's."""


def suite_items(parent: pytest.Collector, loaded: LoadedSuite) -> Iterator[pytest.Item]:
    """The suite's question items in data order, each derived item right after its last member. Placing a derived item
    after its last member lets a plain run report it as soon as it can be judged.
    """
    bench = loaded.benchmark.name
    position = {s.id: i for i, s in enumerate(loaded.samples)}
    after: dict[int, list[Derived]] = {}
    for d in loaded.derived:
        last = max((position[m] for m in d.members if m in position), default=len(loaded.samples) - 1)
        after.setdefault(last, []).append(d)

    # Every item of a suite has the same parent and the same fixture closure, so pytest's own parametrization shares one
    # FuncFixtureInfo between them; computing it per item would double the collection time of a full benchmark. Falls
    # back to per-item if pytest moves it.
    shared: dict[str, Any] = {}

    def make(cls: type[pytest.Function], name: str, **kw: Any) -> pytest.Item:
        item = cls.from_parent(parent, name=name, callobj=_model_under_test, **shared, **kw)
        info = getattr(item, "_fixtureinfo", None)
        if not shared and info is not None:
            shared["fixtureinfo"] = info
        return item

    def derived_items(index: int) -> Iterator[pytest.Item]:
        for d in after.pop(index, []):
            yield make(DerivedItem, f"{bench}_{d.kind}[{d.id}]", derived=d, suite=loaded)

    specs: list[StrategySpec] = []
    if loaded.robustness:
        from pytest_tom.robustness import resolve  # loads hypothesis and the built-in strategies: only when asked

        specs = resolve(list(loaded.robustness))
        register_robust_marks(parent.config, specs)
    for i, s in enumerate(loaded.samples):
        yield make(QuestionItem, f"{bench}[{s.id}]", sample=s, suite=loaded)
        yield from (make(RobustnessItem, f"{bench}_robustness[{s.id}-{spec.name}]", base=s, suite=loaded, spec=spec)
                    for spec in specs if spec.applies(s))
        yield from derived_items(i)
    yield from derived_items(-1)  # derived results of a suite without samples


@functools.lru_cache(maxsize=4096)
def _mark(name: str) -> pytest.MarkDecorator:
    """One MarkDecorator per mark name: looking it up on `pytest.mark` for each of 40,000 marks costs seconds."""
    return getattr(pytest.mark, name)  # type: ignore[no-any-return]


class _TomItem(CacheComparableId, pytest.Function):
    """A pytest-tom item: requests `tom_model` like a test function, reports its own failure text."""

    _fixture_error: BaseException | None = None

    def _repr_failure_py(self, excinfo: ExceptionInfo[BaseException], style: Any = None) -> TerminalRepr:
        """pytest-tom's own failures in its own words, in setup (model errors) and call (wrong answers) alike. pytest
        formats setup errors through this method and call failures through `repr_failure`, which calls it; anything else
        keeps pytest's traceback.
        """
        shown = self._show(excinfo.value)
        return shown if shown is not None else super()._repr_failure_py(excinfo, style)

    def _source(self) -> str:
        """Where the item's data lies ("<file> line <n>"), for --tb=line and the short summary."""
        sample = getattr(self, "sample", None)
        return sample.source if sample is not None and sample.source else self.location[0]

    def _show(self, exc: BaseException) -> TerminalRepr | None:
        if isinstance(exc, ModelFailed):
            model = tom_session(self.config).planner.model
            if exc is self._fixture_error:
                tb = format_user_frames(exc.__cause__) if exc.__cause__ is not None else None
            else:
                tb = model.user_traceback(exc.error) if model is not None else None
            return failures.model_error(self, str(exc), error=exc.error, source=self._source(), traceback=tb)
        if isinstance(exc, TomError):
            return failures.located(self.config, str(exc), self._source(), str(exc).splitlines(), error=True)
        return None

    def _stop(self, message: str) -> NoReturn:
        """Stop the run once: a usage error in one process; on an xdist worker, a stop request with this item failing.
        (An exit on a worker reads as a crash on the controller; a stop request is what xdist hands on.)
        """
        if tom_session(self.config).worker is None:
            raise RunStopped(message) from None
        self.session.shouldstop = message
        raise TomConfigError(message) from None

    def setup(self) -> None:
        """Resolve `tom_model` through pytest's fixture machinery, once per process. Items only need the model for the
        first planning unit; filling fixtures for each of 7,000 questions would double a cached run's per-item cost, so
        once the engine holds the model, later items skip it (function-scoped autouse fixtures do not run for them
        either). An exception out of the user's fixtures is shown once with their frames.
        """
        tom = tom_session(self.config)
        if tom.refusal is not None:
            self._stop(tom.refusal)
        if tom.planner.engine is not None:
            return
        try:
            super().setup()
        except RunStopped as exc:
            self._stop(str(exc.msg))
        except TomConfigError as exc:
            self._stop(f"pytest-tom: {exc}")
        except Exception as exc:
            if isinstance(exc, TomError) or type(exc).__name__ == "FixtureLookupError":
                raise  # pytest shows a missing fixture with the fixtures available: leave it be
            error = f"fixture setup failed: {type(exc).__name__}: {exc}"
            failed = ModelFailed(error, error=error)
            self._fixture_error = failed
            raise failed from exc

    def _ensure(self, keys: list[str]) -> None:
        tom = tom_session(self.config)
        try:
            tom.planner.ensure(keys, self.session.items, model=lambda: self.funcargs["tom_model"],
                               on_unit=functools.partial(stretch_timeout, self))
        except TomConfigError as exc:
            self._stop(f"pytest-tom: {exc}")


class QuestionItem(_TomItem):
    """One question in one setting; passes when the model answers it correctly."""

    def __init__(self, *, sample: Sample[Any], suite: LoadedSuite, **kw: Any) -> None:
        super().__init__(**kw)
        self.sample = sample
        self.suite = suite
        self.tom_key = suite.key(sample.id)
        for mark in sample.marks:
            self.add_marker(_mark(mark))
        if sample.defect:
            self.add_marker(pytest.mark.xfail(reason=f"known release defect: {sample.defect}", strict=False))

    def setup(self) -> None:
        super().setup()
        tom = tom_session(self.config)
        self._ensure([self.tom_key])
        record = tom.planner.results[self.tom_key].replace(suite=self.suite.sid, nodeid=self.nodeid)
        self.user_properties.append((RECORD_PROPERTY, record.to_dict()))
        tom.records.add_local(record)
        self.record: Record = record
        if record.outcome is Outcome.ERROR:
            if tom.planner.within_error_budget():
                pytest.skip(f"tolerated by --tom-max-errors={tom.options.max_errors}: {record.message}")
            raise ModelFailed(f"{self.sample.source}: {record.message}", error=record.message)
        if record.outcome is Outcome.UNSCORED:  # asked and reported, never scored: the release has no gold for it
            pytest.skip(record.message.splitlines()[0] if record.message else f"{self.sample.source}: no scorable gold")

    def runtest(self) -> None:
        """A wrong or unreadable answer fails the item, except in a gate run, where the gates decide (`run.gates`)."""
        if not self.record.passed and not is_gate_run(tom_session(self.config)):
            raise ItemFailed(self.record.message or self.record.outcome.value)

    def _show(self, exc: BaseException) -> TerminalRepr | None:
        if isinstance(exc, ItemFailed):
            return failures.question_failure(self, self.record, self.sample)
        return super()._show(exc)

    def reportinfo(self) -> tuple[Path, int, str]:
        """The failure header: the suite as the test file names it (two suites of one file differ) and the question; the
        line is the suite's (a skip mark needs one).
        """
        suite = self.parent.name if self.parent else self.suite.benchmark.name
        return *place(self), f"{suite}: {self.sample.id}"


class DerivedItem(_TomItem):
    """An aggregate assertion judged from its members' records. Skipped with a reason when -m/-k left out some members,
    never judged on a partial set; under pytest-xdist the controller judges it instead (`run.xdist`).
    """

    def __init__(self, *, derived: Derived, suite: LoadedSuite, **kw: Any) -> None:
        super().__init__(**kw)
        self.derived = derived
        self.suite = suite
        for mark in derived.marks:
            self.add_marker(_mark(mark))

    def member_keys(self) -> list[str]:
        return [self.suite.key(m) for m in self.derived.members]

    def spec(self, selected: set[str]) -> DerivedSpec:
        path, line, domain = self.location
        return DerivedSpec(suite=self.suite.sid, nodeid=self.nodeid, location=(path, line, domain),
                           derived=self.derived, selected=all(k in selected for k in self.member_keys()))

    def setup(self) -> None:
        super().setup()
        tom = tom_session(self.config)
        selected = tom.selected_keys(self.session.items)
        spec = self.spec(selected)
        if not spec.selected:
            pytest.skip(partial_group(self.derived, sum(k in selected for k in self.member_keys())))
        self._ensure(self.member_keys())
        members = {self.derived.members[i]: tom.planner.results[k] for i, k in enumerate(self.member_keys())}
        self.verdict = tom.records.judge(spec, members, self.suite.benchmark)
        self.user_properties.append((RECORD_PROPERTY, self.verdict.to_dict()))
        tom.records.add_local(self.verdict)
        if self.verdict.verdict is Verdict.ERROR:
            if tom.planner.within_error_budget():
                pytest.skip(f"tolerated by --tom-max-errors={tom.options.max_errors}: {self.verdict.message}")
            raise ModelFailed(self.verdict.message, error=self.verdict.message)

    def runtest(self) -> None:
        if self.verdict.verdict is Verdict.FAILED and not is_gate_run(tom_session(self.config)):
            raise ItemFailed(self.verdict.message)

    def _show(self, exc: BaseException) -> TerminalRepr | None:
        if isinstance(exc, ItemFailed):
            return failures.derived_failure(self.config, self.verdict, self.location[0])
        return super()._show(exc)

    def reportinfo(self) -> tuple[Path, int, str]:
        suite = self.parent.name if self.parent else self.suite.benchmark.name
        return *place(self), f"{suite}: {self.derived.kind} {self.derived.id}"
