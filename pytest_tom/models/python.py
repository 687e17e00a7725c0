"""`python:package.module:callable`: the user's own model code. The target may be a batched callable, a
`pytest_tom.per_prompt` callable, a `Model` subclass instance, or a zero-argument factory (class or function) that
returns either.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from pytest_tom.errors import TomConfigError
from pytest_tom.models.base import CallableModel, Model


def as_model(obj: Any, *, uri: str = "") -> Model:
    """Adapt whatever a user hands in (conftest fixture or URI) to a `Model`."""
    if isinstance(obj, Model):
        if uri and not obj.uri:
            obj.uri = uri
        return obj
    if (inspect.isclass(obj) and issubclass(obj, Model)) or getattr(obj, "tom_factory", False):
        return as_model(obj(), uri=uri)
    if callable(obj):
        return CallableModel(obj, uri=uri)
    raise TomConfigError(f"{uri or obj!r}: expected a pytest_tom Model or a callable, got {type(obj).__name__}")


def import_target(target: str, where: str) -> Any:
    """The object "package.module:attr.sub" names; `where` starts the `TomConfigError` when it cannot be imported."""
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise TomConfigError(f"{where}: cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TomConfigError(f"{where}: {module_name} has no attribute {attr!r}") from None
    return obj


def make(spec: str) -> Model:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise TomConfigError(f"--tom-model python:{spec}: expected python:package.module:callable")
    return as_model(import_target(spec, f"--tom-model python:{spec}"), uri=f"python:{spec}")
