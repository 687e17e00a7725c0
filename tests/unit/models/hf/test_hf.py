"""The `hf:` backend against tiny random checkpoints built offline (no downloads)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from pytest_tom.engine import Engine, ResponseCache
from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.models import make_model
from pytest_tom.models._chat import PLAIN_SEPARATOR
from pytest_tom.models._common import MiB, file_digest, parse_spec
from pytest_tom.record import Outcome, Record
from pytest_tom.request import GenerationSettings, Message, Request
from pytest_tom.sample import Sample, Story

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.tiny_models import CHATML, DROPS_SYSTEM, NO_SYSTEM, build_tiny_model  # noqa: E402

SYSTEM = "You answer ToM questions."


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "chatml", chat_template=CHATML)


@pytest.fixture(scope="module")
def tiny_model(tiny: Path):  # type: ignore[no-untyped-def]
    model = make_model(f"hf:{tiny}?batch_size=8")
    model.ensure_loaded()
    return model


def req(text: str, *, system: str | None = SYSTEM, max_new_tokens: int = 10, **kw) -> Request:  # type: ignore[no-untyped-def]
    msgs = ((Message("system", system),) if system else ()) + (Message("user", text),)
    settings = kw.pop("settings", None) or GenerationSettings(max_new_tokens=max_new_tokens)
    return Request(messages=msgs, settings=settings, **kw)


PROMPTS = [f"Where is the ball{'?' * (i * 3)} Anne{' looks' * (i % 4)}" for i in range(9)]


def reference_greedy(model, request: Request) -> str:  # type: ignore[no-untyped-def]
    """transformers' own greedy decoding on one unpadded prompt, outside our batching code."""
    ids = torch.tensor([list(model.chat.encode_prompt(request.messages))], device=model._input_device)
    with torch.inference_mode():
        out = model.model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=request.settings.max_new_tokens,
            pad_token_id=model.pad_id, eos_token_id=model.eos_ids, temperature=None, top_p=None, top_k=None,
        )
    new = out[0, ids.shape[1]:].tolist()
    eos = set(model.eos_ids)
    cut = next((k for k, t in enumerate(new) if t in eos), len(new))
    return model.tokenizer.decode(new[:cut], skip_special_tokens=True)


# -- URI options ---------------------------------------------------------------------------------


