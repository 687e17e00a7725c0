"""The `openai:` backend against a local fault-injecting server (127.0.0.1 only)."""

from __future__ import annotations

import email.utils
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_tom.cache import ResponseCache
from pytest_tom.engine import Engine
from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.models import make_model
from pytest_tom.models._common import choice_token_counts
from pytest_tom.types import GenerationSettings, ItemResult, Message, Outcome, Question, Request

pytest.importorskip("openai")

from helpers.fault_server import DROP, MALFORMED, OK, Action, FaultServer, fake_logprob, slow, status  # noqa: E402

KEY = "sk-test-7f0c2b9e4d1a8c3f5e6b0a9d"


@pytest.fixture(autouse=True)
def _no_real_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def req(text: str, *, system: str | None = "Be brief.", **kw) -> Request:  # type: ignore[no-untyped-def]
    msgs = ((Message("system", system),) if system else ()) + (Message("user", text),)
    settings = kw.pop("settings", None) or GenerationSettings(max_new_tokens=16)
    return Request(messages=msgs, settings=settings, **kw)


def model_for(server: FaultServer, **opts: object):  # type: ignore[no-untyped-def]
    query = "&".join(f"{k}={v}" for k, v in {"base_url": server.base_url, "backoff": 0.01, "max_retries": 3, "timeout": 5, **opts}.items())
    return make_model(f"openai:fake-model?{query}")


def arrivals(server: FaultServer, needle: str) -> list[float]:
    return [r.t for r in server.received if needle in r.prompt]


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


def test_retry_after_header_forms() -> None:
    from pytest_tom.models.openai import retry_after_seconds

    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= (retry_after_seconds({"retry-after": date}, now=now) or 0) <= 31
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


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


