"""What a 200 from an OpenAI-compatible API holds: an answer, a malformed body, or no answer (pure, no server).

`answer_text` reads the object the official client parsed (or the text it hands
back for a non-JSON body); these tests build the same shapes with
`SimpleNamespace`, so they need neither a server nor the openai package.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_tom.models.openai.api import BadAnswer, Empty, Permanent, Withheld, answer_text

URL = "http://127.0.0.1:9/v1"


def chat(content: Any, reason: str | None = "stop", **message: Any) -> SimpleNamespace:
    msg = SimpleNamespace(content=content, refusal=message.get("refusal"))
    return SimpleNamespace(choices=[SimpleNamespace(index=0, message=msg, finish_reason=reason)])


def read(parsed: Any, endpoint: str = "chat", content_type: str = "application/json") -> str:
    return answer_text(parsed, endpoint=endpoint, content_type=content_type, max_tokens=64, source=URL)


def test_an_ordinary_answer_is_its_text() -> None:
    assert read(chat("[[B]]")) == "[[B]]"
    assert read(SimpleNamespace(choices=[SimpleNamespace(text=" B", finish_reason="stop")]), "completions") == " B"
    assert read(chat("[[C]] and more", "length")) == "[[C]] and more", "a truncated answer is still the model's answer"


def test_a_refusal_is_the_models_own_answer() -> None:
    assert read(chat(None, refusal="I can't help with that.")) == "I can't help with that."


@pytest.mark.parametrize("content", [None, "", "partial te"])
def test_a_content_filter_is_withheld_never_an_answer(content: str | None) -> None:
    with pytest.raises(Withheld, match=r"content filter: http://127\.0\.0\.1:9/v1 withheld the answer "
                                       r"\(finish_reason='content_filter', .*not retried, not cached") as info:
        read(chat(content, "content_filter"))
    assert isinstance(info.value, Permanent)
    assert ("after 10 characters" in str(info.value)) == bool(content)


@pytest.mark.parametrize(("content", "reason", "why"), [
    ("", "stop", "the model ended its answer at once"),
    (None, "stop", "the model ended its answer at once"),
    ("  \n", "stop", "the model ended its answer at once"),
    ("", "length", r"the token budget \(max_tokens=64\) ran out before any visible text"),
    ("", None, "no text came back"),
])
def test_an_empty_completion_is_an_error_naming_its_finish_reason(content: str | None, reason: str | None, why: str) -> None:
    with pytest.raises(Empty, match=rf"empty completion from {URL} \(finish_reason={reason!r}\): {why}") as info:
        read(chat(content, reason))
    assert isinstance(info.value, Permanent)


def test_an_html_page_is_malformed_and_names_what_came_back() -> None:
    page = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body>" + "x" * 500 + "</body></html>"
    with pytest.raises(BadAnswer) as info:
        read(page, content_type="text/html; charset=utf-8")
    message = str(info.value)
    assert message.startswith("expected JSON with choices[0].message.content, got text/html: '<!DOCTYPE html> <html>")
    assert message.endswith("...'") and len(message) < 250, "one line, cut short"


@pytest.mark.parametrize(("parsed", "got"), [
    (SimpleNamespace(choices=[SimpleNamespace(index=0, message=None, finish_reason="stop")]),
     "got a choice without message (finish_reason='stop')"),
    (SimpleNamespace(choices=[]), "got application/json without choices"),
    (SimpleNamespace(id="x"), "got application/json without choices"),
    (chat(["part"]), "got list content"),
])
def test_json_without_a_message_is_malformed(parsed: Any, got: str) -> None:
    with pytest.raises(BadAnswer, match=r"expected JSON with choices\[0\]\.message\.content, " + got.replace("(", r"\(")
                       .replace(")", r"\)")):
        read(parsed)
    assert not isinstance(BadAnswer("x"), Permanent), "malformed bodies are retried"
