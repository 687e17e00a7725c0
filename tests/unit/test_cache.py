"""The on-disk cache survives concurrent writers (pytest-xdist workers share one file)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from pytest_tom.cache import ResponseCache, cache_key
from pytest_tom.types import Response


def _writer(directory: str, worker: int, n: int) -> None:
    cache = ResponseCache(Path(directory))
    for i in range(n):
        cache.put_many("fp", [(f"w{worker}-{i}", Response(text=f"answer {worker}/{i}"))])
    cache.close()


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = ResponseCache(tmp_path)
    assert len(cache) == 600
    got = cache.get_many("fp", [f"w3-{i}" for i in range(150)])
    assert got["w3-149"].text == "answer 3/149" and got["w3-0"].cached


def test_errors_are_not_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    assert cache.put_many("fp", [("a", Response(error="timeout")), ("b", Response(text="ok"))]) == 1
    assert set(cache.get_many("fp", ["a", "b"])) == {"b"}


def test_key_separates_models() -> None:
    assert cache_key("model-a", "k") != cache_key("model-b", "k")
