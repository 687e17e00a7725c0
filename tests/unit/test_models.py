"""Built-in models: random baseline, user callables, replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.models import make_model, per_prompt
from pytest_tom.models.base import CallableModel
from pytest_tom.types import GenerationSettings, Message, Request


def req(text: str, **kw) -> Request:
    return Request(messages=(Message("system", "sys"), Message("user", text)), settings=GenerationSettings(), **kw)


class TestRandom:
    def test_is_seeded_and_uses_the_answer_format(self) -> None:
        r = req("q1", answer_labels=("A", "B", "C", "D"), answer_format="[[{}]]")
        a = make_model("random:7").generate([r] * 3)
        assert a[0].text in {"[[A]]", "[[B]]", "[[C]]", "[[D]]"}
        assert a == make_model("random:7").generate([r] * 3)

    def test_is_near_chance_over_many_requests(self) -> None:
        reqs = [req(f"q{i}", answer_labels=("A", "B", "C", "D"), answer_format="{}") for i in range(2000)]
        share = sum(r.text == "A" for r in make_model("random").generate(reqs)) / 2000
        assert 0.21 < share < 0.29

    def test_bad_seed(self) -> None:
        with pytest.raises(TomConfigError, match="integer"):
            make_model("random:abc")

    def test_unknown_scheme_lists_known_ones(self) -> None:
        with pytest.raises(TomConfigError, match="random"):
            make_model("nosuch:thing")


class TestCallable:
    def test_batched_callable_receives_chat_messages_and_settings(self) -> None:
        calls = []

        def model(batch, settings):
            calls.append((batch, settings))
            return [conv[-1]["content"][::-1] for conv in batch]

        out = CallableModel(model).generate([req("abc"), req("xyz")])
        assert [r.text for r in out] == ["cba", "zyx"]
        assert calls[0][0][0] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "abc"}]
        assert calls[0][1]["max_new_tokens"] == 64

    def test_per_prompt_callable(self) -> None:
        @per_prompt
        def model(conv, settings):
            return "[[B]]"

        assert CallableModel(model).generate([req("a"), req("b")])[1].text == "[[B]]"

    def test_exceptions_and_bad_returns_are_errors(self) -> None:
        def broken(batch, settings):
            raise ConnectionError("GPU fell off the bus")

        out = CallableModel(broken).generate([req("a")])
        assert out[0].error and "GPU fell off" in out[0].error
        out = CallableModel(lambda b, s: ["only one"]).generate([req("a"), req("b")])
        assert all(r.error and "returned 1 answers for 2" in r.error for r in out)
        out = CallableModel(lambda b, s: [None]).generate([req("a")])
        assert out[0].error

    def test_fingerprint_follows_the_source(self) -> None:
        def m1(batch, settings):
            return ["a"] * len(batch)

        def m2(batch, settings):
            return ["b"] * len(batch)

        assert CallableModel(m1).fingerprint() != CallableModel(m2).fingerprint()

    def test_python_uri(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        (tmp_path / "mymodel.py").write_text("def answer(batch, settings):\n    return ['[[A]]' for _ in batch]\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        model = make_model("python:mymodel:answer")
        assert model.generate([req("x")])[0].text == "[[A]]"
        with pytest.raises(TomConfigError, match="no attribute"):
            make_model("python:mymodel:nothing")
        with pytest.raises(TomConfigError, match="cannot import"):
            make_model("python:no_such_module_xyz:f")


class TestReplay:
    def test_jsonl_replay_and_missing_answers_are_errors(self, tmp_path: Path) -> None:
        r1, r2 = req("one"), req("two")
        path = tmp_path / "answers.jsonl"
        path.write_text(json.dumps({"key": r1.key, "text": "[[C]]"}) + "\n")
        out = make_model(f"replay:{path}").generate([r1, r2])
        assert out[0].text == "[[C]]" and out[1].error and "no recorded answer" in out[1].error

    def test_replay_from_a_report(self, tmp_path: Path) -> None:
        r1 = req("one")
        path = tmp_path / "report.json"
        path.write_text(json.dumps({"schema_version": "1.0", "responses": {r1.key: {"text": "[[D]]", "error": None}}}))
        assert make_model(f"replay:{path}").generate([r1])[0].text == "[[D]]"

    def test_bad_replay_file_names_the_line(self, tmp_path: Path) -> None:
        path = tmp_path / "answers.jsonl"
        path.write_text('{"key": "a", "text": "x"}\n{"text": "no key"}\n')
        with pytest.raises(TomDataError, match="line 2.*'key'"):
            make_model(f"replay:{path}")
        with pytest.raises(TomConfigError, match="cannot read"):
            make_model(f"replay:{tmp_path / 'missing.jsonl'}")
