"""Secrets a backend knows never leave the engine: answers and errors are redacted before the cache and the records."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_tom.engine import Engine, ResponseCache
from pytest_tom.models.base import Model, redact
from pytest_tom.request import GenerationSettings, Message, Request, Response
from pytest_tom.sample import Sample, Story

KEY = "sk-unit-2b7f9d1e"


class Echoing(Model):
    """A backend whose server echoes its key: in an answer, in an error, or by crashing with it in the message."""

    def __init__(self, secrets: tuple[str, ...] = (KEY,), crash: bool = False) -> None:
        self._secrets = secrets
        self.crash = crash

    def fingerprint(self) -> str:
        return "echoing"

    def secrets(self) -> tuple[str, ...]:
        return self._secrets

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        if self.crash:
            raise RuntimeError(f"proxy refused Bearer {KEY}")
        return [Response(error=f"HTTP 401: bad key {KEY}") if "fail" in r.messages[-1].content
                else Response(text=f"answer for {KEY}: [[A]]") for r in requests]


def req(text: str) -> Request:
    return Request(messages=(Message("user", text),), settings=GenerationSettings(max_new_tokens=8))


def program(prompt: str):  # type: ignore[no-untyped-def]
    from pytest_tom.record import Outcome, Record

    responses = yield [req(prompt)]
    return Record("t", prompt, Outcome.CORRECT, {}, parsed=responses[0].text)


def sample(qid: str) -> Sample[None]:
    return Sample(benchmark="t", id=qid, context=Story("s"), question="q", choices=(), gold="g", characters=(),
                  facets={}, marks=(), extra=None)


def test_answers_and_errors_are_redacted_before_the_cache_and_the_records(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    engine = Engine(Echoing(), cache)
    records = engine.run({"ok": (sample("ok"), program("ok")), "fail": (sample("fail"), program("fail"))})
    cache.close()
    assert records["ok"].parsed == "answer for [redacted]: [[A]]"
    assert "[redacted]" in records["fail"].message and KEY not in records["fail"].message
    assert all(KEY not in str(r.to_dict()) for r in engine.responses.values())
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_a_crash_message_is_redacted() -> None:
    records = Engine(Echoing(crash=True)).run({"ok": (sample("ok"), program("ok"))})
    assert "Bearer [redacted]" in records["ok"].message and KEY not in records["ok"].message


def test_an_answer_cached_before_the_secret_was_named_is_redacted_when_read(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    Engine(Echoing(secrets=()), cache).run({"ok": (sample("ok"), program("ok"))})
    records = Engine(Echoing(), cache).run({"ok": (sample("ok"), program("ok"))})
    assert records["ok"].parsed == "answer for [redacted]: [[A]]"


@pytest.mark.parametrize(("text", "secrets", "expected"), [
    ("key abcdef and abcdefgh", ("abcdef", "abcdefgh"), "key [redacted] and [redacted]"),  # the longest first
    ("a short ab stays", ("ab",), "a short ab stays"),  # too short to redact without garbling answers
    ("nothing", (), "nothing"),
])
def test_redact(text: str, secrets: tuple[str, ...], expected: str) -> None:
    assert redact(text, secrets) == expected


def test_openai_secret_env_names_variables_whose_values_are_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    from pytest_tom.errors import TomConfigError
    from pytest_tom.models.openai import make

    monkeypatch.setenv("TOM_UNIT_KEY", KEY)
    monkeypatch.setenv("TOM_UNIT_ORG", "org-secret-123")
    model = make("m?base_url=http://127.0.0.1:9/v1&api_key_env=TOM_UNIT_KEY&secret_env=TOM_UNIT_ORG")
    assert set(model.secrets()) == {KEY, "org-secret-123"}
    assert model.scrub("org-secret-123 and " + KEY) == "[redacted] and [redacted]"
    monkeypatch.delenv("TOM_UNIT_ORG")
    with pytest.raises(TomConfigError, match=r"secret_env= names \$TOM_UNIT_ORG, which is not set"):
        make("m?base_url=http://127.0.0.1:9/v1&api_key_env=TOM_UNIT_KEY&secret_env=TOM_UNIT_ORG")
    assert make("m?base_url=http://127.0.0.1:9/v1").secrets() == ()  # the placeholder key of a local server
