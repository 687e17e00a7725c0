"""Built-in models: random baseline, user callables, replay; the shared batch-size contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tom.engine import Engine
from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.models import make_model, per_prompt
from pytest_tom.models._common import loglikelihood_response, looks_local, require_existing
from pytest_tom.models.base import CallableModel
from pytest_tom.request import GenerationSettings, Message, Request, Response


def req(text: str, **kw) -> Request:  # type: ignore[no-untyped-def]
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


class TestBatchSize:
    def test_a_batch_model_is_called_in_batch_size_chunks(self) -> None:
        sizes: list[int] = []

        def model(batch, settings):  # type: ignore[no-untyped-def]
            sizes.append(len(batch))
            return [conv[-1]["content"] for conv in batch]

        m = CallableModel(model, batch_size=4)
        out = dict(m.stream([req(f"q{i}") for i in range(10)]))
        assert sizes == [4, 4, 2] and [out[i].text for i in range(10)] == [f"q{i}" for i in range(10)]

    def test_the_engine_batch_size_overrides_the_backends_own(self) -> None:
        m = CallableModel(lambda b, s: ["x"] * len(b), batch_size=4)
        Engine(m, None)
        assert m.batch_size == 4, "no --tom-batch-size: the backend keeps its own"
        Engine(m, None, batch_size=3)
        assert m.batch_size == 3


class TestLoglikelihoodResponse:
    def test_choice_tokens_are_typed_and_usage_is_spend_only(self) -> None:
        r = loglikelihood_response((" A", " B", " C"), [-3.0, -1.0, -2.0], [1, 2, 3], prompt_tokens=40,
                                   usage={"completion_tokens": 3})
        assert r.text == " B" and r.logprobs == (-3.0, -1.0, -2.0) and r.choice_tokens == (1, 2, 3)
        assert r.usage == {"prompt_tokens": 40, "scored_tokens": 6, "completion_tokens": 3}

    def test_a_tie_picks_the_first_best_choice(self) -> None:
        assert loglikelihood_response(("a", "b"), [-1.0, -1.0], [1, 1], prompt_tokens=1).text == "a"

    def test_round_trips_through_the_cache_format_and_reads_the_legacy_form(self) -> None:
        r = loglikelihood_response((" A", " B"), [-1.5, -0.5], [2, 3], prompt_tokens=7)
        assert Response.from_dict(r.to_dict()) == r
        legacy = {"text": " B", "error": None, "logprobs": [-1.5, -0.5],
                  "usage": {"prompt_tokens": 7, "scored_tokens": 5, "choice_tokens.1": 3, "choice_tokens.0": 2}}
        assert Response.from_dict(legacy) == r


class TestLocalPaths:
    """`hf:`/`vllm:` targets: a path that cannot be a hub id and does not exist is one usage error."""

    @pytest.mark.parametrize("target", ["/abs/path", "./dir", "../x", "~/x", ".", ".hidden", "C:\\x", "C:/x", "D:",
                                        "dir\\sub", "models/org/name", " ./padded "])
    def test_targets_that_can_only_be_paths(self, target: str) -> None:
        assert looks_local(target)

    @pytest.mark.parametrize("target", ["org/name", "Qwen/Qwen2.5-0.5B-Instruct", "gpt2", "smollm2", "org/name.v2",
                                        "checkpoints/step-4000"])
    def test_hub_ids_and_bare_names_stay_hub_ids(self, target: str) -> None:
        assert not looks_local(target)

    def test_a_missing_path_names_the_resolved_folder(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(tmp_path)
        with pytest.raises(TomConfigError, match=rf"--tom-model hf:./nodir: no such folder: {tmp_path / 'nodir'} "):
            require_existing("./nodir", uri="hf:./nodir")
        with pytest.raises(TomConfigError, match=r"no such file: .*model\.gguf"):
            require_existing("./model.gguf", uri="hf:./model.gguf")
        monkeypatch.setenv("HOME", str(tmp_path))
        with pytest.raises(TomConfigError, match=rf"no such folder: {tmp_path / 'x'} "):
            require_existing("~/x", uri="hf:~/x")
        with pytest.raises(TomConfigError, match="backslashes are not path separators"):
            require_existing("C:\\models\\x", uri="hf:C:\\models\\x")

    def test_existing_paths_and_hub_ids_pass(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "here").mkdir()
        for target in ("./here", str(tmp_path / "here"), ".", "org/name", "gpt2"):
            require_existing(target, uri=f"hf:{target}")
