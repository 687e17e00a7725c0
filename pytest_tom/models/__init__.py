"""Model backends, resolved from `--tom-model` URIs by scheme.

Adding a backend is one new file plus one line in `BUILTIN`. Factories are named
as "module:function" strings and imported only when their scheme is used, so
`import pytest_tom` never loads torch, openai or vllm. Third parties add schemes
through the `pytest_tom.models` entry-point group or the `pytest_tom_make_model`
hook.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points

from pytest_tom.errors import TomConfigError
from pytest_tom.models.base import CallableModel, Model, per_prompt
from pytest_tom.models.python import as_model

__all__ = ["BUILTIN", "CallableModel", "Model", "as_model", "make_model", "per_prompt", "schemes"]

BUILTIN: dict[str, str] = {
    "random": "pytest_tom.models.random:make",
    "python": "pytest_tom.models.python:make",
    "replay": "pytest_tom.models.replay:make",
    "hf": "pytest_tom.models.hf:make",
    "smollm2": "pytest_tom.models.hf:make_smollm2",
    "openai": "pytest_tom.models.openai:make",
    "vllm": "pytest_tom.models.vllm:make",
}


def schemes() -> dict[str, str]:
    found = dict(BUILTIN)
    for ep in entry_points(group="pytest_tom.models"):
        found.setdefault(ep.name, ep.value)
    return found


def _load(target: str) -> Callable[[str], Model]:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def make_model(uri: str) -> Model:
    """Resolve a model URI such as ``random:42`` or ``python:mypkg.model:generate``."""
    scheme, _, spec = uri.partition(":")
    known = schemes()
    if scheme not in known:
        raise TomConfigError(
            f"--tom-model {uri!r}: unknown scheme {scheme!r}; known: {', '.join(sorted(known))} "
            "(a third-party backend registers a scheme with the 'pytest_tom.models' entry point)"
        )
    model = _load(known[scheme])(spec)
    if not model.uri:
        model.uri = uri
    return model
