"""pytest nodes: a suite collector, one item per question, one item per consistency group.

The shape follows pytest's own example for non-Python tests: `collect()` yields
items built with `from_parent`, each item implements `setup`/`runtest`/
`repr_failure`/`reportinfo`. Items do no model work themselves: the first one
to run asks the session to answer every selected question at once, so the
engine can dedupe and batch across the whole selection.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.errors import TomConfigError, TomError, TomModelError
from pytest_tom.types import Group, Outcome, Question

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from pytest_tom.session import LoadedSuite, TomSession


class QuestionFailed(AssertionError):
    """A question answered wrongly or unreadably; its message is the whole explanation."""


class GroupFailed(AssertionError):
    """A consistency group with at least one failing member."""


def _tom(config: pytest.Config) -> TomSession:
    from pytest_tom.plugin import tom_session

    return tom_session(config)


class SuiteCollector(pytest.Collector):
    """All questions of one suite (a benchmark with its settings)."""

    def __init__(self, *, declaration: Any, cli: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.declaration = declaration
        # Suites from --tom-benchmark have no test file: their items' ids are the bare
        # item names (tombench[en-false_belief_task-0042]); module suites nest under the module.
        self.cli = cli

    def collect(self) -> Iterator[pytest.Item]:
        tom = _tom(self.config)
        sid = self.declaration.benchmark if self.cli else self.nodeid
        try:
            loaded = tom.load_suite(sid, self.declaration)
        except TomError as exc:
            raise self.CollectError(f"pytest-tom: {exc}") from None
        prefix = "" if self.cli else f"{self.nodeid}::"
        bench = loaded.benchmark.name
        # Each group follows its last member, so xdist's contiguous scheduling tends to
        # run a consistency assertion on the worker that already answered its questions.
        position = {q.qid: i for i, q in enumerate(loaded.questions)}
        after: dict[int, list[Group]] = {}
        for g in loaded.groups:
            last = max((position[m] for m in g.members if m in position), default=len(loaded.questions) - 1)
            after.setdefault(last, []).append(g)

        def group_items(index: int) -> Iterator[pytest.Item]:
            for g in after.pop(index, []):
                name = f"{bench}_{g.kind}[{g.gid}]"
                yield GroupItem.from_parent(self, name=name, nodeid=prefix + name, group=g, suite=loaded)

        for i, q in enumerate(loaded.questions):
            name = f"{bench}[{q.qid}]"
            yield QuestionItem.from_parent(self, name=name, nodeid=prefix + name, question=q, suite=loaded)
            yield from group_items(i)
        yield from group_items(-1)  # groups of a suite without questions


class _TomItem(pytest.Item):
    suite: LoadedSuite

    def key(self) -> str:
        raise NotImplementedError

    def _ensure_answers(self, keys: list[str]) -> None:
        try:
            _tom(self.config).ensure(keys, self.session.items, model=lambda: self._fixture("tom_model"))
        except TomConfigError as exc:  # the same message on every item would help nobody
            pytest.exit(f"pytest-tom: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)

    def _fixture(self, name: str) -> Any:
        """Resolve a fixture for this item, so users can override `tom_model` in conftest.py."""
        from _pytest.fixtures import TopRequest

        self.funcargs: dict[str, Any] = {}
        self._fixtureinfo = self.session._fixturemanager.getfixtureinfo(node=self, func=None, cls=None)
        return TopRequest(self, _ispytest=True).getfixturevalue(name)  # type: ignore[arg-type]

    def repr_failure(self, excinfo: ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, (QuestionFailed, GroupFailed, TomError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class QuestionItem(_TomItem):
    """One question in one setting; passes when the model answers it correctly."""

    def __init__(self, *, question: Question, suite: LoadedSuite, **kw: Any) -> None:
        super().__init__(**kw)
        self.question = question
        self.suite = suite
        for mark in question.marks:
            self.add_marker(mark)
        defect = question.facets.get("defect")
        if defect:
            self.add_marker(pytest.mark.xfail(reason=f"known release defect: {defect}", strict=False))

    def key(self) -> str:
        return f"{self.suite.sid}::{self.question.qid}"

    def needed_keys(self) -> list[str]:
        """The question results this item reads (engine planning on xdist workers)."""
        return [self.key()]

    def setup(self) -> None:
        self._ensure_answers([self.key()])
        result = _tom(self.config).result(self.key())
        self.user_properties.append((RECORD_PROPERTY, _tom(self.config).record_for(self, result)))
        self._result = result
        if result.outcome is Outcome.ERROR:
            tom = _tom(self.config)
            if tom.errors_within_budget():
                pytest.skip(f"tolerated by --tom-max-errors={tom.options.max_errors}: {result.message}")
            raise TomModelError(f"{self.question.source}: {result.message}")

    def runtest(self) -> None:
        if not self._result.passed:
            raise QuestionFailed(self._result.message or self._result.outcome.value)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"tom: {self.suite.benchmark.name}/{self.question.qid}"


class GroupItem(_TomItem):
    """A consistency assertion: passes only if every member question passes.

    Computed only on complete groups: if -m/-k left out part of the group, the
    assertion is skipped with a reason, never evaluated on a partial group.
    """

    def __init__(self, *, group: Group, suite: LoadedSuite, **kw: Any) -> None:
        super().__init__(**kw)
        self.group = group
        self.suite = suite
        for mark in group.marks:
            self.add_marker(mark)

    def key(self) -> str:
        return f"{self.suite.sid}::group::{self.group.gid}"

    def needed_keys(self) -> list[str]:
        """The member results this assertion reads (engine planning on xdist workers)."""
        return [f"{self.suite.sid}::{m}" for m in self.group.members]

    def setup(self) -> None:
        tom = _tom(self.config)
        member_keys = self.needed_keys()
        selected = tom.selected_keys(self.session.items)
        present = [k for k in member_keys if k in selected]
        if len(present) != len(member_keys):
            pytest.skip(
                f"{self.group.kind} group {self.group.gid}: only {len(present)} of {len(member_keys)} questions "
                "are selected; a consistency assertion is never computed on a partial group"
            )
        self._ensure_answers(member_keys)
        self._members = [tom.result(k) for k in member_keys]
        self.user_properties.append((RECORD_PROPERTY, tom.group_record(self, self._members)))
        errors = [r for r in self._members if r.outcome is Outcome.ERROR]
        if errors:
            if tom.errors_within_budget():
                pytest.skip(f"tolerated by --tom-max-errors={tom.options.max_errors}: {len(errors)} member(s) hit model errors")
            raise TomModelError(f"{self.group.gid}: {len(errors)} member(s) hit model errors: {errors[0].message}")

    def runtest(self) -> None:
        broken = [r for r in self._members if not r.passed]
        if broken:
            lines = [
                f"{self.group.kind} group {self.group.gid}: {len(broken)} of {len(self._members)} questions failed",
            ]
            for r in broken:
                why = r.details.get("why")
                lines.append(f"  {r.qid}: {r.outcome.value} (answer {r.parsed!r}, gold {r.gold!r})" + (f": {why}" if why else ""))
            raise GroupFailed("\n".join(lines))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"tom: {self.suite.benchmark.name}/{self.group.kind}/{self.group.gid}"
