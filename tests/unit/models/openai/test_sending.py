"""How requests go on the wire: prefix order, and answer-contract stops sent to servers that can give them back."""

from __future__ import annotations

import json

import pytest

from pytest_tom.models import make_model
from pytest_tom.models.openai.api import Permanent
from pytest_tom.models.openai.sending import prefix_order, restore_stop, stop_params
from pytest_tom.request import GenerationSettings, Message, Request

pytest.importorskip("openai")

from helpers.fault_server import OK, FaultServer, Received, raw  # noqa: E402

STOPS = ("[[A]]", "[[B]]")


def req(user: str, *, stop_after: tuple[str, ...] = STOPS, stop: tuple[str, ...] = ()) -> Request:
    return Request(messages=(Message("system", "Answer."), Message("user", user)),
                   settings=GenerationSettings(max_new_tokens=64, temperature=0.0, stop=stop, stop_after=stop_after))


def test_prompts_sharing_a_prefix_are_sent_together_and_equal_ones_keep_their_order() -> None:
    requests = [req("Story one. Q1"), req("Story two. Q1"), req("Story one. Q2"), req("Story two. Q2"), req("Story one. Q1")]
    order = prefix_order(requests)
    assert order == [0, 4, 2, 1, 3]


def test_stops_are_sent_only_where_the_server_can_give_them_back() -> None:
    r = req("q", stop=("\n\n",))
    assert stop_params(r, "no") == (["\n\n"], {})
    assert stop_params(r, "vllm") == (["\n\n", *STOPS], {"include_stop_str_in_output": True})
    stop, extra = stop_params(r, "llamacpp")
    assert stop == ["\n\n", *STOPS] and extra["verbose"] is True and "stopping_word" in extra["response_fields"]
    assert stop_params(req("q", stop_after=()), "llamacpp") == ([], {})


def test_the_stop_llama_cpp_erased_is_put_back_and_only_an_answer_contract_one() -> None:
    r = req("q", stop=("\n\n",))
    assert restore_stop("So ", {"__verbose": {"stop_type": "word", "stopping_word": "[[B]]"}}, r, "llamacpp") == "So [[B]]"
    assert restore_stop("So", {"__verbose": {"stop_type": "word", "stopping_word": "\n\n"}}, r, "llamacpp") == "So"
    assert restore_stop("So", {"__verbose": {"stop_type": "eos", "stopping_word": ""}}, r, "llamacpp") == "So"
    assert restore_stop("So", None, r, "no") == "So"
    with pytest.raises(Permanent, match="stopping|stop string"):
        restore_stop("So", {}, r, "llamacpp")  # not a llama.cpp server: the erased stop is unknown


def llama_cpp(r: Received) -> object:
    """llama-server's answer: the stop string erased from the content, named in __verbose when asked for."""
    word = "[[B]]" if r.body.get("stop") else ""
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "" if word else "[[B]] and more"}}]}
    if r.body.get("verbose"):
        body["__verbose"] = {"stop_type": "word" if word else "eos", "stopping_word": word}
    return raw(json.dumps(body))


@pytest.mark.parametrize("mode", ["no", "llamacpp"])
def test_through_the_backend_the_answer_is_the_same_whether_the_server_stops_early_or_not(mode: str) -> None:
    with FaultServer(llama_cpp) as server:  # type: ignore[arg-type]
        model = make_model(f"openai:m?base_url={server.base_url}&send_stops={mode}&max_retries=0")
        [answer] = model.generate([req("q")])
        [sent] = server.received
    assert answer.ok and answer.text == "[[B]]"  # the stop kept, the rest cut, as every backend returns it
    assert ("stop" in sent.body) is (mode == "llamacpp")


def test_vllm_keeps_the_stop_string_when_asked() -> None:
    def vllm(r: Received) -> object:
        keep = r.body.get("include_stop_str_in_output") is True and "[[A]]" in r.body.get("stop", [])
        return raw(json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x [[A]]" if keep else "x "}}]}))

    with FaultServer(vllm) as server:  # type: ignore[arg-type]
        model = make_model(f"openai:m?base_url={server.base_url}&send_stops=vllm&max_retries=0")
        assert [a.text for a in model.generate([req("q")])] == ["x [[A]]"]


def test_requests_reach_the_server_in_prefix_order() -> None:
    with FaultServer(lambda r: OK) as server:
        model = make_model(f"openai:m?base_url={server.base_url}&concurrency=1&concurrency_start=1")
        model.generate([req("B story. Q1"), req("A story. Q1"), req("B story. Q2"), req("A story. Q2")])
        sent = [r.body["messages"][-1]["content"] for r in server.received]
    assert sent == ["A story. Q1", "A story. Q2", "B story. Q1", "B story. Q2"]