def test_usage_is_reported_and_summed_by_the_engine(tmp_path: Path) -> None:
    with FaultServer() as server:
        m = model_for(server)
        engine = Engine(m, ResponseCache(tmp_path / "c"))
        engine.run(programs([f"question {i}" for i in range(5)]))
        # the fake server counts words: "Be brief.\nquestion i" -> 4 prompt words, "[[A]]" -> 1
        assert engine.stats.usage == {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
        assert m.describe()["usage"] == engine.stats.usage
        assert m.describe()["system_fingerprints"] == ["fp_fault"]


# -- retries, back-off, timeouts -----------------------------------------------------------------


def test_retry_after_is_honoured() -> None:
    def policy(r):  # type: ignore[no-untyped-def]
        return status(429, retry_after="1") if r.attempt == 0 else OK

    with FaultServer(policy) as server:
        m = model_for(server, backoff=5)  # exponential back-off would wait 2.5-5 s
        out = m.generate([req("limited")])
        assert out[0].text == "[[A]]"
        first, second = arrivals(server, "limited")
        assert second - first >= 1.0, "the retry came before Retry-After allowed it"
        assert m.waits == [1.0] and m.describe()["stats"]["http_429"] == 1


def test_retry_after_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    def policy(r):  # type: ignore[no-untyped-def]
        return status(503, retry_after="3600") if r.attempt == 0 else OK

    with FaultServer(policy) as server:
        m = model_for(server, max_retry_after=0.2)
        assert m.generate([req("x")])[0].ok
        assert m.waits == [0.2]


@pytest.mark.parametrize(
    ("fault", "counter"),
    [(status(500), "http_5xx"), (status(502), "http_5xx"), (DROP, "connection_errors"), (MALFORMED, "malformed"), (status(408), None)],
    ids=["500", "502", "dropped", "malformed-json", "408"],
)
def test_transient_faults_are_retried(fault: Action, counter: str | None) -> None:
    with FaultServer(lambda r: fault if "flaky" in r.prompt and r.attempt < 2 else OK) as server:
        m = model_for(server)
        out = m.generate([req("flaky"), req("fine")])
        assert [r.text for r in out] == ["[[A]]", "[[A]]"]
        assert len(arrivals(server, "flaky")) == 3
        stats = m.describe()["stats"]
        assert stats["retries"] == 2 and stats["errors"] == 0
        if counter:
            assert stats[counter] == 2
        assert len(m.waits) == 2 and all(0.005 <= w <= 0.02 * 2 for w in m.waits)


@pytest.mark.parametrize(
    ("fault", "message"),
    [(status(500), "HTTP 500"), (DROP, "connection to"), (MALFORMED, "malformed response"), (status(429), "HTTP 429")],
    ids=["500", "dropped", "malformed-json", "429"],
)
def test_exhausted_retries_are_errors_never_answers(fault: Action, message: str) -> None:
    with FaultServer(lambda r: fault if "doomed" in r.prompt else OK) as server:
        out = model_for(server, max_retries=2).generate([req("doomed"), req("fine")])
        assert out[0].text is None and out[0].error is not None
        assert message in out[0].error and "gave up after 3 attempts" in out[0].error
        assert out[1].text == "[[A]]"
        assert len(arrivals(server, "doomed")) == 3


def test_client_errors_are_not_retried() -> None:
    with FaultServer(lambda r: status(400, body='{"error": {"message": "unknown parameter: seed"}}')) as server:
        out = model_for(server).generate([req("bad")])
        assert out[0].error and "HTTP 400" in out[0].error and "unknown parameter: seed" in out[0].error
        assert len(server.received) == 1


def test_timeouts_are_retried_then_reported() -> None:
    with FaultServer(lambda r: slow(3) if "stuck" in r.prompt or r.attempt == 0 else OK) as server:
        m = model_for(server, timeout=0.3, max_retries=1)
        out = m.generate([req("stuck"), req("slow once")])
        assert out[0].error and "timed out after 0.3s" in out[0].error
        assert out[1].text == "[[A]]"
        assert m.describe()["stats"]["timeouts"] == 3


def test_the_key_never_appears_in_errors_even_when_the_server_echoes_it() -> None:
    def echo_auth(r):  # type: ignore[no-untyped-def]
        return status(401, body='{"error": {"message": "Incorrect API key provided: %s"}}' % r.headers["authorization"])

    with FaultServer(echo_auth) as server:
        m = model_for(server)
        out = m.generate([req("who am i")])
        assert server.received[0].headers["authorization"].endswith(KEY)
        assert out[0].error and "HTTP 401" in out[0].error and "[redacted]" in out[0].error
        assert KEY not in out[0].error and KEY not in repr(m.describe()) and KEY not in m.fingerprint()


# -- concurrency and streaming -------------------------------------------------------------------


def test_concurrency_is_bounded_and_used() -> None:
    with FaultServer(delay=0.1) as server:
        m = model_for(server, concurrency=4)
        out = m.generate([req(f"q{i}") for i in range(24)])
        assert all(r.ok for r in out)
        assert server.max_in_flight == 4, "requests must overlap, never beyond the limit"


def test_stream_yields_answers_as_they_complete() -> None:
    with FaultServer(lambda r: slow(1.0) if "slow" in r.prompt else OK) as server:
        m = model_for(server, concurrency=8)
        start = time.monotonic()
        seen: list[tuple[int, float]] = []
        for index, response in m.stream([req("slow"), *[req(f"fast {i}") for i in range(5)]]):
            assert response.ok
            seen.append((index, time.monotonic() - start))
        assert sorted(i for i, _ in seen) == list(range(6))
        assert seen[-1][0] == 0 and seen[-1][1] >= 1.0, "the slow answer must not hold back the fast ones"


def test_abandoning_the_stream_stops_the_worker_thread() -> None:
    with FaultServer(delay=0.2) as server:
        m = model_for(server, concurrency=2)
        it = m.stream([req(f"q{i}") for i in range(40)])
        next(it)
        it.close()
        deadline = time.monotonic() + 10
        while any(t.name == "pytest-tom-openai" and t.is_alive() for t in threading.enumerate()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(t.name == "pytest-tom-openai" and t.is_alive() for t in threading.enumerate())
        assert len(server.received) < 10


# -- log-likelihood ------------------------------------------------------------------------------


def test_loglikelihood_through_echoed_prompt_logprobs() -> None:
    with FaultServer() as server:
        m = model_for(server, endpoint="completions")
        choices = (" [[A]]", " [[B]]", " the basket")
        out = m.generate([req("Where is the ball?", kind="loglikelihood", choices=choices)])[0]
        assert out.ok and out.logprobs is not None
        assert list(out.logprobs) == pytest.approx([sum(fake_logprob(c) for c in ch) for ch in choices])
        assert choice_token_counts(out.usage, 3) == (6, 6, 11)
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


def programs(prompts: list[str]) -> dict[str, tuple[Question, object]]:
    def program(qid: str, prompt: str):  # type: ignore[no-untyped-def]
        responses = yield [req(prompt)]
        return ItemResult("t", qid, Outcome.CORRECT, {}, parsed=responses[0].text)

    return {f"q{i}": (Question("t", f"q{i}", (), {}, None), program(f"q{i}", p)) for i, p in enumerate(prompts)}


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
    m1 = make_model(f"openai:fake-model?base_url={first.base_url}&concurrency=2&max_retries=1&backoff=0.01&timeout=2")
    engine = Engine(m1, cache)
    results = engine.run(programs(prompts))
    first.stop()
    ok = [k for k, r in results.items() if r.outcome is Outcome.CORRECT]
    assert len(ok) == survivors
    assert sum(r.outcome is Outcome.ERROR for r in results.values()) == len(prompts) - survivors
    assert len(cache) == survivors  # errors are never cached

    with FaultServer(port=port) as second:
        m2 = make_model(f"openai:fake-model?base_url={second.base_url}&concurrency=2&max_retries=1&backoff=0.01&timeout=2")
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

    msgs = (Message("system", "S1"), Message("system", "S2"), Message("user", "U1"), Message("assistant", "A"), Message("system", "S3"))
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
