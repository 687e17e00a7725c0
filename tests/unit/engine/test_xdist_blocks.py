"""pytest-xdist scheduling: contiguous balanced blocks, question node ids, worker ranks."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_tom.engine.planning import blocks, question_pattern
from pytest_tom.run.xdist import worker_of, worker_rank

Q, G = True, False  # a question item, any other item (a derived assertion, a plain test)


def test_questions_are_split_evenly_into_contiguous_blocks() -> None:
    assert blocks([Q] * 10, 2) == [0] * 5 + [1] * 5
    assert blocks([Q] * 10, 3) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert blocks([Q] * 7, 7) == list(range(7))


def test_other_items_stay_with_the_questions_around_them() -> None:
    # a group item goes with the questions that follow it; leading and trailing items with the first and last block
    assert blocks([G, Q, Q, G, Q, Q, G], 2) == [0, 0, 0, 1, 1, 1, 1]
    assert blocks([Q, Q, Q, G, G, Q, Q, Q], 2) == [0, 0, 0, 1, 1, 1, 1, 1]
    assert blocks([G, G, Q, Q], 2) == [0, 0, 0, 1]


def test_one_worker_takes_everything() -> None:
    assert blocks([G, Q, Q, G, Q], 1) == [0] * 5


def test_without_questions_items_are_split_by_position() -> None:
    assert blocks([G] * 6, 3) == [0, 0, 1, 1, 2, 2]
    assert blocks([], 4) == []


def test_more_workers_than_questions_leaves_some_blocks_empty() -> None:
    out = blocks([Q, Q], 5)
    assert out == [0, 2]
    assert all(0 <= b < 5 for b in out)


@given(st.lists(st.booleans(), max_size=200), st.integers(min_value=1, max_value=16))
def test_blocks_are_contiguous_and_balanced_over_questions(flags: list[bool], count: int) -> None:
    out = blocks(flags, count)
    assert len(out) == len(flags)
    assert out == sorted(out)  # contiguous: a block never resumes after another started
    assert all(0 <= b < count for b in out)
    sizes = [sum(1 for f, b in zip(flags, out, strict=True) if f and b == k) for k in range(count)]
    total = sum(flags)
    assert sum(sizes) == total
    assert max(sizes) - min(sizes) <= 1 if total >= count else max(sizes) <= 1
    assert blocks(flags, count) == out  # worker and controller compute the same blocks


# -- node ids ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodeid", "matches"),
    [
        ("tombench[en-false_belief_task-0001]", True),
        ("tests/test_tom.py::suite::tombench[en-1]", True),
        ("tests/test_tom.py::tombench[x y/z]", True),
        ("fantom[short-123-belief]", True),
        ("test_tombench[1]", False),
        ("tests/test_x.py::test_tombench[1]", False),
        ("tombench_coherence[story-1]", False),
        ("fantom_all_star[s1]", False),
        ("tombench", False),
        ("tombench[a]::more", False),
        ("tombench[a[b]]", False),
        ("mytombench[1]", False),
    ],
)
def test_question_pattern(nodeid: str, matches: bool) -> None:
    assert bool(question_pattern(["tombench", "fantom"]).search(nodeid)) is matches


def test_question_pattern_tries_longer_names_first() -> None:
    pattern = question_pattern(["tom", "tombench"])
    assert pattern.search("tombench[1]") and pattern.search("tom[1]")
    assert pattern.pattern.index("tombench") < pattern.pattern.index("|tom")
    assert question_pattern(["tombench", "tom"]).pattern == pattern.pattern


def test_question_pattern_without_names_matches_nothing() -> None:
    assert question_pattern([]).search("tombench[1]") is None
    assert question_pattern([]).search("") is None


def test_worker_rank() -> None:
    assert worker_rank("gw0") == 0 and worker_rank("gw12") == 12
    assert worker_rank("master") is None and worker_rank("gw") is None and worker_rank("gw1x") is None
    assert worker_rank("xgw1") is None


def test_worker_of() -> None:
    assert worker_of(SimpleNamespace()) is None
    assert worker_of(SimpleNamespace(workerinput={})) is None
    assert worker_of(SimpleNamespace(workerinput={"workerid": "gw2", "workercount": 4})) == (2, 4)
    assert worker_of(SimpleNamespace(workerinput={"workerid": "gw5", "workercount": 4})) == (-1, 4)
    assert worker_of(SimpleNamespace(workerinput={"workerid": "odd", "workercount": "3"})) == (-1, 3)
