"""The judged step: a judge request goes to the --tom-judge model through the engine's cache, and without a judge it
gets an answer with no text (never an error), so a benchmark keeps its deterministic verdict.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path

from pytest_tom.engine import Engine, ResponseCache
from pytest_tom.framework.judge import JUDGE, ask, verdict
from pytest_tom.models.base import CallableModel
from pytest_tom.record import Outcome, Record
from pytest_tom.request import GenerationSettings, Request, Response
from pytest_tom.sample import Choice, Sample, Story

SAMPLE = Sample(benchmark="toy", id="q1", context=Story("s"), question="q?", choices=(Choice("a", "x"),), gold="a",
                characters=(), facets={}, marks=(), extra=None)


def program() -> Generator[Sequence[Request], Sequence[Response], Record]:
    (said,) = yield [ask("Is it right?", GenerationSettings(max_new_tokens=3), ("True", "False"))]
    return Record.of(SAMPLE, Outcome.UNPARSEABLE, details={"judge": verdict(said)})


def test_a_judge_request_names_the_judge_and_its_verdicts() -> None:
    req = ask("p", GenerationSettings())
    assert req.model == JUDGE and req.messages[0].content == "p" and req.key != Request(messages=req.messages).key
    assert verdict(Response(text=" True \n")) == "True" and verdict(Response()) is None


def test_without_a_judge_the_step_gets_no_text_and_no_error_and_nothing_is_sent_or_counted() -> None:
    def no_resolver(name: str) -> CallableModel:
        raise AssertionError(f"asked to build {name}")

    engine = Engine(CallableModel(lambda b, s: ["x"] * len(b)), scoring_models=no_resolver, absent=(JUDGE,))
    record = engine.run({"q1": (SAMPLE, program())})["q1"]
    assert record.outcome is Outcome.UNPARSEABLE and record.details == {"judge": None}
    assert engine.stats.scoring == {} and engine.stats.requests == 0


def test_the_judge_answers_through_the_cache(tmp_path: Path) -> None:
    asked: list[str] = []

    def judge(batch: list, settings: dict) -> list[str]:
        asked.extend(c[-1]["content"] for c in batch)
        return ["True"] * len(batch)

    for _ in range(2):
        cache = ResponseCache(tmp_path)
        engine = Engine(CallableModel(lambda b, s: ["x"] * len(b)), cache,
                        scoring_models=lambda name: CallableModel(judge, uri="python:judge"))
        assert engine.run({"q1": (SAMPLE, program())})["q1"].details == {"judge": "True"}
        cache.close()
    assert asked == ["Is it right?"] and engine.stats.scoring[JUDGE]["cache_hits"] == 1
