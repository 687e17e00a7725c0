"""The request engine: dedupe, dependent requests, errors, cache and resume, progress, scoring models."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import pytest_tom.engine.engine as engine_module
from pytest_tom.engine import Engine, ResponseCache
from pytest_tom.errors import TomCacheWarning
from pytest_tom.framework.base import Program
from pytest_tom.models.base import Model
from pytest_tom.record import Outcome, Record
from pytest_tom.request import GenerationSettings, Message, Request, Response
from pytest_tom.sample import Sample, Story


class EchoModel(Model):
    """Answers with the last user message upper-cased; records every request it receives."""

    batch_size = 2

    def __init__(self, fp: str = "echo", fail_on: str | None = None, crash_after: int | None = None) -> None:
        self.fp = fp
        self.seen: list[str] = []
        self.fail_on = fail_on
        self.crash_after = crash_after
        self.closed = False

    def fingerprint(self) -> str:
        return self.fp

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            if self.crash_after is not None and len(self.seen) >= self.crash_after:
                raise KeyboardInterrupt
            assert r.kind == "generate", "the model under test must never see a scoring request"
            self.seen.append(r.messages[-1].content)
            if self.fail_on and self.fail_on in r.messages[-1].content:
                out.append(Response(error="HTTP 500 after 3 retries"))
            else:
                out.append(Response(text=r.messages[-1].content.upper(), usage={"total_tokens": 3}))
        return out

    def close(self) -> None:
        self.closed = True


class VectorModel(Model):
    """A tiny scoring model: embeds a text as (length, number of vowels); can fail on a text."""

    batch_size = 256

    def __init__(self, name: str, fp: str | None = None, fail_on: str | None = None) -> None:
        self.uri = name
        self.fp = fp or f"vector:{name}"
        self.fail_on = fail_on
        self.seen: list[str] = []
        self.closed = False

    def fingerprint(self) -> str:
        return self.fp

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            assert r.kind == "embed"
            self.seen.append(r.text)
            if self.fail_on and self.fail_on in r.text:
                out.append(Response(error="embedder out of memory"))
            else:
                vowels = sum(ch in "AEIOUaeiou" for ch in r.text)
                out.append(Response(vector=(float(len(r.text)), float(vowels)), usage={"total_tokens": 100}))
        return out

    def close(self) -> None:
        self.closed = True


class Resolver:
    """Builds scoring models by name, remembering what it built (what `make_scoring_model` does for real)."""

    def __init__(self, **kw: Any) -> None:
        self.kw = kw
        self.built: list[VectorModel] = []

    def __call__(self, name: str) -> Model:
        model = VectorModel(name, **self.kw.get(name, {}))
        self.built.append(model)
        return model

    def model(self, name: str) -> VectorModel:
        """The last model built for `name`."""
        return [m for m in self.built if m.uri == name][-1]


def req(text: str) -> Request:
    return Request(messages=(Message("user", text),), settings=GenerationSettings(max_new_tokens=8))


def embed(text: str, model: str = "embed:a") -> Request:
    return Request(kind="embed", model=model, text=text)


def sample(qid: str) -> Sample[None]:
    return Sample(benchmark="t", id=qid, context=Story("s"), question="q", choices=(), gold="g", characters=(),
                  facets={"language": "en"}, marks=(), extra=None)


def record(qid: str, outcome: Outcome = Outcome.CORRECT, **kw: Any) -> Record:
    return Record("t", qid, outcome, {"language": "en"}, **kw)


def single(qid: str, prompt: str) -> tuple[Sample[None], Program]:
    def program() -> Program:
        responses = yield [req(prompt)]
        ok = responses[0].text == prompt.upper()
        return record(qid, Outcome.CORRECT if ok else Outcome.INCORRECT, parsed=responses[0].text)

    return sample(qid), program()


def scored(qid: str, prompt: str, models: Sequence[str] = ("embed:a",)) -> tuple[Sample[None], Program]:
    """Asks the model under test, then embeds its answer with each scoring model (FANToM's belief distance)."""

    def program() -> Program:
        answer = yield [req(prompt)]
        text = answer[0].text or ""
        vectors = yield [embed(text, m) for m in models]
        return record(qid, parsed=text, details={"vectors": [list(v.vector or ()) for v in vectors]})

    return sample(qid), program()


# -- planning, dedupe, dependent requests ------------------------------------------------------------------


def test_identical_requests_are_sent_once() -> None:
    model = EchoModel()
    engine = Engine(model)
    results = engine.run({"a": single("a", "same"), "b": single("b", "same"), "c": single("c", "other")})
    assert sorted(model.seen) == ["other", "same"]
    assert all(r.outcome is Outcome.CORRECT for r in results.values())
    assert engine.stats.requests == 3 and engine.stats.unique_requests == 2 and engine.stats.model_requests == 2
    assert engine.stats.questions == 3 and engine.stats.waves == 1


def test_a_request_can_depend_on_an_earlier_answer() -> None:
    def chained() -> Program:
        first = yield [req("step one")]
        second = yield [req(f"given {first[0].text}, step two")]
        return record("x", parsed=second[0].text)

    model = EchoModel()
    engine = Engine(model)
    results = engine.run({"x": (sample("x"), chained())})
    assert model.seen == ["step one", "given STEP ONE, step two"]
    assert results["x"].parsed == "GIVEN STEP ONE, STEP TWO"
    assert results["x"].request_keys == (req("step one").key, req("given STEP ONE, step two").key)
    assert engine.stats.waves == 2


def test_one_request_may_answer_many_items() -> None:
    model = EchoModel()
    programs = {f"q{i}": single(f"q{i}", "one shared prompt with 71 questions") for i in range(71)}
    results = Engine(model).run(programs)
    assert len(model.seen) == 1
    assert set(results) == set(programs)


def test_records_are_keyed_like_the_programs_whatever_their_sample_ids() -> None:
    results = Engine(EchoModel()).run({"suite-1::x": single("x", "p"), "suite-2::x": single("x", "p")})
    assert sorted(results) == ["suite-1::x", "suite-2::x"]
    assert results["suite-1::x"].sample_id == "x"


def test_a_program_that_asks_nothing_returns_its_record() -> None:
    def nothing() -> Program:
        return record("x", Outcome.UNPARSEABLE)
        yield []  # a generator all the same

    model = EchoModel()
    results = Engine(model).run({"x": (sample("x"), nothing())})
    assert results["x"].outcome is Outcome.UNPARSEABLE and results["x"].request_keys == ()
    assert model.seen == []


def test_an_empty_yield_resumes_after_every_other_program_advanced() -> None:
    """Programs can wait one wave (FANToM batches all embeddings this way)."""
    order: list[str] = []

    def waiting(qid: str) -> Program:
        responses = yield [req(qid)]
        order.append(f"{qid} answered")
        yield []
        order.append(f"{qid} resumed")
        return record(qid, parsed=responses[0].text)

    Engine(EchoModel()).run({"a": (sample("a"), waiting("a")), "b": (sample("b"), waiting("b"))})
    assert order == ["a answered", "b answered", "a resumed", "b resumed"]


# -- errors --------------------------------------------------------------------------------------------------


def test_model_errors_become_item_errors_never_answers() -> None:
    closed = []

    def program() -> Program:
        try:
            yield [req("boom please")]
            raise AssertionError("a program must never see an error response")
        finally:
            closed.append(True)

    engine = Engine(EchoModel(fail_on="boom"))
    results = engine.run({"x": (sample("x"), program())})
    rec = results["x"]
    assert rec.outcome is Outcome.ERROR and not rec.scored
    assert rec.message == "model error: HTTP 500 after 3 retries"
    assert rec.request_keys == (req("boom please").key,) and rec.parse_rate == 0.0
    assert rec.facets == {"language": "en"} and rec.sample_id == "x" and rec.benchmark == "t"
    assert closed == [True]
    assert engine.stats.errors == 1


def test_several_errors_are_counted_in_the_message() -> None:
    def program() -> Program:
        yield [req("boom 1"), req("fine"), req("boom 2")]
        raise AssertionError("unreachable")

    results = Engine(EchoModel(fail_on="boom")).run({"x": (sample("x"), program())})
    assert results["x"].message == "model error: HTTP 500 after 3 retries (and 1 more)"


def test_a_backend_that_answers_nothing_is_an_error() -> None:
    class Silent(EchoModel):
        def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
            return iter(())

    results = Engine(Silent()).run({"a": single("a", "x")})
    assert results["a"].outcome is Outcome.ERROR and "no answer" in results["a"].message


# -- cache and resume ------------------------------------------------------------------------------------------


def test_cache_answers_a_second_run_and_never_stores_errors(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    Engine(EchoModel(fail_on="boom"), cache).run({"a": single("a", "hello"), "b": single("b", "boom")})
    model = EchoModel(fail_on="nothing")
    engine = Engine(model, cache)
    results = engine.run({"a": single("a", "hello"), "b": single("b", "boom")})
    assert model.seen == ["boom"]  # the error was retried, the answer came from the cache
    assert engine.stats.cache_hits == 1 and engine.stats.model_requests == 1
    assert results["a"].outcome is Outcome.CORRECT and results["b"].outcome is Outcome.CORRECT
    assert engine.responses[req("hello").key].cached and not engine.responses[req("boom").key].cached


def test_cache_key_includes_model_fingerprint_and_prompt(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    Engine(EchoModel("v1"), cache).run({"a": single("a", "hello")})
    new_checkpoint = EchoModel("v2")
    Engine(new_checkpoint, cache).run({"a": single("a", "hello")})
    assert new_checkpoint.seen == ["hello"]
    changed_prompt = EchoModel("v1")
    Engine(changed_prompt, cache).run({"a": single("a", "hello!")})
    assert changed_prompt.seen == ["hello!"]
    same = EchoModel("v1")
    Engine(same, cache).run({"a": single("a", "hello")})
    assert same.seen == []


def test_decoding_settings_are_part_of_the_key() -> None:
    a = Request(messages=(Message("user", "x"),), settings=GenerationSettings(max_new_tokens=8))
    b = Request(messages=(Message("user", "x"),), settings=GenerationSettings(max_new_tokens=8, temperature=0.7))
    assert a.key != b.key
    assert a.key == Request(messages=(Message("user", "x"),), settings=GenerationSettings(max_new_tokens=8)).key


def test_keys_of_model_under_test_requests_are_unchanged_from_before_the_refactor() -> None:
    """Values computed with the pre-refactor code: old caches and reports stay valid."""
    chat = Request(messages=(Message("system", "sys"), Message("user", "hi")), settings=GenerationSettings(max_new_tokens=8))
    assert chat.key == "b39a57edfffe63f5d5f004aec40f9a0ac71fd3c061ffc8a1ae510e808027c866"
    ll = Request(messages=(Message("user", "q"),), settings=GenerationSettings(max_new_tokens=1), kind="loglikelihood",
                 choices=("A", "B"))
    assert ll.key == "061d7d9043d8cf7c7c437318cb9b558d56b98ee3db4e869febf67f389a35c0ba"
    # answer_labels / answer_format describe the prompt; they are not part of what the model sees
    described = Request(messages=chat.messages, settings=chat.settings, answer_labels=("A", "B"), answer_format="[[{}]]")
    assert described.key == chat.key


def test_embed_keys_name_the_scoring_model_and_the_text() -> None:
    assert embed("x", "embed:a").key != embed("x", "embed:b").key
    assert embed("x").key != embed("y").key
    assert embed("x").key == embed("x").key


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)

    def programs() -> dict[str, tuple[Sample[None], Program]]:
        return {f"q{i}": single(f"q{i}", f"prompt {i}") for i in range(10)}

    with pytest.raises(KeyboardInterrupt):
        Engine(EchoModel(crash_after=6), cache).run(programs())
    assert len(cache) == 6
    model = EchoModel()
    engine = Engine(model, cache)
    results = engine.run(programs())
    assert len(model.seen) == 4 and engine.stats.cache_hits == 6
    assert all(r.outcome is Outcome.CORRECT for r in results.values())


SIGTERM_SCRIPT = """
import os, signal, sys, time
from pathlib import Path
from pytest_tom.engine import Engine, ResponseCache
from pytest_tom.models.base import Model
from pytest_tom.record import Outcome, Record
from pytest_tom.request import GenerationSettings, Message, Request, Response
from pytest_tom.sample import Sample, Story

cache = ResponseCache(Path(sys.argv[1]))
write = cache._write

def slow_write(items):
    time.sleep(0.05)  # a slow disk: answers queue up behind the commit in progress
    return write(items)

cache._write = slow_write

class Killed(Model):
    batch_size = 1
    calls = 0

    def fingerprint(self):
        return "killed"

    def generate(self, requests):
        self.calls += 1
        if self.calls == 6:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        return [Response(text="x") for _ in requests]

def program(i):
    yield [Request(messages=(Message("user", f"p{i}"),), settings=GenerationSettings(max_new_tokens=8))]
    return Record("t", str(i), Outcome.CORRECT, {})

sample = Sample(benchmark="t", id="x", context=Story("s"), question="q", choices=(), gold="g", characters=(),
                facets={}, marks=(), extra=None)
Engine(Killed(), cache).run({str(i): (sample, program(i)) for i in range(10)})
print("the run went on after SIGTERM")
"""


def test_sigterm_ends_the_run_after_the_cache_has_every_answer(tmp_path: Path) -> None:
    """SIGTERM (a CI timeout) still kills the process, but only once the writer thread has written
    every answer the engine received, however slow the disk."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SIGTERM_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == -15, done.stdout + done.stderr
    assert "went on" not in done.stdout
    assert len(ResponseCache(tmp_path)) == 5


def test_a_crashing_backend_keeps_what_it_answered(tmp_path: Path) -> None:
    class Crashy(EchoModel):
        def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
            yield 0, Response(text=requests[0].messages[-1].content.upper())
            raise RuntimeError("segfault in the kernel")

    cache = ResponseCache(tmp_path)
    results = Engine(Crashy(), cache).run({"a": single("a", "first"), "b": single("b", "second")})
    assert results["a"].outcome is Outcome.CORRECT
    assert results["b"].outcome is Outcome.ERROR
    assert "backend crashed: RuntimeError: segfault in the kernel" in results["b"].message
    assert len(cache) == 1


def test_a_backend_answering_with_text_instead_of_responses_errors_each_request_once() -> None:
    class Strings(EchoModel):
        def generate(self, requests: Sequence[Request]) -> list[Response]:
            super().generate(requests)
            return ["[[B]]" for _ in requests]  # type: ignore[misc]

    model = Strings()
    engine = Engine(model)
    results = engine.run({f"q{i}": single(f"q{i}", f"p{i}") for i in range(5)})
    assert len(model.seen) == 5
    assert {r.message for r in results.values()} == {
        "model error: the backend answered with a str, not a pytest_tom.Response"}
    assert engine.stats.errors == 5


def test_a_cache_that_cannot_be_written_never_makes_the_engine_ask_twice(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache._conn.close()
    cache._conn = sqlite3.connect(f"{cache.path.as_uri()}?mode=ro", uri=True, isolation_level=None,
                                  check_same_thread=False)
    model = EchoModel()
    engine = Engine(model, cache)
    with pytest.warns(TomCacheWarning) as caught:
        first = engine.run({"a": single("a", "x"), "b": single("b", "y")})
        second = engine.run({"c": single("c", "x"), "d": single("d", "z")})
    assert len(caught) == 1
    assert sorted(model.seen) == ["x", "y", "z"]
    assert all(r.outcome is Outcome.CORRECT for r in [*first.values(), *second.values()])
    assert engine.stats.cache_hits == 1 and len(cache) == 0


def test_no_cache_still_answers() -> None:
    model = EchoModel()
    engine = Engine(model, None)
    engine.run({"a": single("a", "x")})
    engine.run({"a": single("a", "x")})
    assert model.seen == ["x", "x"] and engine.stats.cache_hits == 0


# -- statistics and progress -------------------------------------------------------------------------------------


def test_usage_is_summed() -> None:
    engine = Engine(EchoModel())
    engine.run({"a": single("a", "x"), "b": single("b", "y")})
    assert engine.stats.usage == {"total_tokens": 6}


def test_stats_accumulate_over_runs_and_serialise() -> None:
    engine = Engine(EchoModel(fail_on="boom"))
    engine.run({"a": single("a", "x"), "b": single("b", "x")})
    engine.run({"c": single("c", "boom")})
    d = engine.stats.to_dict()
    assert {k: d[k] for k in ("questions", "requests", "unique_requests", "cache_hits", "model_requests", "errors", "waves")} == {
        "questions": 3, "requests": 3, "unique_requests": 2, "cache_hits": 0, "model_requests": 2, "errors": 1, "waves": 2}
    assert d["usage"] == {"total_tokens": 3} and "scoring" not in d


def test_batch_size_is_handed_to_the_model_once() -> None:
    model = EchoModel()
    Engine(model, batch_size=7)
    assert model.batch_size == 7
    untouched = EchoModel()
    Engine(untouched)
    assert untouched.batch_size == 2


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Replace the engine's clock: tests move it by hand, so no assertion depends on real time."""
    now = [0.0]
    monkeypatch.setattr(engine_module, "time", SimpleNamespace(monotonic=lambda: now[0], perf_counter=lambda: now[0]))
    return now


def test_progress_reports_each_answer_of_a_wave(frozen_clock: list[float]) -> None:
    calls: list[tuple[int, int]] = []
    model = EchoModel()
    model.batch_size = 100
    Engine(model, progress=lambda done, total, **_: calls.append((done, total))).run(
        {f"q{i}": single(f"q{i}", f"p{i}") for i in range(600)})
    # every answer, even while the clock stands still: the callback throttles its own drawing
    assert calls == [(done, 600) for done in range(601)]


def test_progress_is_current_after_each_batch(frozen_clock: list[float], tmp_path: Path) -> None:
    class Ticking(EchoModel):
        def generate(self, requests: Sequence[Request]) -> list[Response]:
            frozen_clock[0] += 1.0  # each batch takes a (fake) second
            return super().generate(requests)

    cache = ResponseCache(tmp_path)
    calls: list[tuple[int, int]] = []
    engine = Engine(Ticking(), cache, progress=lambda done, total, **_: calls.append((done, total)))
    engine.run({f"q{i}": single(f"q{i}", f"p{i}") for i in range(6)})
    # batches of 2 arrive a second apart: the count is current after each one, never a batch late
    assert calls == [(0, 6), (1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6)]
    assert len(cache) == 6
    assert engine.stats.model_seconds == 3.0


def test_each_answer_is_stored_while_the_model_works_on_the_next(tmp_path: Path) -> None:
    """No flush and no timer: the writer thread commits an answer while the model computes the next one,
    so a run killed in the middle of a request has every earlier answer on disk."""
    cache = ResponseCache(tmp_path)
    stored_when_asked: list[int] = []

    class Watching(EchoModel):
        batch_size = 1

        def generate(self, requests: Sequence[Request]) -> list[Response]:
            deadline = time.monotonic() + 30
            while len(cache) < len(self.seen) and time.monotonic() < deadline:
                time.sleep(0.001)
            stored_when_asked.append(len(cache))
            return super().generate(requests)

    Engine(Watching(), cache).run({f"q{i}": single(f"q{i}", f"p{i}") for i in range(6)})
    assert stored_when_asked == [0, 1, 2, 3, 4, 5]
    assert len(cache) == 6


def test_progress_counts_answers_and_shows_errors_and_the_backends_retries_beside_them() -> None:
    class Retrying(EchoModel):
        def __init__(self) -> None:
            super().__init__(fail_on="boom")
            self.stats = {"retries": 5}  # from an earlier pass: not this one's

        def generate(self, requests: Sequence[Request]) -> list[Response]:
            self.stats["retries"] += len(requests)  # every request needed a second attempt
            return super().generate(requests)

    calls: list[tuple[int, int, int, int]] = []
    Engine(Retrying(), progress=lambda d, t, errors=0, retries=0: calls.append((d, t, errors, retries))).run(
        {q: single(q, q) for q in ("a", "boom", "b", "c")})
    # a failed request is an error beside the count, never an answer
    assert calls == [(0, 4, 0, 0), (1, 4, 0, 2), (1, 4, 1, 2), (2, 4, 1, 4), (3, 4, 1, 4)]


def test_cache_hits_make_no_progress_calls(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    Engine(EchoModel(), cache).run({"a": single("a", "x")})
    calls: list[tuple[int, int]] = []
    Engine(EchoModel(), cache, progress=lambda d, t, **_: calls.append((d, t))).run({"a": single("a", "x")})
    assert calls == []


# -- scoring models ------------------------------------------------------------------------------------------------


def test_scoring_requests_go_to_the_scoring_model_they_name() -> None:
    model, resolve = EchoModel(), Resolver()
    results = Engine(model, scoring_models=resolve).run({"a": scored("a", "hello", ("embed:a", "embed:b"))})
    assert model.seen == ["hello"]
    assert resolve.model("embed:a").seen == ["HELLO"] and resolve.model("embed:b").seen == ["HELLO"]
    assert results["a"].details == {"vectors": [[5.0, 2.0], [5.0, 2.0]]}
    assert [m.uri for m in resolve.built] == ["embed:a", "embed:b"]  # built once each, on first use


def test_scoring_requests_are_deduplicated_like_any_other() -> None:
    resolve = Resolver()
    engine = Engine(EchoModel(), scoring_models=resolve)
    engine.run({"a": scored("a", "hi"), "b": scored("b", "hi"), "c": scored("c", "ho")})
    assert sorted(resolve.model("embed:a").seen) == ["HI", "HO"]
    assert engine.stats.scoring["embed:a"]["requests"] == 3 and engine.stats.scoring["embed:a"]["unique_requests"] == 2


def test_each_scoring_model_has_its_own_cache_entries_and_fingerprint(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    first = Resolver()
    programs = {"a": scored("a", "same", ("embed:a",)), "b": scored("b", "same", ("embed:b",))}
    Engine(EchoModel(), cache, scoring_models=first).run(programs)
    # one answer of the model under test, one vector per scoring model for the same text
    assert len(cache) == 3
    assert first.model("embed:a").seen == ["SAME"] and first.model("embed:b").seen == ["SAME"]

    again = Resolver()
    engine = Engine(EchoModel(), cache, scoring_models=again)
    results = engine.run({"a": scored("a", "same", ("embed:a",)), "b": scored("b", "same", ("embed:b",))})
    assert again.model("embed:a").seen == [] and again.model("embed:b").seen == []
    assert engine.stats.scoring["embed:a"]["cache_hits"] == 1 and engine.stats.scoring["embed:b"]["cache_hits"] == 1
    assert results["a"].details == {"vectors": [[4.0, 2.0]]}

    # a new embedder checkpoint under the same name is never served the old vectors
    changed = Resolver(**{"embed:a": {"fp": "vector:embed:a:v2"}})
    Engine(EchoModel(), cache, scoring_models=changed).run({"a": scored("a", "same", ("embed:a",)),
                                                             "b": scored("b", "same", ("embed:b",))})
    assert changed.model("embed:a").seen == ["SAME"] and changed.model("embed:b").seen == []
    assert len(cache) == 4


def test_scoring_requests_are_counted_apart_from_the_model_under_test() -> None:
    model, resolve = EchoModel(), Resolver()
    engine = Engine(model, scoring_models=resolve)
    engine.run({"a": scored("a", "x", ("embed:a",)), "b": scored("b", "x", ("embed:a",)), "c": scored("c", "y", ("embed:b",))})
    s = engine.stats
    assert (s.requests, s.unique_requests, s.model_requests, s.cache_hits, s.errors) == (3, 2, 2, 0, 0)
    assert s.usage == {"total_tokens": 6}  # the embedder's token counts are not the model under test's spend
    a = s.scoring["embed:a"]
    assert {k: a[k] for k in ("requests", "unique_requests", "cache_hits", "model_requests", "errors")} == {
        "requests": 2, "unique_requests": 1, "cache_hits": 0, "model_requests": 1, "errors": 0}
    assert s.scoring["embed:b"]["model_requests"] == 1
    d = s.to_dict()
    assert d["scoring"]["embed:a"]["requests"] == 2 and isinstance(d["scoring"]["embed:a"]["requests"], int)
    assert d["requests"] == 3


def test_request_keys_and_the_replay_table_hold_only_the_model_under_test() -> None:
    engine = Engine(EchoModel(), scoring_models=Resolver())
    results = engine.run({"a": scored("a", "hello", ("embed:a", "embed:b"))})
    assert results["a"].request_keys == (req("hello").key,)
    assert set(engine.responses) == {req("hello").key}
    assert engine.responses[req("hello").key].text == "HELLO"


def test_scoring_models_make_no_progress_calls(frozen_clock: list[float]) -> None:
    calls: list[tuple[int, int]] = []
    Engine(EchoModel(), progress=lambda d, t, **_: calls.append((d, t)), scoring_models=Resolver()).run({"a": scored("a", "x")})
    assert calls == [(0, 1), (1, 1)]  # the model under test's one request, nothing for the embedding


def test_a_scoring_model_error_is_an_item_error(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    resolve = Resolver(**{"embed:a": {"fail_on": "BAD"}})
    engine = Engine(EchoModel(), cache, scoring_models=resolve)
    results = engine.run({"ok": scored("ok", "good"), "bad": scored("bad", "bad")})
    assert results["ok"].outcome is Outcome.CORRECT
    bad = results["bad"]
    assert bad.outcome is Outcome.ERROR and bad.message == "model error: embedder out of memory"
    assert bad.request_keys == (req("bad").key,)
    assert engine.stats.scoring["embed:a"]["errors"] == 1 and engine.stats.errors == 0
    assert len(cache) == 3  # two answers, one vector; the error is not stored


def test_a_scoring_model_that_cannot_be_built_fails_its_requests_not_the_run() -> None:
    def broken(name: str) -> Model:
        raise RuntimeError("sentence-transformers is not installed")

    model = EchoModel()
    engine = Engine(model, scoring_models=broken)
    results = engine.run({"a": scored("a", "x"), "b": single("b", "y")})
    assert results["a"].outcome is Outcome.ERROR
    assert results["a"].message == "model error: embed:a: RuntimeError: sentence-transformers is not installed"
    assert results["b"].outcome is Outcome.CORRECT
    assert results["a"].request_keys == (req("x").key,)


def test_requests_of_a_scoring_model_that_cannot_be_built_are_counted_as_errors() -> None:
    def broken(name: str) -> Model:
        raise RuntimeError("no embedder")

    engine = Engine(EchoModel(), scoring_models=broken)
    engine.run({"a": scored("a", "x"), "b": scored("b", "y")})
    s = engine.stats.scoring["embed:a"]
    assert s["requests"] == 2 and s["unique_requests"] == 2 and s["errors"] == 2


def test_without_a_resolver_a_scoring_request_is_an_error() -> None:
    results = Engine(EchoModel()).run({"a": scored("a", "x")})
    assert results["a"].outcome is Outcome.ERROR and "no scoring model 'embed:a' is configured" in results["a"].message


def test_close_scoring_models_releases_what_the_engine_built() -> None:
    model, resolve = EchoModel(), Resolver()
    engine = Engine(model, scoring_models=resolve)
    engine.run({"a": scored("a", "x", ("embed:a", "embed:b"))})
    engine.close_scoring_models()
    assert all(m.closed for m in resolve.built) and len(resolve.built) == 2
    assert not model.closed  # the model under test belongs to its fixture
    # a later run builds the scoring model again instead of using a closed one
    engine.run({"b": scored("b", "y", ("embed:a",))})
    assert len(resolve.built) == 3 and resolve.built[-1].seen == ["Y"] and not resolve.built[-1].closed
    engine.close_scoring_models()
    engine.close_scoring_models()  # idempotent


def test_model_for_and_fingerprint() -> None:
    model, resolve = EchoModel("echo-fp"), Resolver()
    engine = Engine(model, scoring_models=resolve)
    assert engine.model_for("") is model and engine.fingerprint() == "echo-fp"
    assert engine.fingerprint("embed:a") == "vector:embed:a"
    assert engine.model_for("embed:a") is resolve.model("embed:a") and len(resolve.built) == 1
    with pytest.raises(LookupError, match="no scoring model 'embed:x' is configured"):
        Engine(model).model_for("embed:x")


def test_a_record_keeps_the_text_of_its_first_request_as_its_prompt() -> None:
    def chat() -> Program:
        first = yield [Request(messages=(Message("system", "be brief"), Message("user", "where is <the> ball?")))]
        yield [req("follow-up")]
        return record("x", parsed=first[0].text)

    results = Engine(EchoModel()).run({"x": (sample("x"), chat()), "y": single("y", "alone")})
    assert results["x"].prompt == "[system]\nbe brief\n\n[user]\nwhere is <the> ball?"
    assert results["y"].prompt == "alone"  # a lone message is itself
    assert Record.from_dict(results["x"].to_dict()).prompt == results["x"].prompt  # it travels with the record
    assert "prompt" not in record("z").to_dict()  # a record with none adds no field
