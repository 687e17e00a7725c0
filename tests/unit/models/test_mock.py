"""The `mock` model users script their own tests with: strategies, answer tables, calls, URI forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tom.engine import Engine, ResponseCache
from pytest_tom.errors import TomConfigError
from pytest_tom.models import make_model
from pytest_tom.models.mock import MockModel, make
from pytest_tom.record import Outcome, Record
from pytest_tom.request import GenerationSettings, Message, Request
from pytest_tom.sample import Sample, Story

LABELS = ("A", "B", "C", "D")


def req(text: str, *, labels: tuple[str, ...] = LABELS, fmt: str = "[[{}]]", **kw) -> Request:  # type: ignore[no-untyped-def]
    return Request(messages=(Message("system", "Answer with [[X]]."), Message("user", text)), settings=GenerationSettings(),
                   answer_labels=labels, answer_format=fmt, **kw)


def ll(text: str, choices: tuple[str, ...] = (" [[A]]", " [[B]]", " [[C]]")) -> Request:
    return Request(messages=(Message("user", text),), kind="loglikelihood", choices=choices)


class TestStrategies:
    def test_first_and_last_answer_in_the_requests_own_format(self) -> None:
        assert MockModel().generate([req("q")])[0].text == "[[A]]"
        assert MockModel(strategy="last").generate([req("q")])[0].text == "[[D]]"
        assert MockModel(strategy="last").generate([req("q", labels=("yes", "no"), fmt="{}")])[0].text == "no"
        assert MockModel().generate([req("q", labels=("a", "b"), fmt="({})")])[0].text == "(a)"

    def test_echo_returns_the_last_message(self) -> None:
        r = Request(messages=(Message("system", "s"), Message("user", "u1"), Message("assistant", "prefill [[")))
        assert MockModel(strategy="echo").generate([r, req("what was sent")])[0].text == "prefill [["
        assert MockModel(strategy="echo").generate([req("what was sent")])[0].text == "what was sent"

    def test_fixed_answers_every_request_alike(self) -> None:
        out = MockModel(strategy="fixed", fixed="I do not know").generate([req("q1"), req("q2", labels=())])
        assert [r.text for r in out] == ["I do not know", "I do not know"]

    def test_unknown_strategy_is_a_config_error(self) -> None:
        with pytest.raises(TomConfigError, match="mock strategy 'random'.*first, last, echo, fixed, none"):
            MockModel(strategy="random")


class TestAnswerTables:
    def test_by_request_key(self) -> None:
        a, b = req("one"), req("two")
        out = MockModel({a.key: "[[C]]"}).generate([a, b])
        assert out[0].text == "[[C]]" and out[1].text == "[[A]]", "unscripted requests fall back to the strategy"

    def test_by_prompt_substring(self) -> None:
        m = MockModel({"Sally": "[[B]]", "Anne": "[[D]]"}, strategy="none")
        out = m.generate([req("Where will Sally look?"), req("Where is Anne?"), req("Nobody here")])
        assert [r.text for r in out[:2]] == ["[[B]]", "[[D]]"]
        assert out[2].error and "mock has no answer for request" in out[2].error and "(none strategy)" in out[2].error

    def test_a_request_key_wins_over_a_substring_and_the_system_prompt_counts(self) -> None:
        r = req("Where will Sally look?")
        m = MockModel({"Sally": "[[B]]", r.key: "[[C]]", "Answer with": "[[D]]"}, strategy="none")
        assert m.generate([r, req("no names")])[0].text == "[[C]]"
        assert m.generate([req("no names")])[0].text == "[[D]]", "the whole prompt text is searched, system message included"

    def test_an_empty_needle_never_matches(self) -> None:
        out = MockModel({"": "[[B]]"}, strategy="none").generate([req("q")])
        assert out[0].error

    def test_a_callable_answers_and_none_falls_back_to_the_strategy(self) -> None:
        def script(r: Request) -> str | None:
            return "[[B]]" if "Sally" in r.prompt_text() else None

        out = MockModel(script, strategy="last").generate([req("Sally?"), req("Anne?")])
        assert [r.text for r in out] == ["[[B]]", "[[D]]"]


class TestLoglikelihood:
    def test_the_strategy_picks_a_choice_and_the_logprobs_say_which(self) -> None:
        first = MockModel().generate([ll("q")])[0]
        assert first.text == " [[A]]" and first.logprobs == (0.0, -1.0, -1.0)
        last = MockModel(strategy="last").generate([ll("q")])[0]
        assert last.text == " [[C]]" and last.logprobs == (-1.0, -1.0, 0.0)

    def test_a_scripted_choice_is_picked(self) -> None:
        out = MockModel({"ball": " [[B]]"}).generate([ll("Where is the ball?")])[0]
        assert out.text == " [[B]]" and out.logprobs == (-1.0, 0.0, -1.0)

    def test_no_choices_is_an_error(self) -> None:
        out = MockModel().generate([ll("q", choices=())])[0]
        assert out.error and "needs choices" in out.error

    @pytest.mark.parametrize("strategy", ["none", "echo", "fixed"])
    def test_a_loglikelihood_request_it_has_no_answer_for_is_an_error_not_a_guess(self, strategy: str) -> None:
        r = ll("Where is the ball?")
        out = MockModel({"Sally": " [[B]]"}, strategy=strategy).generate([r])[0]
        assert out.logprobs is None and out.text is None
        assert out.error == f"mock has no answer for request {r.key[:12]} ({strategy} strategy)"

    def test_a_scripted_answer_that_is_not_a_choice_falls_back_to_the_strategy(self) -> None:
        assert MockModel({"ball": "[[B]]"}, strategy="last").generate([ll("Where is the ball?")])[0].text == " [[C]]"
        assert MockModel({"ball": "[[B]]"}, strategy="none").generate([ll("Where is the ball?")])[0].error


class TestCalls:
    def test_every_request_is_recorded_in_order_errors_included(self) -> None:
        m = MockModel(strategy="none")
        embed = Request(kind="embed", model="embed:auto", text="a sentence")
        requests = [req("one"), ll("two"), embed, req("three")]
        out = m.generate(requests)
        assert m.calls == requests
        assert out[2].error and "not 'embed'" in out[2].error
        assert out[0].error and out[3].error

    def test_calls_accumulate_across_batches(self) -> None:
        m = MockModel()
        m.generate([req("a")])
        m.generate([req("b"), req("c")])
        assert [c.messages[-1].content for c in m.calls] == ["a", "b", "c"]

    def test_an_unanswerable_request_is_an_error_naming_its_key_and_strategy(self) -> None:
        r = req("free text", labels=())
        out = MockModel().generate([r])[0]
        assert out.text is None and out.error == f"mock has no answer for request {r.key[:12]} (first strategy)"

    def test_through_the_engine_and_its_cache(self, tmp_path: Path) -> None:
        m = MockModel(strategy="last")
        sample: Sample[None] = Sample("t", "q1", Story("story"), "question", (), "", (), {}, (), None)

        def program():  # type: ignore[no-untyped-def]
            responses = yield [req("q")]
            return Record("t", "q1", Outcome.CORRECT, {}, parsed=responses[0].text)

        cache = ResponseCache(tmp_path / "cache")
        first = Engine(m, cache).run({"q1": (sample, program())})
        again = Engine(m, cache)
        second = again.run({"q1": (sample, program())})
        cache.close()
        assert first["q1"].parsed == second["q1"].parsed == "[[D]]"
        assert len(m.calls) == 1 and again.stats.cache_hits == 1


class TestFingerprint:
    def test_follows_strategy_fixed_text_and_table(self) -> None:
        fps = {
            MockModel().fingerprint(),
            MockModel(strategy="last").fingerprint(),
            MockModel(strategy="fixed", fixed="x").fingerprint(),
            MockModel(strategy="fixed", fixed="y").fingerprint(),
            MockModel({"a": "1"}).fingerprint(),
            MockModel({"a": "2"}).fingerprint(),
        }
        assert len(fps) == 6
        assert MockModel({"a": "1", "b": "2"}).fingerprint() == MockModel({"b": "2", "a": "1"}).fingerprint()

    def test_a_different_script_is_a_different_model(self) -> None:
        def script_a(r: Request) -> str:
            return "[[A]]"

        def script_a_again(r: Request) -> str:
            return "[[A]]"

        assert MockModel(lambda r: "[[A]]").fingerprint() != MockModel(lambda r: "[[B]]").fingerprint()
        assert MockModel(script_a).fingerprint() == MockModel(script_a).fingerprint(), "reruns reuse the cache"
        assert MockModel(script_a).fingerprint() != MockModel(script_a_again).fingerprint()

    def test_a_callable_object_and_an_explicit_fingerprint(self) -> None:
        class Script:
            def __init__(self, answer: str) -> None:
                self.answer = answer

            def __call__(self, r: Request) -> str:
                return self.answer

        assert MockModel(Script("[[A]]")).generate([req("q")])[0].text == "[[A]]"
        assert MockModel(Script("[[A]]")).fingerprint() == MockModel(Script("[[A]]")).fingerprint()
        tagged = Script("[[B]]")
        tagged.tom_fingerprint = "script-b-v2"  # type: ignore[attr-defined]
        assert MockModel(tagged).fingerprint().endswith(":script-b-v2")


class TestURIs:
    @pytest.mark.parametrize(
        ("uri", "strategy", "text"),
        [("mock", "first", "[[A]]"), ("mock:first", "first", "[[A]]"), ("mock:last", "last", "[[D]]"),
         ("mock:echo", "echo", "question"), ("mock:fixed=[[C]]", "fixed", "[[C]]"), ("mock:fixed=", "fixed", "")],
    )
    def test_strategy_forms(self, uri: str, strategy: str, text: str) -> None:
        m = make_model(uri)
        assert isinstance(m, MockModel) and m.strategy == strategy and m.uri == uri
        assert m.generate([req("question")])[0].text == text

    def test_none_answers_nothing(self) -> None:
        m = make_model("mock:none")
        assert m.generate([req("q")])[0].error

    def test_answers_file(self, tmp_path: Path) -> None:
        path = tmp_path / "answers.json"
        path.write_text(json.dumps({"Sally": "[[B]]"}))
        m = make_model(f"mock:answers={path}")
        assert isinstance(m, MockModel) and m.uri == f"mock:answers={path}"
        out = m.generate([req("Where will Sally look?"), req("Where is Anne?")])
        assert out[0].text == "[[B]]" and out[1].error, "an answers file never falls back to guessing"

    @pytest.mark.parametrize(
        ("spec", "message"),
        [("first=x", "first takes no value"), ("=x", "first takes no value"), ("echo=1", "echo takes no value"),
         ("random", "expected first, last, echo, fixed=TEXT or answers=PATH.json"),
         ("answers", "cannot read the answers file")],
    )
    def test_malformed_uris(self, spec: str, message: str) -> None:
        with pytest.raises(TomConfigError, match=message.replace("[", r"\[").replace(".", r"\.")):
            make(spec)

    @pytest.mark.parametrize(
        ("content", "message"),
        [(None, "cannot read the answers file"), ("{not json", "cannot read the answers file"),
         ('["a list"]', "expected a JSON object"), ('{"Sally": 2}', "expected a JSON object")],
        ids=["missing", "invalid-json", "not-an-object", "non-string-answer"],
    )
    def test_bad_answers_files(self, tmp_path: Path, content: str | None, message: str) -> None:
        path = tmp_path / "answers.json"
        if content is not None:
            path.write_text(content)
        with pytest.raises(TomConfigError, match=f"mock:answers=.*{message}"):
            make_model(f"mock:answers={path}")
