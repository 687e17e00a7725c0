"""The run without pytest: the request engine and its on-disk response cache (the only code that calls a model). Beside
them, what the run layer (`pytest_tom.run`, the pytest glue) hands to plain code: `suites` (benchmarks loaded with their
settings, samples drawn), `planning` (which samples are answered together, and the blocks pytest-xdist workers share)
and `records` (every record of the run, the judging of derived results). These are imported by their module path, not
from here, so `import pytest_tom.engine` stays light.
"""

from __future__ import annotations

from pytest_tom.engine.cache import CACHE_SCHEMA_VERSION, ResponseCache, cache_key
from pytest_tom.engine.engine import Engine, ProgressCallback, error_record

__all__ = ["CACHE_SCHEMA_VERSION", "Engine", "ProgressCallback", "ResponseCache", "cache_key", "error_record"]
