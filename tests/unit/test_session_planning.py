"""Which questions one engine run answers: the whole selection, or a pytest-xdist worker's share."""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

import pytest_tom.collect
from pytest_tom.session import TomSession


class FakeQuestion:
    def __init__(self, key: str) -> None:
        self._key = key

    def key(self) -> str:
        return self._key

    def needed_keys(self) -> list[str]:
        return [self._key]


class FakeGroup:
    def __init__(self, *members: str) -> None:
        self.members = list(members)

    def needed_keys(self) -> list[str]:
        return self.members


class FakeQueue:
    """The shape of xdist's worker TestQueue: indices (and a shutdown marker) behind a lock."""

    def __init__(self, items: list[Any]) -> None:
        self._items = deque(items)

    @contextlib.contextmanager
    def lock(self) -> Iterator[deque[Any]]:
        yield self._items


class FakeInteractor:
    def __init__(self, current: int, following: int | None, queued: list[Any]) -> None:
        self.item_index = current
        self.nextitem_index = following
        self.torun = FakeQueue(queued)


def session(workers: int, plugins: list[Any]) -> TomSession:
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugins=lambda: plugins))
    if workers > 1:
        config.workerinput = {"workercount": workers}
    return TomSession(config, options=None, registry=None)  # type: ignore[arg-type]


@pytest.fixture
def items(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(pytest_tom.collect, "QuestionItem", FakeQuestion)
    return [*(FakeQuestion(f"q{i}") for i in range(10)), FakeGroup("q0", "q9"), object()]


def test_one_process_plans_every_question_without_a_result(items: list[Any]) -> None:
    tom = session(1, [])
    tom.results["q1"] = object()  # type: ignore[assignment]
    assert list(tom._planning_unit(["q5"], items)) == [f"q{i}" for i in range(10) if i != 1]


def test_a_worker_plans_what_xdist_queued_on_it(items: list[Any]) -> None:
    shutdown = SimpleNamespace(name="SHUTDOWN")  # xdist's marker is an enum member, not an index
    tom = session(2, [object(), FakeInteractor(current=2, following=3, queued=[4, 10, 11, shutdown])])
    tom.results["q4"] = object()  # type: ignore[assignment]
    # the current and next items, the queued question without a result, the queued group's members
    assert set(tom._planning_unit(["q2"], items)) == {"q2", "q3", "q0", "q9"}


def test_a_worker_without_a_readable_queue_plans_the_chunk_that_holds_the_question(items: list[Any]) -> None:
    tom = session(2, [SimpleNamespace(torun=None)])
    # 10 questions, 2 workers -> chunks of ceil(10 / 8) = 2
    assert list(tom._planning_unit(["q5"], items)) == ["q4", "q5"]


def test_an_unselected_question_is_a_clear_error(items: list[Any]) -> None:
    with pytest.raises(KeyError, match="q42 is not a selected question"):
        session(1, [])._planning_unit(["q42"], items)
