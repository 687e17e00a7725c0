"""The `openai:` backend against a local fault-injecting server (127.0.0.1 only).

No test here sleeps through a back-off or measures time: the backend's clock
(`sleep`, `random`, `now`) is replaced by `FakeClock`, which records the waits
asked for and returns at once, and the server holds requests in flight until a
test releases them instead of answering after a delay.
"""

from __future__ import annotations

import asyncio
import email.utils
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_tom.engine import Engine, ResponseCache
from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.models import make_model
from pytest_tom.record import Outcome, Record
from pytest_tom.request import GenerationSettings, Message, Request, Response
from pytest_tom.sample import Sample, Story

pytest.importorskip("openai")

from helpers.fault_server import (  # noqa: E402
    CONTENT_FILTERED,
    DROP,
    HOLD,
    LOGIN_PAGE,
    MALFORMED,
    NO_MESSAGE,
    OK,
    Action,
    FaultServer,
    fake_logprob,
    finish,
    status,
)

KEY = "sk-test-7f0c2b9e4d1a8c3f5e6b0a9d"
NOW = 1_700_000_000.0


@pytest.fixture(autouse=True)
def _no_real_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


class FakeClock:
    """Stands in for the backend's `sleep`, `random` and `now`: records every wait asked for, sleeps none."""

    def __init__(self, jitter: float | list[float] = 0.5, now: float = NOW) -> None:
        self.waits: list[float] = []
        self._jitter = list(jitter) if isinstance(jitter, list) else [jitter]
        self._draws = 0
        self.t = now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)  # still a suspension point, like a real sleep

    def random(self) -> float:
        value = self._jitter[self._draws % len(self._jitter)]
        self._draws += 1
        return value

    def now(self) -> float:
        return self.t


def install(model, clock: FakeClock):  # type: ignore[no-untyped-def]
    model.sleep, model.random, model.now = clock.sleep, clock.random, clock.now
    return model


def req(text: str, *, system: str | None = "Be brief.", **kw) -> Request:  # type: ignore[no-untyped-def]
    msgs = ((Message("system", system),) if system else ()) + (Message("user", text),)
    settings = kw.pop("settings", None) or GenerationSettings(max_new_tokens=16)
    return Request(messages=msgs, settings=settings, **kw)


def model_for(server: FaultServer, clock: FakeClock | None = None, **opts: object):  # type: ignore[no-untyped-def]
    """An `openai:` model for `server` on a fake clock (a fresh one unless given)."""
    options = {"base_url": server.base_url, "backoff": 0.01, "max_retries": 3, "timeout": 5, **opts}
    query = "&".join(f"{k}={v}" for k, v in options.items())
    return install(make_model(f"openai:fake-model?{query}"), clock or FakeClock())


def attempts(server: FaultServer, needle: str) -> int:
    return sum(needle in r.prompt for r in server.received)