class TestSpec:
    def test_query_options_are_typed_and_decoded(self) -> None:
        from pytest_tom.models.hf import OPTIONS

        spec = parse_spec("hf", "org/model:v2?dtype=bf16&trust_remote_code=yes&chat_template=/t%26x.jinja", OPTIONS)
        assert spec.target == "org/model:v2"
        assert spec["dtype"] == "bf16" and spec["trust_remote_code"] is True
        assert spec["chat_template"] == "/t&x.jinja"
        assert spec["batch_size"] == "auto"

    def test_unknown_option_lists_the_known_ones(self, tiny: Path) -> None:
        with pytest.raises(TomConfigError, match=r"unknown option 'dtpye'.*dtype"):
            make_model(f"hf:{tiny}?dtpye=float16")

    def test_bad_values_are_config_errors(self, tiny: Path) -> None:
        with pytest.raises(TomConfigError, match="expected one of"):
            make_model(f"hf:{tiny}?dtype=int3")
        with pytest.raises(TomConfigError, match="true or false"):
            make_model(f"hf:{tiny}?trust_remote_code=maybe")
        with pytest.raises(TomConfigError, match="batch_size"):
            make_model(f"hf:{tiny}?batch_size=0")

    def test_missing_transformers_names_the_extra(self, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "transformers", None)
        with pytest.raises(TomDependencyError, match=r"pip install 'pytest-tom\[hf\]'"):
            make_model(f"hf:{tiny}")

    def test_cpu_defaults(self, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without CUDA or MPS: cpu, float32 (half precision on CPU is slow and inexact), batch size 16."""
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
        if getattr(torch.backends, "mps", None) is not None:
            monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
        model = make_model(f"hf:{tiny}")
        model.ensure_loaded()
        info = model.describe()
        assert info["device"] == "cpu" and info["dtype"] == "float32" and info["loaded_dtype"] == "float32"
        assert info["batch_size"] == info["initial_batch_size"] == 16
        assert info["parameters"] > 0 and info["chat_template"]["source"] == "tokenizer"

    def test_gpu_defaults(self, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """With CUDA (pretended: the weights are never loaded): cuda, the checkpoint's dtype, batch size 64."""
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        info = make_model(f"hf:{tiny}").describe()
        assert info["device"] == "cuda" and info["dtype"] == "auto" and info["batch_size"] == 64
        assert make_model(f"hf:{tiny}?device=cpu").describe()["device"] == "cpu", "an explicit device wins"

    def test_the_engine_batch_size_is_the_new_starting_size(self, tiny: Path) -> None:
        model = make_model(f"hf:{tiny}?batch_size=8")
        Engine(model, None, batch_size=5)
        info = model.describe()
        assert info["batch_size"] == info["initial_batch_size"] == 5


# -- batched generation --------------------------------------------------------------------------


class TestGeneration:
    def test_left_padded_batches_match_unbatched_greedy(self, tiny_model) -> None:  # type: ignore[no-untyped-def]
        requests = [req(p) for p in PROMPTS]
        lengths = {len(tiny_model.chat.encode_prompt(r.messages)) for r in requests}
        assert len(lengths) > 3, "prompts must differ in length so that padding happens"
        tiny_model.batch_size = 8
        batched = tiny_model.generate(requests)
        assert all(r.ok for r in batched)
        expected = [reference_greedy(tiny_model, r) for r in requests]
        assert [r.text for r in batched] == expected
        assert len(set(expected)) > 3, "a degenerate model would make this test vacuous"

    def test_longest_first_batches_keep_the_request_order(self, tiny_model, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
        seen: list[list[int]] = []
        original = tiny_model._generate_batch

        def spy(items):  # type: ignore[no-untyped-def]
            seen.append([len(it.ids) for it in items])
            return original(items)

        monkeypatch.setattr(tiny_model, "_generate_batch", spy)
        monkeypatch.setattr(tiny_model, "prefix_cache", False)  # the plain path; prefix reuse orders by sharing
        tiny_model.batch_size = 4
        shuffled = [PROMPTS[i] for i in (3, 0, 8, 5, 1, 7, 2, 6, 4)]
        out = tiny_model.generate([req(p) for p in shuffled])
        flat = [n for batch in seen for n in batch]
        assert flat == sorted(flat, reverse=True)
        assert [len(b) for b in seen] == [4, 4, 1]
        singles = {p: tiny_model.generate([req(p)])[0].text for p in shuffled}
        assert [r.text for r in out] == [singles[p] for p in shuffled]

    def test_token_budget_and_usage(self, tiny_model) -> None:  # type: ignore[no-untyped-def]
        out = tiny_model.generate([req(PROMPTS[0], max_new_tokens=3), req(PROMPTS[0], max_new_tokens=7)])
        assert out[0].usage["completion_tokens"] <= 3 and out[1].usage["completion_tokens"] <= 7
        assert out[1].text.startswith(out[0].text)
        assert out[0].usage["prompt_tokens"] == len(tiny_model.chat.encode_prompt(req(PROMPTS[0]).messages))

    def test_stop_strings_cut_the_answer(self, tiny_model) -> None:  # type: ignore[no-untyped-def]
        full = tiny_model.generate([req(PROMPTS[2], max_new_tokens=12)])[0].text
        assert len(full) >= 6
        stop = full[3:5]
        cut = tiny_model.generate([req(PROMPTS[2], settings=GenerationSettings(max_new_tokens=12, stop=(stop,)))])[0].text
        assert cut == full[: full.find(stop)]

    def test_seeded_sampling_is_reproducible_and_batch_independent(self, tiny_model) -> None:  # type: ignore[no-untyped-def]
        s = GenerationSettings(max_new_tokens=12, temperature=1.5, top_p=0.95, seed=11)
        alone = tiny_model.generate([req(PROMPTS[1], settings=s)])[0].text
        mixed = tiny_model.generate([req(p, settings=s) for p in PROMPTS[:4]])
        assert mixed[1].text == alone
        greedy = tiny_model.generate([req(PROMPTS[1], max_new_tokens=12)])[0].text
        other_seeds = {tiny_model.generate([req(PROMPTS[1], settings=GenerationSettings(12, 1.5, 0.95, seed))])[0].text
                       for seed in range(5)}
        assert other_seeds - {greedy}, "temperature must reach the sampler"

    def test_prompt_longer_than_the_context_is_an_error(self, tiny_model) -> None:  # type: ignore[no-untyped-def]
        out = tiny_model.generate([req("x" * 2100), req(PROMPTS[0])])
        assert out[0].error and "exceeds" in out[0].error
        assert out[1].ok


# -- out-of-memory back-off ----------------------------------------------------------------------


def _oom_above(model, limit: int, exc_factory, monkeypatch: pytest.MonkeyPatch, name: str = "_generate_batch") -> list[int]:  # type: ignore[no-untyped-def]
    sizes: list[int] = []
    original = getattr(model, name)

    def flaky(items):  # type: ignore[no-untyped-def]
        sizes.append(len(items))
        if len(items) > limit:
            raise exc_factory()
        return original(items)

    monkeypatch.setattr(model, name, flaky)
    return sizes


@pytest.mark.parametrize(
    "exc_factory",
    [lambda: torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
     lambda: RuntimeError("CUDA out of memory.")],
    ids=["OutOfMemoryError", "RuntimeError"],
)
def test_out_of_memory_halves_the_batch_and_answers_everything(tiny: Path, exc_factory, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    model = make_model(f"hf:{tiny}?batch_size=16")
    requests = [req(p) for p in PROMPTS] + [req(p + "!") for p in PROMPTS]
    expected = [r.text for r in model.generate(requests)]
    sizes = _oom_above(model, 3, exc_factory, monkeypatch)
    out = model.generate(requests)
    assert [r.text for r in out] == expected and all(r.ok for r in out)
    assert sizes[:4] == [16, 8, 4, 2]
    assert model.batch_size == 2 and model.batches.backoffs == 3
    info = model.describe()
    assert info["oom_backoffs"] == 3 and info["batch_size"] == 2 and info["initial_batch_size"] == 16


def test_out_of_memory_at_batch_size_one_is_an_error_not_a_crash(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = make_model(f"hf:{tiny}?batch_size=2")
    _oom_above(model, 0, lambda: torch.cuda.OutOfMemoryError("CUDA out of memory"), monkeypatch)
    out = model.generate([req(PROMPTS[0]), req(PROMPTS[1])])
    assert all(r.error and "out of memory even at batch size 1" in r.error for r in out)


def test_loglikelihood_batches_back_off_too(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = make_model(f"hf:{tiny}?batch_size=8")
    requests = [req(p, kind="loglikelihood", choices=(" [[A]]", " [[B]]", " [[C]]")) for p in PROMPTS[:4]]
    expected = model.generate(requests)
    _oom_above(model, 2, lambda: RuntimeError("CUDA out of memory"), monkeypatch, "_loglik_batch")
    out = model.generate(requests)
    assert model.batch_size == 2
    for a, b in zip(out, expected, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_a_failing_request_does_not_sink_its_batch(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = make_model(f"hf:{tiny}?batch_size=8")
    poison = len(model.chat.encode_prompt(req(PROMPTS[4]).messages))
    original = model._generate_batch

    def picky(items):  # type: ignore[no-untyped-def]
        if any(len(it.ids) == poison for it in items):
            raise ValueError("bad prompt")
        return original(items)

    monkeypatch.setattr(model, "_generate_batch", picky)
    out = model.generate([req(p) for p in PROMPTS])
    assert [bool(r.error) for r in out] == [i == 4 for i in range(len(PROMPTS))]
    assert "ValueError: bad prompt" in (out[4].error or "")


# -- chat templates ------------------------------------------------------------------------------


class TestChatTemplates:
    def test_native_system_role(self, tiny_model) -> None:  # type: ignore[no-untyped-def]
        fmt = tiny_model.formatter
        assert fmt.system_supported and not fmt.fold
        text = fmt.render(req("hello").messages)
        assert text == f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"

    @pytest.mark.parametrize("template", [NO_SYSTEM, DROPS_SYSTEM], ids=["raises", "drops"])
    def test_system_is_folded_when_the_template_lacks_it(self, tmp_path: Path, template: str) -> None:
        folder = build_tiny_model(tmp_path / "m", chat_template=template)
        model = make_model(f"hf:{folder}")
        assert model.formatter.system_supported is False and model.formatter.fold
        text = model.formatter.render(req("hello").messages)
        assert f"user\n{SYSTEM}{PLAIN_SEPARATOR}hello" in text
        assert text.count(SYSTEM) == 1
        ids = model.chat.encode_prompt(req("hello").messages)
        if template == NO_SYSTEM:  # the template writes BOS itself; the tokenizer must not add a second
            assert ids[0] == model.tokenizer.bos_token_id and ids[1] != model.tokenizer.bos_token_id
        assert model.describe()["chat_template"]["system_role"] == "folded into the first user turn"
        assert model.generate([req("hello")])[0].ok

    def test_keep_mode_reports_the_template_error(self, tmp_path: Path) -> None:
        folder = build_tiny_model(tmp_path / "m", chat_template=NO_SYSTEM)
        out = make_model(f"hf:{folder}?system=keep").generate([req("hi"), req("hi", system=None)])
        assert out[0].error and "System role not supported" in out[0].error
        assert out[1].ok

    def test_disable_and_override(self, tiny: Path, tmp_path: Path) -> None:
        plain = make_model(f"hf:{tiny}?chat_template=none")
        assert plain.formatter.plain and plain.formatter.render(req("hello").messages) == f"{SYSTEM}\n\nhello"
        # Plain prompts get the tokenizer's own special tokens (BOS here).
        assert plain.chat.encode_prompt(req("hello").messages)[0] == plain.tokenizer.bos_token_id
        override = tmp_path / "mine.jinja"
        override.write_text("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}[assistant] ")
        custom = make_model(f"hf:{tiny}?chat_template={override}")
        assert custom.formatter.render(req("hello").messages) == f"[system] {SYSTEM}\n[user] hello\n[assistant] "
        assert custom.describe()["chat_template"]["source"] == f"file:{override}"
        native = make_model(f"hf:{tiny}")
        fps = {plain.fingerprint(), custom.fingerprint(), native.fingerprint()}
        hashes = {m.describe()["chat_template"]["hash"] for m in (plain, custom, native)}
        assert len(fps) == 3 and len(hashes) == 3
        assert custom.generate([req("hello")])[0].ok

    def test_generation_prompt_false_leaves_the_header_to_the_model(self, tiny: Path, tmp_path: Path) -> None:
        """ToMBench's and ToMATO's local runners: the prompt ends after the user turn; a new fingerprint."""
        model, default = make_model(f"hf:{tiny}?generation_prompt=false"), make_model(f"hf:{tiny}")
        text = model.formatter.render(req("hello").messages)
        assert text == f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n"
        assert text == model.tokenizer.apply_chat_template([m.to_dict() for m in req("hello").messages], tokenize=False)
        assert model.describe()["chat_template"]["generation_prompt"] is False
        assert model.fingerprint() != default.fingerprint()
        assert model.generate([req("hello")])[0].ok
        folder = build_tiny_model(tmp_path / "base", chat_template=None)
        with pytest.raises(TomConfigError, match="generation_prompt=false needs a chat template"):
            make_model(f"hf:{folder}?generation_prompt=false")

    def test_missing_template_file_is_a_config_error(self, tiny: Path, tmp_path: Path) -> None:
        with pytest.raises(TomConfigError, match="cannot read"):
            make_model(f"hf:{tiny}?chat_template={tmp_path / 'nope.jinja'}")

    def test_a_model_without_template_uses_plain_prompts(self, tmp_path: Path) -> None:
        folder = build_tiny_model(tmp_path / "base", chat_template=None)
        model = make_model(f"hf:{folder}")
        assert model.formatter.plain and model.describe()["chat_template"]["source"] == "none"


# -- fingerprints --------------------------------------------------------------------------------


class TestFingerprint:
    def test_changed_template_file_changes_the_fingerprint(self, tiny: Path, tmp_path: Path) -> None:
        copy = Path(shutil.copytree(tiny, tmp_path / "copy"))
        before = make_model(f"hf:{copy}").fingerprint()
        assert make_model(f"hf:{copy}").fingerprint() == before
        template = copy / "chat_template.jinja"
        if template.exists():
            template.write_text(CHATML.replace("<|im_start|>assistant", "<|im_start|>model"))
        else:  # older transformers keep the template inside tokenizer_config.json
            cfg = copy / "tokenizer_config.json"
            cfg.write_text(cfg.read_text().replace("<|im_start|>assistant", "<|im_start|>model"))
        after = make_model(f"hf:{copy}")
        assert after.fingerprint() != before
        assert after.describe()["tokenizer_hash"] != make_model(f"hf:{tiny}").describe()["tokenizer_hash"]

    def test_new_weights_at_the_same_path_change_it_and_mtime_does_not(self, tmp_path: Path) -> None:
        folder = build_tiny_model(tmp_path / "ckpt", seed=0)
        first = make_model(f"hf:{folder}").fingerprint()
        build_tiny_model(folder, seed=1)
        second = make_model(f"hf:{folder}").fingerprint()
        assert second != first
        build_tiny_model(folder, seed=0)  # same weights again, new mtime
        assert make_model(f"hf:{folder}").fingerprint() == first

    def test_dtype_is_part_of_the_identity(self, tiny: Path) -> None:
        assert make_model(f"hf:{tiny}").fingerprint() != make_model(f"hf:{tiny}?dtype=bfloat16").fingerprint()
        assert make_model(f"hf:{tiny}").fingerprint() == make_model(f"hf:{tiny}?batch_size=3").fingerprint()

    def test_sampled_digest_trade_off(self, tmp_path: Path) -> None:
        big = tmp_path / "w.safetensors"
        data = bytearray(b"\x01" * (5 * MiB))
        big.write_bytes(bytes(data))
        sampled, full = file_digest(big), file_digest(big, full=True)
        data[(5 * MiB - MiB) // 2 + 10] ^= 0xFF  # inside the middle sample
        big.write_bytes(bytes(data))
        assert file_digest(big) != sampled
        sampled, full = file_digest(big), file_digest(big, full=True)
        data[int(1.2 * MiB)] ^= 0xFF  # between samples: only the full hash sees it
        big.write_bytes(bytes(data))
        assert file_digest(big) == sampled and file_digest(big, full=True) != full
        big.write_bytes(bytes(data) + b"\0")  # any size change is seen
        assert file_digest(big) != sampled

    def test_full_mode_is_an_option(self, tiny: Path) -> None:
        a = make_model(f"hf:{tiny}?fingerprint=full")
        assert a.describe()["fingerprint_mode"] == "full"
        assert a.fingerprint() == make_model(f"hf:{tiny}").fingerprint()  # small files are always hashed in full


# -- log-likelihood ------------------------------------------------------------------------------


def manual_loglik(model, request: Request, choice: str) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    ctx = list(model.chat.encode_prompt(request.messages))
    cont = model.tokenizer(choice, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([ctx + cont], device=model._input_device)
    with torch.inference_mode():
        logits = model.model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return sum(logp[len(ctx) + j - 1, t].item() for j, t in enumerate(cont)), len(cont)


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Absolute position embeddings: left padding is only right with explicit position ids."""
    model = make_model(f"hf:{build_tiny_model(tmp_path_factory.mktemp('gpt2') / 'm', arch='gpt2')}")
    model.ensure_loaded()
    return model


@pytest.fixture(params=["llama", "gpt2"])
def any_arch(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return request.getfixturevalue("tiny_model" if request.param == "llama" else "tiny_gpt2")


def test_gpt2_left_padded_batches_match_unbatched_greedy(tiny_gpt2) -> None:  # type: ignore[no-untyped-def]
    requests = [req(p) for p in PROMPTS]
    tiny_gpt2.batch_size = 8
    assert [r.text for r in tiny_gpt2.generate(requests)] == [reference_greedy(tiny_gpt2, r) for r in requests]


def test_loglikelihood_equals_a_manual_computation(any_arch) -> None:  # type: ignore[no-untyped-def]
    tiny_model = any_arch
    choices = (" [[A]]", " [[B]]", " The basket", " the box she left it in")
    requests = [req(p, kind="loglikelihood", choices=choices) for p in PROMPTS[:5]]
    tiny_model.batch_size = 6  # rows of different requests share batches
    out = tiny_model.generate(requests)
    for request, response in zip(requests, out, strict=True):
        assert response.ok and response.logprobs is not None
        expected = [manual_loglik(tiny_model, request, c) for c in choices]
        assert response.logprobs == pytest.approx([e[0] for e in expected], abs=1e-4)
        assert response.choice_tokens == tuple(e[1] for e in expected)
        assert response.text == choices[max(range(len(choices)), key=lambda i: response.logprobs[i])]
        prompt_tokens = len(tiny_model.chat.encode_prompt(request.messages))
        assert response.usage == {"prompt_tokens": prompt_tokens, "scored_tokens": sum(e[1] for e in expected)}
    assert len({r.logprobs for r in out}) == len(out)


def test_mixed_generate_and_loglikelihood_requests(tiny_model) -> None:  # type: ignore[no-untyped-def]
    requests = [req(PROMPTS[0]), req(PROMPTS[1], kind="loglikelihood", choices=(" A", " B")),
                req(PROMPTS[2], kind="loglikelihood", choices=())]
    out = tiny_model.generate(requests)
    assert out[0].text is not None and out[0].logprobs is None
    assert out[1].logprobs is not None and len(out[1].logprobs) == 2
    assert out[2].error and "at least one choice" in out[2].error


def test_a_choice_that_tokenises_to_nothing_is_an_error(tiny_model) -> None:  # type: ignore[no-untyped-def]
    out = tiny_model.generate([req(PROMPTS[0], kind="loglikelihood", choices=(" A", "")),
                               req(PROMPTS[1], kind="loglikelihood", choices=(" A",))])
    assert out[0].error and "choice 1 ('') tokenises to nothing" in out[0].error
    assert out[1].ok


# -- engine and cache ----------------------------------------------------------------------------


def _programs(prompts: list[str]) -> dict[str, tuple[Sample[None], object]]:
    def program(sample: Sample[None]):  # type: ignore[no-untyped-def]
        responses = yield [req(sample.question)]
        return Record("t", sample.id, Outcome.CORRECT, {}, parsed=responses[0].text)

    out = {}
    for i, p in enumerate(prompts):
        sample: Sample[None] = Sample("t", f"q{i}", Story(""), p, (), "", (), {}, (), None)
        out[f"q{i}"] = (sample, program(sample))
    return out


def test_a_cached_run_never_loads_the_weights(tiny: Path, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    first_model = make_model(f"hf:{tiny}")
    first = Engine(first_model, cache).run(_programs(PROMPTS[:4]))
    assert first_model.model is not None
    second_model = make_model(f"hf:{tiny}")
    engine = Engine(second_model, cache)
    second = engine.run(_programs(PROMPTS[:4]))
    assert engine.stats.cache_hits == 4 and engine.stats.model_requests == 0
    assert second_model.model is None
    assert {k: r.parsed for k, r in first.items()} == {k: r.parsed for k, r in second.items()}
    assert engine.stats.to_dict()["usage"] == {}
    cache.close()


TOJSON = "{{ bos_token }}{% for m in messages %}{{ m['content'] | tojson }}\n{% endfor %}\n"


@pytest.mark.parametrize("template", [CHATML, NO_SYSTEM, CHATML + "\n", TOJSON])
def test_the_tokenizer_free_renderer_matches_transformers(tiny: Path, template: str) -> None:
    """`openai:` with a template file must render exactly what `hf:` would."""
    from pytest_tom.models._chat import jinja_renderer

    tok = make_model(f"hf:{tiny}").tokenizer
    messages = [{"role": "user", "content": 'Say "hi"\nplease'}]
    render = jinja_renderer(template, {"bos_token": tok.bos_token, "eos_token": tok.eos_token})
    for generation_prompt in (True, False):
        expected = tok.apply_chat_template(messages, chat_template=template, tokenize=False,
                                           add_generation_prompt=generation_prompt)
        assert render(messages, False, generation_prompt) == expected


def test_a_tokenizer_that_cannot_be_loaded_is_one_configuration_error(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers' OSError (no connection, no such model) stops the run once instead of failing every item."""
    import transformers

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", refuse)
    with pytest.raises(TomConfigError, match=rf"^--tom-model hf:{tiny}: We couldn't connect to 'https://huggingface.co'"):
        make_model(f"hf:{tiny}")
