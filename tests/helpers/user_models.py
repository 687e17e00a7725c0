"""A user's model module for pytester runs, with a log of the calls it receives (to count model calls exactly)."""

from __future__ import annotations

from pathlib import Path

import pytest


def install(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, log: Path, module: str, source: str,
            env: str) -> Path:
    """Write `source` as `module`.py on the run's path; the module appends to the file named by `$env` (returned)."""
    pytester.makepyfile(**{module: source})
    pytester.syspathinsert()
    monkeypatch.setenv(env, str(log))
    return log