def wait_until(condition: Callable[[], bool], what: str, limit: float = 30.0) -> None:
    """Poll until `condition` holds; the limit only turns a hang into a failure, it is never a measurement."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.005)


# -- configuration -------------------------------------------------------------------------------


class TestConfig:
    def test_a_key_in_the_uri_is_refused(self) -> None:
        with pytest.raises(TomConfigError, match="never put an API key in the URI"):
            make_model(f"openai:gpt-4o-mini?api_key={KEY}")

    def test_the_hosted_api_needs_a_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("OPENAI_API_KEY")
        with pytest.raises(TomConfigError, match=r"\$OPENAI_API_KEY is not set"):
            make_model("openai:gpt-4o-mini")

    def test_a_named_key_variable_must_exist(self) -> None:
        with pytest.raises(TomConfigError, match=r"\$MY_GATEWAY_KEY is not set"):
            make_model("openai:m?base_url=http://127.0.0.1:9/v1&api_key_env=MY_GATEWAY_KEY")

    def test_a_local_server_needs_no_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("OPENAI_API_KEY")
        assert make_model("openai:m?base_url=http://127.0.0.1:9/v1").fingerprint().startswith("openai:")

    def test_fingerprint_is_server_model_endpoint_and_never_the_key(self) -> None:
        a = make_model("openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1/")
        assert a.fingerprint() == "openai:v1:chat:http://127.0.0.1:8000/v1:gpt-4o-mini:native"
        assert a.fingerprint() == make_model("openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1&concurrency=3&timeout=9").fingerprint()
        others = {
            make_model("openai:gpt-4o?base_url=http://127.0.0.1:8000/v1").fingerprint(),
            make_model("openai:gpt-4o-mini?base_url=http://127.0.0.1:8001/v1").fingerprint(),
            make_model("openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1&endpoint=completions").fingerprint(),
            make_model("openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1&system=fold").fingerprint(),
        }
        assert a.fingerprint() not in others and len(others) == 4
        assert KEY not in repr(a.describe()) and KEY not in a.fingerprint()

    def test_base_url_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:7777/v1")
        assert make_model("openai:m").describe()["base_url"] == "http://127.0.0.1:7777/v1"

    def test_missing_sdk_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "openai", None)
        with pytest.raises(TomDependencyError, match=r"pip install 'pytest-tom\[openai\]'"):
            make_model("openai:m?base_url=http://127.0.0.1:9/v1")

    def test_chat_template_only_for_completions(self, tmp_path: Path) -> None:
        t = tmp_path / "t.jinja"
        t.write_text("{{ messages[0]['content'] }}")
        with pytest.raises(TomConfigError, match="endpoint=completions"):
            make_model(f"openai:m?base_url=http://127.0.0.1:9/v1&chat_template={t}")

    def test_concurrency_is_the_batch_size(self) -> None:
        m = make_model("openai:m?base_url=http://127.0.0.1:9/v1&concurrency=5")
        assert m.batch_size == 5 and m.describe()["batch_size"] == 5 and m.describe()["concurrency"] == 5
        default = make_model("openai:m?base_url=http://127.0.0.1:9/v1")
        assert default.batch_size == 32 and default.describe()["concurrency_start"] == 4
        for bad in ("concurrency=0", "concurrency_start=0"):
            with pytest.raises(TomConfigError, match="concurrency and concurrency_start must be at least 1"):
                make_model(f"openai:m?base_url=http://127.0.0.1:9/v1&{bad}")

    def test_the_engine_batch_size_overrides_concurrency(self) -> None:
        m = make_model("openai:m?base_url=http://127.0.0.1:9/v1&concurrency=5")
        Engine(m, None, batch_size=3)
        assert m.batch_size == 3 and m.describe()["batch_size"] == 3 and m.describe()["concurrency"] == 3


# -- the clock: Retry-After, exponential back-off, jitter ------------------------------------------


def test_retry_after_header_forms() -> None:
    from pytest_tom.models.openai import retry_after_seconds

    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": email.utils.formatdate(NOW + 30, usegmt=True)}, now=NOW) == 30.0
    assert retry_after_seconds({"retry-after": email.utils.formatdate(NOW - 30, usegmt=True)}, now=NOW) == 0.0
    assert retry_after_seconds({"retry-after": "-3"}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_doubles_is_capped_and_jittered_to_50_to_100_percent() -> None:
    from pytest_tom.models.openai import backoff_delay

    assert [backoff_delay(a, first=1.0, cap=60.0, jitter=1.0) for a in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert [backoff_delay(a, first=1.0, cap=5.0, jitter=0.0) for a in range(5)] == [0.5, 1.0, 2.0, 2.5, 2.5]
    assert backoff_delay(2, first=0.5, cap=60.0, jitter=0.5) == 2.0 * 0.75


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"Retry-After": "1"}, 1.0), ({"retry-after-ms": "250"}, 0.25),
     ({"Retry-After": email.utils.formatdate(NOW + 7, usegmt=True)}, 7.0)],
    ids=["seconds", "milliseconds", "http-date"],
)
def test_retry_after_is_honoured(headers: dict[str, str], expected: float) -> None:
    clock = FakeClock()
    with FaultServer(lambda r: status(429, headers=headers) if r.attempt == 0 else OK) as server:
        m = model_for(server, clock, backoff=5)  # exponential back-off would ask for 2.5-5 s
        out = m.generate([req("limited")])
    assert out[0].text == "[[A]]"
    assert clock.waits == [expected] and m.waits == [expected]
    assert attempts(server, "limited") == 2 and m.describe()["stats"]["http_429"] == 1


def test_retry_after_is_capped() -> None:
    clock = FakeClock()
    with FaultServer(lambda r: status(503, retry_after="3600") if r.attempt == 0 else OK) as server:
        m = model_for(server, clock, max_retry_after=0.2)
        assert m.generate([req("x")])[0].ok
    assert clock.waits == [0.2]


def test_exponential_backoff_is_capped() -> None:
    clock = FakeClock(jitter=0.0)
    with FaultServer(lambda r: status(500) if r.attempt < 6 else OK) as server:
        m = model_for(server, clock, backoff=1, max_backoff=5, max_retries=6)
        assert m.generate([req("x")])[0].text == "[[A]]"
    # min(5, 1 * 2**attempt) at the 50% end of the jitter
    assert clock.waits == [0.5, 1.0, 2.0, 2.5, 2.5, 2.5]
    assert m.describe()["stats"]["retries"] == 6 and attempts(server, "x") == 7


def test_jitter_spans_half_to_all_of_the_backoff() -> None:
    clock = FakeClock(jitter=[0.0, 0.5, 0.999])
    with FaultServer(lambda r: status(502) if r.attempt < 3 else OK) as server:
        m = model_for(server, clock, backoff=2, max_backoff=60, max_retries=3)
        assert m.generate([req("x")])[0].ok
    assert clock.waits == [2 * 0.5, 4 * 0.75, 8 * (0.5 + 0.999 / 2)]


def test_the_default_jitter_source_stays_within_bounds() -> None:
    clock = FakeClock()
    with FaultServer(lambda r: status(500) if r.attempt < 5 else OK) as server:
        m = make_model(f"openai:fake-model?base_url={server.base_url}&backoff=1&max_backoff=4&max_retries=5")
        m.sleep = clock.sleep  # the real random source, a fake sleep
        assert m.generate([req("x")])[0].ok
    bases = [1, 2, 4, 4, 4]
    assert len(clock.waits) == 5
    assert all(base / 2 <= w < base for w, base in zip(clock.waits, bases, strict=True)), clock.waits


# -- what is sent ----------------------------------------------------------------------------------


def test_settings_seed_and_stop_are_passed_through() -> None:
    with FaultServer() as server:
        m = model_for(server)
        s = GenerationSettings(max_new_tokens=7, temperature=0.6, top_p=0.9, seed=123, stop=("\n\n", "###"))
        out = m.generate([req("q", settings=s), req("greedy")])
        assert [r.text for r in out] == ["[[A]]", "[[A]]"]
        sent = {r.prompt.split("\n")[-1]: r.body for r in server.received}
        assert sent["q"] == {
            "model": "fake-model", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "q"}],
            "max_tokens": 7, "temperature": 0.6, "top_p": 0.9, "seed": 123, "stop": ["\n\n", "###"],
        }
        assert "seed" not in sent["greedy"] and "stop" not in sent["greedy"] and sent["greedy"]["temperature"] == 0.0
        assert server.received[0].headers["authorization"] == f"Bearer {KEY}"


def test_max_completion_tokens_and_system_folding() -> None:
    with FaultServer() as server:
        model_for(server, max_tokens_param="max_completion_tokens", system="fold").generate([req("q")])
        body = server.received[0].body
        assert body["max_completion_tokens"] == 16 and "max_tokens" not in body
        assert body["messages"] == [{"role": "user", "content": "Be brief.\n\nq"}]


def test_completions_endpoint_renders_plain_or_with_a_template_file(tmp_path: Path) -> None:
    template = tmp_path / "chatml.jinja"
    template.write_text(
        "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    with FaultServer() as server:
        model_for(server, endpoint="completions").generate([req("q")])
        model_for(server, endpoint="completions", chat_template=template, bos_token="<s>").generate([req("q")])
        prompts = [r.body["prompt"] for r in server.received]
        assert prompts == ["Be brief.\n\nq", "<s><|system|>Be brief.\n<|user|>q\n<|assistant|>"]
        assert all(r.path == "/v1/completions" for r in server.received)


def test_generation_prompt_false_renders_a_template_file_without_the_header(tmp_path: Path) -> None:
    template = tmp_path / "chatml.jinja"
    template.write_text(
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    with FaultServer() as server:
        off = model_for(server, endpoint="completions", chat_template=template, generation_prompt="false")
        on = model_for(server, endpoint="completions", chat_template=template)
        off.generate([req("q")])
        assert server.received[0].body["prompt"] == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
        assert off.describe()["chat_template"]["generation_prompt"] is False
        assert off.fingerprint() != on.fingerprint()
        for bad in ({}, {"endpoint": "completions"}):
            with pytest.raises(TomConfigError, match="generation_prompt=false"):
                model_for(server, generation_prompt="false", **bad)


def test_usage_is_reported_and_summed_by_the_engine(tmp_path: Path) -> None:
    with FaultServer() as server:
        m = model_for(server)
        cache = ResponseCache(tmp_path / "c")
        engine = Engine(m, cache)
        engine.run(programs([f"question {i}" for i in range(5)]))
        cache.close()
        # the fake server counts words: "Be brief.\nquestion i" -> 4 prompt words, "[[A]]" -> 1
        assert engine.stats.usage == {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
        assert m.describe()["usage"] == engine.stats.usage
        assert m.describe()["system_fingerprints"] == ["fp_fault"]


# -- retries and timeouts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "counter"),
    [(status(500), "http_5xx"), (status(502), "http_5xx"), (DROP, "connection_errors"), (MALFORMED, "malformed"),
     (status(408), None), (LOGIN_PAGE, "malformed"), (NO_MESSAGE, "malformed")],
    ids=["500", "502", "dropped", "malformed-json", "408", "html-page", "no-message"],
)
def test_transient_faults_are_retried(fault: Action, counter: str | None) -> None:
    clock = FakeClock(jitter=0.5)
    with FaultServer(lambda r: fault if "flaky" in r.prompt and r.attempt < 2 else OK) as server:
        m = model_for(server, clock)
        out = m.generate([req("flaky"), req("fine")])
    assert [r.text for r in out] == ["[[A]]", "[[A]]"]
    assert attempts(server, "flaky") == 3 and attempts(server, "fine") == 1
    stats = m.describe()["stats"]
    assert stats["retries"] == 2 and stats["errors"] == 0
    if counter:
        assert stats[counter] == 2
    assert clock.waits == [0.01 * 0.75, 0.02 * 0.75]  # backoff=0.01, doubled, at the jitter's midpoint


@pytest.mark.parametrize(
    ("fault", "message"),
    [(status(500), "HTTP 500"), (DROP, "connection to"), (MALFORMED, "malformed response"), (status(429), "HTTP 429"),
     (LOGIN_PAGE, "malformed response"), (NO_MESSAGE, "malformed response")],
    ids=["500", "dropped", "malformed-json", "429", "html-page", "no-message"],
)
def test_exhausted_retries_are_errors_never_answers(fault: Action, message: str) -> None:
    clock = FakeClock()
    with FaultServer(lambda r: fault if "doomed" in r.prompt else OK) as server:
        m = model_for(server, clock, max_retries=2)
        out = m.generate([req("doomed"), req("fine")])
    assert out[0].text is None and out[0].error is not None
    assert message in out[0].error and "gave up after 3 attempts" in out[0].error
    assert out[1].text == "[[A]]"
    assert attempts(server, "doomed") == 3 and len(clock.waits) == 2
    assert m.describe()["stats"]["errors"] == 1


@pytest.mark.parametrize(("fault", "got"), [
    (LOGIN_PAGE, "got text/html: \"<!DOCTYPE html> <html><head><title>Sign in - Corporate Proxy</title>"),
    (NO_MESSAGE, "got a choice without message (finish_reason='stop')"),
], ids=["html-page", "no-message"])
def test_a_body_that_is_no_completion_is_malformed_with_a_clear_message(fault: Action, got: str) -> None:
    with FaultServer(lambda r: fault) as server:
        m = model_for(server, FakeClock(), max_retries=2)
        out = m.generate([req("q")])[0]
    assert out.text is None and out.error is not None
    assert out.error.startswith(f"malformed response from {server.base_url}: expected JSON with choices[0].message.content, {got}")
    assert out.error.endswith("(gave up after 3 attempts)") and "AttributeError" not in out.error
    assert len(server.received) == 3
    stats = m.describe()["stats"]
    assert (stats["malformed"], stats["retries"], stats["errors"]) == (3, 2, 1)


@pytest.mark.parametrize(("fault", "message", "counter"), [
    (CONTENT_FILTERED, "content filter: {url} withheld the answer (finish_reason='content_filter', no text)", "content_filter"),
    (finish("", "content_filter"), "content filter: {url} withheld the answer", "content_filter"),
    (finish("", "stop"), "empty completion from {url} (finish_reason='stop'): the model ended its answer at once", "empty"),
    (finish("", "length"), "empty completion from {url} (finish_reason='length'): the token budget (max_tokens=16)", "empty"),
], ids=["filtered-null", "filtered-empty", "empty-stop", "empty-length"])
def test_a_filtered_or_empty_completion_is_an_error_asked_once_and_never_cached(
    fault: Action, message: str, counter: str, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "cache")
    with FaultServer(lambda r: fault if "withheld" in r.prompt else OK) as server:
        for run in (1, 2):
            m = model_for(server, FakeClock(), max_retries=3)
            results = Engine(m, cache).run(programs(["withheld", "fine"]))
            assert results["q0"].outcome is Outcome.ERROR and results["q1"].outcome is Outcome.CORRECT
            assert message.format(url=server.base_url) in results["q0"].message
            assert attempts(server, "withheld") == run, "not retried within a run, asked again by the next"
            assert attempts(server, "fine") == 1, "the answer is cached"
            stats = m.describe()["stats"]
            assert (stats[counter], stats["retries"], stats["errors"]) == (1, 0, 1)
    assert len(cache) == 1
    cache.close()


def test_client_errors_are_not_retried() -> None:
    clock = FakeClock()
    with FaultServer(lambda r: status(400, body='{"error": {"message": "unknown parameter: seed"}}')) as server:
        out = model_for(server, clock).generate([req("bad")])
    assert out[0].error and "HTTP 400" in out[0].error and "unknown parameter: seed" in out[0].error
    assert len(server.received) == 1 and clock.waits == []


def test_timeouts_are_retried_then_reported() -> None:
    # A held request never answers within the client's timeout, however slow the machine is.
    clock = FakeClock()
    with FaultServer(lambda r: HOLD if "stuck" in r.prompt or r.attempt == 0 else OK) as server:
        m = model_for(server, clock, timeout=0.3, max_retries=1)
        out = m.generate([req("stuck"), req("held once")])
    assert out[0].error and "timed out after 0.6s" in out[0].error  # the retry waited twice as long
    assert out[1].text == "[[A]]"
    assert m.describe()["stats"]["timeouts"] == 3 and len(clock.waits) == 2


def test_the_key_never_appears_in_errors_even_when_the_server_echoes_it() -> None:
    def echo_auth(r):  # type: ignore[no-untyped-def]
        return status(401, body='{"error": {"message": "Incorrect API key provided: ' + r.headers["authorization"] + '"}}')

    with FaultServer(echo_auth) as server:
        m = model_for(server)
        out = m.generate([req("who am i")])
        assert server.received[0].headers["authorization"].endswith(KEY)
        assert out[0].error and "HTTP 401" in out[0].error and "[redacted]" in out[0].error
        assert KEY not in out[0].error and KEY not in repr(m.describe()) and KEY not in m.fingerprint()


# -- requests in flight and streaming ------------------------------------------------------------


def _generate_in_background(model, requests: list[Request]) -> tuple[threading.Thread, list[Response]]:  # type: ignore[no-untyped-def]
    out: list[Response] = []
    thread = threading.Thread(target=lambda: out.extend(model.generate(requests)), daemon=True)
    thread.start()
    return thread, out


def _assert_in_flight_limit(server: FaultServer, model, limit: int, n: int = 24) -> None:  # type: ignore[no-untyped-def]
    thread, out = _generate_in_background(model, [req(f"q{i}") for i in range(n)])
    try:
        wait_until(lambda: server.in_flight == limit, f"{limit} requests in flight")
        # The client now waits for an answer before it sends more; give one that ignores its
        # limit a moment to overshoot (this pause can only expose a bug, never fail a correct client).
        time.sleep(0.05)
        assert len(server.received) == limit
    finally:
        server.release()
        thread.join(timeout=60)
    assert len(out) == n and all(r.ok for r in out)
    assert server.max_in_flight == limit, "requests must overlap up to the limit, never beyond it"


def test_concurrency_bounds_the_requests_in_flight() -> None:
    with FaultServer(lambda r: HOLD) as server:
        _assert_in_flight_limit(server, model_for(server, concurrency=4), 4)


def test_tom_batch_size_bounds_the_requests_in_flight(tmp_path: Path) -> None:
    """--tom-batch-size reaches openai: through the engine (it used to be silently ignored)."""
    with FaultServer(lambda r: HOLD) as server:
        m = model_for(server, concurrency=16)
        engine = Engine(m, None, batch_size=3)
        thread = threading.Thread(target=lambda: engine.run(programs([f"q{i}" for i in range(12)])), daemon=True)
        thread.start()
        try:
            wait_until(lambda: server.in_flight == 3, "3 requests in flight")
            time.sleep(0.05)
            assert len(server.received) == 3
        finally:
            server.release()
            thread.join(timeout=60)
        assert engine.stats.model_requests == 12 and engine.stats.errors == 0
        assert server.max_in_flight == 3


def test_stream_yields_answers_as_they_complete() -> None:
    with FaultServer(lambda r: HOLD if "slow" in r.prompt else OK) as server:
        m = model_for(server, concurrency=8)
        seen: list[int] = []
        released_after_fast = False
        for index, response in m.stream([req("slow"), *[req(f"fast {i}") for i in range(5)]]):
            assert response.ok
            seen.append(index)
            if len(seen) == 5 and not server.released.is_set():
                released_after_fast = True  # all fast answers arrived while the slow one was still held
                server.release()
    assert sorted(seen) == list(range(6)) and seen[-1] == 0
    assert released_after_fast, "the slow answer must not hold back the fast ones"


def test_abandoning_the_stream_stops_the_worker_thread() -> None:
    with FaultServer(lambda r: OK if r.prompt.split("\n")[-1] == "q0" else HOLD) as server:
        m = model_for(server, concurrency=2)
        it = m.stream([req(f"q{i}") for i in range(40)])
        index, response = next(it)
        assert index == 0 and response.ok
        it.close()
        server.release()
        wait_until(lambda: not any(t.name == "pytest-tom-openai" and t.is_alive() for t in threading.enumerate()),
                   "the worker thread ended")
        # q0 answered, q1 and its replacement held: nothing after the stream was closed.
        assert len(server.received) <= 3


# -- log-likelihood ------------------------------------------------------------------------------


def test_loglikelihood_through_echoed_prompt_logprobs() -> None:
    with FaultServer() as server:
        m = model_for(server, endpoint="completions")
        choices = (" [[A]]", " [[B]]", " the basket")
        out = m.generate([req("Where is the ball?", kind="loglikelihood", choices=choices)])[0]
        assert out.ok and out.logprobs is not None
        assert list(out.logprobs) == pytest.approx([sum(fake_logprob(c) for c in ch) for ch in choices])
        assert out.choice_tokens == (6, 6, 11)
        prompt_chars = len("Be brief.\n\nWhere is the ball?")
        # The first echoed token has no log-probability; spend only in usage.
        assert out.usage["prompt_tokens"] == prompt_chars and out.usage["scored_tokens"] == 23
        assert not any(k.startswith("choice_tokens") for k in out.usage)
        assert out.text == choices[max(range(3), key=lambda i: out.logprobs[i])]
        body = server.received[0].body
        assert body["echo"] is True and body["prompt"] == [f"Be brief.\n\nWhere is the ball?{c}" for c in choices]


def test_loglikelihood_on_the_chat_endpoint_is_a_clear_error() -> None:
    with FaultServer() as server:
        out = model_for(server).generate([req("q", kind="loglikelihood", choices=(" A",))])[0]
        assert out.error and "endpoint=completions" in out.error and not server.received


def test_a_server_without_prompt_logprobs_cannot_score() -> None:
    with FaultServer(lambda r: Action(text="x")) as server:
        server.completion_body = lambda r, text: {  # type: ignore[method-assign]
            "id": "c", "object": "text_completion", "created": 0, "model": "m",
            "choices": [{"index": i, "text": text, "finish_reason": "length", "logprobs": None} for i in range(2)],
        }
        out = model_for(server, endpoint="completions").generate([req("q", kind="loglikelihood", choices=(" A", " B"))])[0]
        assert out.error and "no prompt logprobs" in out.error and len(server.received) == 1


# -- resume after a dying server -----------------------------------------------------------------


def programs(prompts: list[str]) -> dict[str, tuple[Sample[None], Iterator[object]]]:
    def program(sample: Sample[None]):  # type: ignore[no-untyped-def]
        responses = yield [req(sample.question)]
        return Record("t", sample.id, Outcome.CORRECT, {}, parsed=responses[0].text)

    out = {}
    for i, p in enumerate(prompts):
        sample: Sample[None] = Sample("t", f"q{i}", Story(""), p, (), "", (), {}, (), None)
        out[f"q{i}"] = (sample, program(sample))
    return out


def test_an_interrupted_run_resumes_from_the_cache(tmp_path: Path) -> None:
    prompts = [f"story {i}" for i in range(20)]
    survivors = 8
    answered: list[str] = []
    lock = threading.Lock()

    def dies_after_n(r):  # type: ignore[no-untyped-def]
        with lock:
            if len(answered) >= survivors:
                threading.Thread(target=first.stop, daemon=True).start()
                return DROP
            answered.append(r.prompt)
            return OK

    cache = ResponseCache(tmp_path / "cache")
    first = FaultServer(dies_after_n).start()
    port = first.port
    uri = f"openai:fake-model?base_url={first.base_url}&concurrency=2&max_retries=1&backoff=0.01&timeout=2"
    m1 = install(make_model(uri), FakeClock())
    results = Engine(m1, cache).run(programs(prompts))
    first.stop()
    ok = [k for k, r in results.items() if r.outcome is Outcome.CORRECT]
    assert len(ok) == survivors
    assert sum(r.outcome is Outcome.ERROR for r in results.values()) == len(prompts) - survivors
    assert len(cache) == survivors  # errors are never cached

    with FaultServer(port=port) as second:
        uri = f"openai:fake-model?base_url={second.base_url}&concurrency=2&max_retries=1&backoff=0.01&timeout=2"
        m2 = install(make_model(uri), FakeClock())
        assert m2.fingerprint() == m1.fingerprint()
        engine2 = Engine(m2, cache)
        again = engine2.run(programs(prompts))
        assert all(r.outcome is Outcome.CORRECT for r in again.values())
        assert engine2.stats.cache_hits == survivors
        assert len(second.received) == len(prompts) - survivors
        resent = {r.prompt.split("\n")[-1] for r in second.received}
        assert resent.isdisjoint({p.split("\n")[-1] for p in answered})
    cache.close()


# -- chat rendering without a tokenizer (completions endpoint) ------------------------------------


def test_fold_system_merges_each_system_message_into_the_next_user_turn() -> None:
    from pytest_tom.models._chat import fold_system

    msgs = (Message("system", "S1"), Message("system", "S2"), Message("user", "U1"), Message("assistant", "A"),
            Message("system", "S3"))
    assert fold_system(msgs) == [
        {"role": "user", "content": "S1\n\nS2\n\nU1"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "S3"},
    ]


def test_a_template_file_that_rejects_system_is_folded_on_the_completions_endpoint(tmp_path: Path) -> None:
    template = tmp_path / "gemma.jinja"
    template.write_text(
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
        "<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}<start_of_turn>model\n"
    )
    with FaultServer() as server:
        m = model_for(server, endpoint="completions", chat_template=template)
        assert m.describe()["chat_template"]["system_role"] == "folded into the first user turn"
        m.generate([req("q")])
        # Like transformers' environment, Jinja drops the template's single trailing newline.
        assert server.received[0].body["prompt"] == "<start_of_turn>user\nBe brief.\n\nq<end_of_turn>\n<start_of_turn>model"
        with pytest.raises(TomConfigError, match="expected one of"):
            model_for(server, endpoint="completions", system="sometimes")
