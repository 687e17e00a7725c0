"""The `vllm:` backend's own logic, against a stand-in `vllm` module (vLLM itself needs a GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_tom.engine import Engine
from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.models import make_model
from pytest_tom.models.vllm import LOGLIK_KWARGS, sampling_kwargs
from pytest_tom.request import GenerationSettings, Message, Request

pytest.importorskip("transformers")

from helpers import fake_vllm  # noqa: E402
from helpers.tiny_models import CHATML, NO_SYSTEM, build_tiny_model  # noqa: E402

TESTS = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fake_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    fake_vllm.CONSTRUCTED.clear()
    fake_vllm.GENERATE_CALLS.clear()
    fake_vllm.FAIL_ON_LENGTH.clear()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "m")


def req(text: str, **kw) -> Request:  # type: ignore[no-untyped-def]
    settings = kw.pop("settings", None) or GenerationSettings(max_new_tokens=12)
    return Request(messages=(Message("system", "Be brief."), Message("user", text)), settings=settings, **kw)


class TestAvailability:
    def test_missing_vllm_names_the_extra(self, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "vllm", None)
        with pytest.raises(TomDependencyError, match=r"pip install 'pytest-tom\[vllm\]'"):
            make_model(f"vllm:{tiny}")

    def test_no_gpu_is_a_clear_dependency_error(self, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
        with pytest.raises(TomDependencyError, match=rf"needs a CUDA GPU.*use hf:{tiny}"):
            make_model(f"vllm:{tiny}")

    def test_parallelism_must_fit_the_visible_gpus(self, tiny: Path) -> None:
        with pytest.raises(TomConfigError, match="needs 4 GPUs, 2 visible"):
            make_model(f"vllm:{tiny}?tensor_parallel_size=2&data_parallel_size=2")


def test_uri_options_become_llm_arguments(tiny: Path) -> None:
    m = make_model(
        f"vllm:{tiny}?tensor_parallel_size=2&dtype=bfloat16&max_model_len=4096&gpu_memory_utilization=0.8&enforce_eager=true")
    assert m.llm_kwargs() == {
        "model": str(tiny), "tensor_parallel_size": 2, "dtype": "bfloat16", "seed": 0, "trust_remote_code": False,
        "max_model_len": 4096, "gpu_memory_utilization": 0.8, "enforce_eager": True, "enable_prefix_caching": True,
    }
    assert "enable_prefix_caching" not in make_model(f"vllm:{tiny}?prefix_caching=false").llm_kwargs()
    assert not fake_vllm.CONSTRUCTED, "the engine starts on first use, not when the URI is parsed"
    with pytest.raises(TomConfigError, match="unknown option 'tp'"):
        make_model(f"vllm:{tiny}?tp=2")


def test_settings_to_sampling_params() -> None:
    assert sampling_kwargs(GenerationSettings(max_new_tokens=64)) == {
        "n": 1, "max_tokens": 64, "temperature": 0.0, "top_p": 1.0, "skip_special_tokens": True,
    }
    sampled = sampling_kwargs(GenerationSettings(max_new_tokens=8, temperature=0.7, top_p=0.9, seed=5, stop=("\n",)))
    assert sampled == {
        "n": 1, "max_tokens": 8, "temperature": 0.7, "top_p": 0.9, "skip_special_tokens": True, "stop": ["\n"], "seed": 5,
    }
    fake_vllm.SamplingParams(**sampled)
    # Answer-contract stops are sent as stops kept in the output; the excluded ones are cut afterwards.
    kept = sampling_kwargs(GenerationSettings(max_new_tokens=8, stop=("\n",), stop_after=("[[A]]",)))
    assert kept["stop"] == ["\n", "[[A]]"] and kept["include_stop_str_in_output"] is True
    fake_vllm.SamplingParams(**kept)
    fake_vllm.SamplingParams(**LOGLIK_KWARGS)


def test_generation_sends_the_same_token_ids_as_the_hf_backend(tiny: Path) -> None:
    vm = make_model(f"vllm:{tiny}")
    hm = make_model(f"hf:{tiny}")
    requests = [req("Where is the ball?"),
                req("And now?" * 5, settings=GenerationSettings(max_new_tokens=3, temperature=0.5, seed=9))]
    out = vm.generate(requests)
    lengths = [len(hm.chat.encode_prompt(r.messages)) for r in requests]
    assert out[0].text == f"len={lengths[0]} max=12 t=0.0 seed=None dev=0,1"
    assert out[1].text == f"len={lengths[1]} max=3 t=0.5 seed=9 dev=0,1"
    assert out[0].usage == {"prompt_tokens": lengths[0], "completion_tokens": 3}
    assert fake_vllm.CONSTRUCTED == [vm.llm_kwargs()]
    assert vm.describe()["chat_template"]["hash"] == hm.describe()["chat_template"]["hash"]


def test_requests_are_chunked_by_batch_size(tiny: Path) -> None:
    vm = make_model(f"vllm:{tiny}?batch_size=3")
    assert vm.describe()["batch_size"] == 3
    out = vm.generate([req("q" * i) for i in range(7)])
    assert all(r.ok for r in out) and fake_vllm.GENERATE_CALLS == [3, 3, 1]


def test_the_engine_batch_size_overrides_the_uri(tiny: Path) -> None:
    vm = make_model(f"vllm:{tiny}?batch_size=3")
    Engine(vm, None, batch_size=4)
    assert vm.describe()["batch_size"] == 4
    vm.generate([req("q" * i) for i in range(7)])
    assert fake_vllm.GENERATE_CALLS == [4, 3]
    with pytest.raises(TomConfigError, match="batch_size must be at least 1"):
        make_model(f"vllm:{tiny}?batch_size=0")


def test_token_ids_are_exactly_the_hf_backends(tmp_path: Path) -> None:
    """One `TokenizedChat` serves both backends: same prompt ids, same choice ids, every template mode."""
    for name, template in (("chatml", CHATML), ("nosys", NO_SYSTEM), ("plain", None)):
        folder = build_tiny_model(tmp_path / name, chat_template=template)
        hm, vm = make_model(f"hf:{folder}"), make_model(f"vllm:{folder}")
        requests = [req("Where is the ball?"), req("Which?", kind="loglikelihood", choices=(" [[A]]", " the basket"))]
        items, failed = vm.work_items(requests)
        assert not failed
        ctx = list(hm.chat.encode_prompt(requests[1].messages))
        assert [it["ids"] for _, _, it in items] == [
            list(hm.chat.encode_prompt(requests[0].messages)),
            ctx + list(hm.chat.encode_choice(" [[A]]")),
            ctx + list(hm.chat.encode_choice(" the basket")),
        ]
        assert all(it["n_ctx"] == len(ctx) for _, k, it in items if k >= 0)
        assert vm.describe()["chat_template"] == hm.describe()["chat_template"]


def test_generation_prompt_false_reaches_the_shared_tokenizer(tmp_path: Path) -> None:
    """vLLM gets the ids `hf:` would send with the same option: no assistant header, a new fingerprint."""
    folder = build_tiny_model(tmp_path / "chatml", chat_template=CHATML)
    vm, hm = make_model(f"vllm:{folder}?generation_prompt=false"), make_model(f"hf:{folder}?generation_prompt=false")
    assert vm.chat.formatter.generation_prompt is False
    r = req("Where is the ball?")
    items, failed = vm.work_items([r])
    assert not failed and [it["ids"] for _, _, it in items] == [list(hm.chat.encode_prompt(r.messages))]
    assert vm.formatter.render(r.messages).endswith("<|im_start|>user\nWhere is the ball?<|im_end|>\n")
    default = make_model(f"vllm:{folder}")
    assert default.chat.encode_prompt(r.messages) != hm.chat.encode_prompt(r.messages)
    assert vm.fingerprint() != default.fingerprint()
    assert vm.describe()["chat_template"] == hm.describe()["chat_template"]


def test_loglikelihood_sums_prompt_logprobs_of_the_choice_tokens(tiny: Path) -> None:
    vm = make_model(f"vllm:{tiny}")
    choices = (" [[A]]", " [[B]]", " basket")
    r = req("Where is the ball?", kind="loglikelihood", choices=choices)
    out = vm.generate([r, req("plain"), req("empty choice", kind="loglikelihood", choices=(" A", ""))])
    ll = out[0]
    ctx = list(vm.tokenizer(vm.formatter.render(r.messages), add_special_tokens=False)["input_ids"])
    expected = []
    for c in choices:
        cont = vm.tokenizer(c, add_special_tokens=False)["input_ids"]
        ids = ctx + cont
        expected.append(sum(fake_vllm.fake_logprob(p, ids[p]) for p in range(len(ctx), len(ids))))
    assert ll.logprobs == pytest.approx(expected)
    assert ll.choice_tokens == (6, 6, 7) and ll.usage == {"prompt_tokens": len(ctx), "scored_tokens": 19}
    assert ll.text == choices[max(range(3), key=lambda i: expected[i])]
    assert out[1].text and out[1].text.startswith("len=")
    assert out[2].error and "choice 1 ('') tokenises to nothing" in out[2].error


def test_engine_failures_become_errors(tiny: Path) -> None:
    vm = make_model(f"vllm:{tiny}?batch_size=1")
    hm = make_model(f"hf:{tiny}")
    bad = req("this one breaks")
    fake_vllm.FAIL_ON_LENGTH.add(len(hm.chat.encode_prompt(bad.messages)))
    out = vm.generate([req("fine"), bad])
    assert out[0].ok and out[1].error and "fake engine failure" in out[1].error


def test_fingerprint_covers_template_and_weights_without_starting_the_engine(tiny: Path, tmp_path: Path) -> None:
    a = make_model(f"vllm:{tiny}")
    assert a.fingerprint() == make_model(f"vllm:{tiny}?tensor_parallel_size=2&batch_size=7").fingerprint()
    assert a.fingerprint() != make_model(f"vllm:{tiny}?chat_template=none").fingerprint()
    assert a.fingerprint() != make_model(f"vllm:{tiny}?dtype=float16").fingerprint()
    assert a.fingerprint() != make_model(f"hf:{tiny}").fingerprint()
    other = build_tiny_model(tmp_path / "other", seed=3)
    assert make_model(f"vllm:{other}").fingerprint() != a.fingerprint()
    assert not fake_vllm.CONSTRUCTED


def test_system_folding_matches_hf(tmp_path: Path) -> None:
    folder = build_tiny_model(tmp_path / "nosys", chat_template=NO_SYSTEM)
    vm = make_model(f"vllm:{folder}")
    assert vm.formatter.fold
    assert vm.formatter.render(req("hi").messages) == make_model(f"hf:{folder}").formatter.render(req("hi").messages)


@pytest.fixture
def spawnable_fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spawned workers import `vllm` afresh, so the stand-in goes on their sys.path as a package."""
    pkg = tmp_path / "site" / "vllm"
    pkg.mkdir(parents=True)
    pkg.joinpath("__init__.py").write_text(
        "from helpers.fake_vllm import *  # noqa\nfrom helpers.fake_vllm import __version__  # noqa\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")


@pytest.mark.usefixtures("spawnable_fake_vllm")
def test_data_parallel_workers_split_the_requests(tiny: Path) -> None:
    vm = make_model(f"vllm:{tiny}?data_parallel_size=2&batch_size=2")
    try:
        out = vm.generate([req("q" * i) for i in range(10)] + [req("x", kind="loglikelihood", choices=(" A", " B"))])
    finally:
        vm.close()
    assert all(r.ok for r in out[:10])
    devices = {r.text.rsplit("dev=", 1)[1] for r in out[:10] if r.text}
    assert devices == {"3", "5"}, "each worker must see only its own GPU"
    assert out[10].logprobs is not None and len(out[10].logprobs) == 2
    assert vm.describe()["gpus"] == ["3", "5"]


@pytest.mark.usefixtures("spawnable_fake_vllm")
def test_a_data_parallel_worker_that_cannot_start_is_a_clear_error(tiny: Path) -> None:
    from pytest_tom.errors import TomModelError

    vm = make_model(f"vllm:{tiny}?data_parallel_size=2&max_num_seqs=0")
    with pytest.raises(TomModelError, match="failed to start: ValueError: max_num_seqs must be at least 1"):
        vm.generate([req("q")])
