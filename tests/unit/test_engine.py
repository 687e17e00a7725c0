"""The request engine: dedupe, dependent requests, errors, cache and resume."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from pytest_tom.cache import ResponseCache
from pytest_tom.engine import Engine
from pytest_tom.models.base import Model
from pytest_tom.types import GenerationSettings, ItemResult, Message, Outcome, Question, Request, Response


class EchoModel(Model):
    """Answers with the last user message upper-cased; records every request it receives."""

    batch_size = 2

    def __init__(self, fp: str = "echo", fail_on: str | None = None, crash_after: int | None = None) -> None:
        self.fp = fp
        self.seen: list[str] = []
        self.fail_on = fail_on
        self.crash_after = crash_after

    def fingerprint(self) -> str:
        return self.fp

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            if self.crash_after is not None and len(self.seen) >= self.crash_after:
                raise KeyboardInterrupt
            self.seen.append(r.messages[-1].content)
            if self.fail_on and self.fail_on in r.messages[-1].content:
                out.append(Response(error="HTTP 500 after 3 retries"))
            else:
                out.append(Response(text=r.messages[-1].content.upper(), usage={"total_tokens": 3}))
        return out


def req(text: str) -> Request:
    return Request(messages=(Message("user", text),), settings=GenerationSettings(max_new_tokens=8))


def q(qid: str) -> Question:
    return Question(benchmark="t", qid=qid, marks=(), facets={"language": "en"}, payload=None)


def single(qid: str, prompt: str):
    def program():
        responses = yield [req(prompt)]
        ok = responses[0].text == prompt.upper()
        return ItemResult("t", qid, Outcome.CORRECT if ok else Outcome.INCORRECT, {}, parsed=responses[0].text)

    return q(qid), program()


def test_identical_requests_are_sent_once() -> None:
    model = EchoModel()
    engine = Engine(model)
    results = engine.run({"a": single("a", "same"), "b": single("b", "same"), "c": single("c", "other")})
    assert sorted(model.seen) == ["other", "same"]
    assert all(r.outcome is Outcome.CORRECT for r in results.values())
    assert engine.stats.requests == 3 and engine.stats.unique_requests == 2 and engine.stats.model_requests == 2


def test_a_request_can_depend_on_an_earlier_answer() -> None:
    def chained():
        first = yield [req("step one")]
        second = yield [req(f"given {first[0].text}, step two")]
        return ItemResult("t", "x", Outcome.CORRECT, {}, parsed=second[0].text)

    model = EchoModel()
    results = Engine(model).run({"x": (q("x"), chained())})
    assert model.seen == ["step one", "given STEP ONE, step two"]
    assert results["x"].parsed == "GIVEN STEP ONE, STEP TWO"
    assert len(results["x"].request_keys) == 2


def test_one_request_may_answer_many_items() -> None:
    model = EchoModel()
    programs = {f"q{i}": single(f"q{i}", "one shared prompt with 71 questions") for i in range(71)}
    Engine(model).run(programs)
    assert len(model.seen) == 1


def test_model_errors_become_item_errors_never_answers() -> None:
    closed = []

    def program():
        try:
            yield [req("boom please")]
            raise AssertionError("a program must never see an error response")
        finally:
            closed.append(True)

    results = Engine(EchoModel(fail_on="boom")).run({"x": (q("x"), program())})
    assert results["x"].outcome is Outcome.ERROR
    assert "HTTP 500" in results["x"].message
    assert closed == [True]


def test_cache_answers_a_second_run_and_never_stores_errors(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    Engine(EchoModel(fail_on="boom"), cache).run({"a": single("a", "hello"), "b": single("b", "boom")})
    model = EchoModel(fail_on="nothing")
    engine = Engine(model, cache)
    results = engine.run({"a": single("a", "hello"), "b": single("b", "boom")})
    assert model.seen == ["boom"]  # the error was retried, the answer came from the cache
    assert engine.stats.cache_hits == 1
    assert results["a"].outcome is Outcome.CORRECT


def test_cache_key_includes_model_fingerprint_and_prompt(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    Engine(EchoModel("v1"), cache).run({"a": single("a", "hello")})
    new_checkpoint = EchoModel("v2")
    Engine(new_checkpoint, cache).run({"a": single("a", "hello")})
    assert new_checkpoint.seen == ["hello"]
    changed_prompt = EchoModel("v1")
    Engine(changed_prompt, cache).run({"a": single("a", "hello!")})
    assert changed_prompt.seen == ["hello!"]


def test_decoding_settings_are_part_of_the_key() -> None:
    a = Request(messages=(Message("user", "x"),), settings=GenerationSettings(max_new_tokens=8))
    b = Request(messages=(Message("user", "x"),), settings=GenerationSettings(max_new_tokens=8, temperature=0.7))
    assert a.key != b.key
    assert a.key == Request(messages=(Message("user", "x"),), settings=GenerationSettings(max_new_tokens=8)).key


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    programs = lambda: {f"q{i}": single(f"q{i}", f"prompt {i}") for i in range(10)}  # noqa: E731
    with pytest.raises(KeyboardInterrupt):
        Engine(EchoModel(crash_after=6), cache).run(programs())
    assert len(cache) == 6
    model = EchoModel()
    engine = Engine(model, cache)
    results = engine.run(programs())
    assert len(model.seen) == 4 and engine.stats.cache_hits == 6
    assert all(r.outcome is Outcome.CORRECT for r in results.values())


def test_a_crashing_backend_keeps_what_it_answered(tmp_path: Path) -> None:
    class Crashy(EchoModel):
        def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
            yield 0, Response(text=requests[0].messages[-1].content.upper())
            raise RuntimeError("segfault in the kernel")

    cache = ResponseCache(tmp_path)
    results = Engine(Crashy(), cache).run({"a": single("a", "first"), "b": single("b", "second")})
    assert results["a"].outcome is Outcome.CORRECT
    assert results["b"].outcome is Outcome.ERROR and "segfault" in results["b"].message
    assert len(cache) == 1


def test_usage_is_summed() -> None:
    engine = Engine(EchoModel())
    engine.run({"a": single("a", "x"), "b": single("b", "y")})
    assert engine.stats.usage == {"total_tokens": 6}


def test_an_empty_yield_resumes_after_every_other_program_advanced() -> None:
    """Programs can wait one wave (FANToM batches all embeddings this way)."""
    order: list[str] = []

    def waiting(qid: str):
        responses = yield [req(qid)]
        order.append(f"{qid} answered")
        yield []
        order.append(f"{qid} resumed")
        return ItemResult("t", qid, Outcome.CORRECT, {}, parsed=responses[0].text)

    Engine(EchoModel()).run({"a": (q("a"), waiting("a")), "b": (q("b"), waiting("b"))})
    assert order == ["a answered", "b answered", "a resumed", "b resumed"]
