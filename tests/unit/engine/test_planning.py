"""Which questions one engine run answers: the whole selection, or a pytest-xdist worker's block."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_tom.engine.planning import Planner
from pytest_tom.framework.base import Program
from pytest_tom.models.mock import MockModel
from pytest_tom.options import TomOptions
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Message, Request
from pytest_tom.sample import Sample, Story


class EchoBench:
    """Asks one request per sample (its id) and passes when the model echoes it."""

    def program(self, sample: Sample[None]) -> Program:
        [response] = yield [Request(messages=(Message("user", sample.id),))]
        outcome = Outcome.CORRECT if response.text == sample.id else Outcome.INCORRECT
        return Record("toy", sample.id, outcome, {})


@dataclass
class FakeSuite:
    benchmark: EchoBench


@dataclass
class FakeQuestion:
    nodeid: str
    tom_key: str
    sample: Sample[None]
    suite: FakeSuite


@dataclass
class FakeOther:
    """A derived-result item or a plain test: no tom_key, no sample."""

    nodeid: str


SUITE = FakeSuite(EchoBench())


def question(qid: str) -> FakeQuestion:
    s = Sample(benchmark="toy", id=qid, context=Story(""), question="", choices=(), gold="", characters=(), facets={},
               marks=(), extra=None)
    return FakeQuestion(nodeid=f"toy[{qid}]", tom_key=f"toy::{qid}", sample=s, suite=SUITE)


def collection() -> list[Any]:
    """Ten questions with a derived item and a plain test among them: blocks of 5 on two workers."""
    qs = [question(f"q{i}") for i in range(10)]
    return [*qs[:3], FakeOther("toy_coherence[s1]"), *qs[3:], FakeOther("tests/test_plain.py::test_x")]


def options(tmp_path: Path, **kw: Any) -> TomOptions:
    base: dict[str, Any] = dict(model=None, benchmarks=(), data_dir=None, cache_dir=tmp_path / "cache", no_cache=False,
                                download=False, sample=None, seed=0, report=None, batch_size=None, max_errors=0)
    base.update(kw)
    return TomOptions(**base)


def asked(model: MockModel) -> list[str]:
    return [r.messages[-1].content for r in model.calls]


def planner(tmp_path: Path, worker: tuple[int, int] | None = None, **kw: Any) -> Planner:
    return Planner(options(tmp_path, **kw), benchmark_names=["toy"], worker=worker)


def test_one_process_answers_every_selected_question_on_the_first_ensure(tmp_path: Path) -> None:
    items = collection()
    model = MockModel(strategy="echo")
    seen: list[int] = []
    plan = Planner(options(tmp_path), benchmark_names=["toy"], worker=None, on_results=lambda results: seen.append(len(results)))
    plan.ensure(["toy::q4"], items, lambda: model)
    assert sorted(asked(model)) == sorted(f"q{i}" for i in range(10))
    assert sorted(plan.results) == sorted(f"toy::q{i}" for i in range(10))
    assert all(r.outcome is Outcome.CORRECT for r in plan.results.values())
    assert seen == [10]
    plan.ensure(["toy::q9", "toy::q0"], items, lambda: model)  # already answered: no model call, no new run
    assert len(model.calls) == 10 and seen == [10]
    plan.close()


def test_the_model_is_resolved_only_when_something_is_missing_and_the_first_one_is_kept(tmp_path: Path) -> None:
    items = collection()
    built: list[MockModel] = []

    def make() -> MockModel:
        built.append(MockModel(strategy="echo"))
        return built[-1]

    plan = planner(tmp_path, worker=(0, 2))
    plan.ensure(["toy::q0"], items, make)
    plan.ensure(["toy::q1"], items, make)  # answered in the first unit: the fixture is not even looked up
    assert len(built) == 1
    plan.ensure(["toy::q7"], items, make)
    assert plan.model is built[0] and sorted(asked(built[0])) == [f"q{i}" for i in range(10)]
    assert all(m.calls == [] for m in built[1:])  # one engine, one model for the whole session
    assert plan.describe_model()["uri"] == "mock"
    plan.close()


def test_a_worker_answers_exactly_its_block(tmp_path: Path) -> None:
    items = collection()
    model = MockModel(strategy="echo")
    plan = planner(tmp_path, worker=(1, 2))
    plan.ensure(["toy::q7"], items, lambda: model)
    assert sorted(asked(model)) == ["q5", "q6", "q7", "q8", "q9"]  # no request of block 0
    assert sorted(plan.results) == [f"toy::q{i}" for i in range(5, 10)]


def test_a_later_item_of_another_block_answers_that_block(tmp_path: Path) -> None:
    """Under --dist modes other than load, a worker may also receive items of another block."""
    items = collection()
    model = MockModel(strategy="echo")
    plan = planner(tmp_path, worker=(0, 2))
    plan.ensure(["toy::q1"], items, lambda: model)
    assert sorted(asked(model)) == ["q0", "q1", "q2", "q3", "q4"]
    plan.ensure(["toy::q6"], items, lambda: model)
    assert sorted(asked(model)) == [f"q{i}" for i in range(10)]  # each question asked once
    assert len(plan.results) == 10


def test_keys_of_several_blocks_answer_those_blocks_in_one_run(tmp_path: Path) -> None:
    items = collection()
    model = MockModel(strategy="echo")
    plan = planner(tmp_path, worker=(0, 3))
    plan.ensure(["toy::q0", "toy::q9"], items, lambda: model)
    # blocks of 10 questions over 3 workers: q0-q3, q4-q6, q7-q9
    assert sorted(asked(model)) == ["q0", "q1", "q2", "q3", "q7", "q8", "q9"]


def test_the_no_cache_option_and_the_cache(tmp_path: Path) -> None:
    items = collection()
    first = MockModel(strategy="echo")
    plan = planner(tmp_path)
    plan.ensure(["toy::q0"], items, lambda: first)
    plan.close()
    cached = MockModel(strategy="echo")
    again = planner(tmp_path)
    again.ensure(["toy::q0"], items, lambda: cached)
    assert cached.calls == [] and again.engine is not None and again.engine.stats.cache_hits == 10
    again.close()
    uncached = MockModel(strategy="echo")
    fresh = planner(tmp_path, no_cache=True)
    fresh.ensure(["toy::q0"], items, lambda: uncached)
    assert len(uncached.calls) == 10
    fresh.close()


def test_errors_are_counted_for_the_budget(tmp_path: Path) -> None:
    items = collection()

    def answer(request: Request) -> str | None:
        text = request.messages[-1].content
        return None if text in ("q2", "q8") else text  # no answer: an error response

    plan = planner(tmp_path, worker=(0, 2), max_errors=1)
    model = MockModel(answer, strategy="none")
    plan.ensure(["toy::q0"], items, lambda: model)
    assert plan.errors == 1 and plan.results["toy::q2"].outcome is Outcome.ERROR
    assert plan.within_error_budget()
    plan.ensure(["toy::q9"], items, lambda: model)
    assert plan.errors == 2 and not plan.within_error_budget()
    assert sum(r.outcome is Outcome.ERROR for r in plan.results.values()) == 2


def test_errors_are_not_answers_and_are_not_retried_within_a_run(tmp_path: Path) -> None:
    items = collection()
    model = MockModel(lambda r: None, strategy="none")
    plan = planner(tmp_path)
    plan.ensure(["toy::q0"], items, lambda: model)
    assert plan.errors == 10 and len(model.calls) == 10
    plan.ensure(["toy::q0"], items, lambda: model)  # a record exists, even an error: no second try in this run
    assert len(model.calls) == 10 and plan.errors == 10


def test_an_unselected_question_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="toy::q42 is not a selected question"):
        planner(tmp_path).ensure(["toy::q42"], collection(), lambda: MockModel())


def test_progress_is_passed_to_the_engine(tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    plan = Planner(options(tmp_path, no_cache=True), benchmark_names=["toy"], worker=None,
                   progress=lambda done, total, **_: calls.append((done, total)))
    plan.ensure(["toy::q0"], collection(), lambda: MockModel(strategy="echo"))
    assert calls[0] == (0, 10) and calls[-1] == (10, 10)


def test_describe_model_before_any_answer(tmp_path: Path) -> None:
    assert planner(tmp_path, model="mock:first").describe_model() == {"uri": "mock:first"}


class Interrupted(BaseException):
    """What pytest-timeout's signal raises in the middle of a call: pytest's `Failed`, no `Exception`."""


def test_an_interruption_leaves_the_unit_as_errors_and_reaches_the_item(tmp_path: Path) -> None:
    items, sizes = collection(), list[int]()

    def answer(request: Request) -> str:
        raise Interrupted("Timeout (>1.0s) from pytest-timeout")

    model = MockModel(answer, strategy="none")
    plan = planner(tmp_path, no_cache=True)
    with pytest.raises(Interrupted):
        plan.ensure(["toy::q0"], items, lambda: model, on_unit=sizes.append)
    assert sizes == [10] and len(model.calls) == 1  # the first request was interrupted
    assert sorted(plan.results) == sorted(f"toy::q{i}" for i in range(10)) and plan.errors == 10
    assert all("interrupted while answering this question: Interrupted: Timeout" in r.message for r in plan.results.values())
    plan.ensure(["toy::q5"], items, lambda: model, on_unit=sizes.append)  # recorded: never asked again by later items
    assert sizes == [10] and len(model.calls) == 1  # not asked again


def test_the_users_interrupt_records_nothing(tmp_path: Path) -> None:
    def answer(request: Request) -> str:
        raise KeyboardInterrupt

    plan = planner(tmp_path, no_cache=True)
    with pytest.raises(KeyboardInterrupt):
        plan.ensure(["toy::q0"], collection(), lambda: MockModel(answer, strategy="none"))
    assert plan.results == {} and plan.errors == 0
