"""The request engine and its on-disk response cache: the only code that calls a model."""

from __future__ import annotations

from pytest_tom.engine.cache import CACHE_SCHEMA_VERSION, ResponseCache, cache_key
from pytest_tom.engine.engine import Engine, EngineStats, ModelResolver, ProgressCallback, error_record

__all__ = ["CACHE_SCHEMA_VERSION", "Engine", "EngineStats", "ModelResolver", "ProgressCallback", "ResponseCache", "cache_key",
           "error_record"]
