"""The on-disk cache: concurrent writers (pytest-xdist workers share one file), keys, what it stores."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

from pytest_tom.engine import CACHE_SCHEMA_VERSION, ResponseCache, cache_key
from pytest_tom.request import Response


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
    assert cache_key("model-a", "k") != cache_key("model-a", "k2")


def test_key_is_unchanged_from_before_the_refactor() -> None:
    """A value computed with the pre-refactor code: existing caches keep answering."""
    assert CACHE_SCHEMA_VERSION == 1
    assert cache_key("fp", "k") == "9bd7ea79f2e48e6bbd2bf5aacd75abf28f8c83b38794de275d37ed680d469a54"


def test_a_response_comes_back_with_every_typed_field(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    full = Response(text="B", logprobs=(-1.5, -0.25), choice_tokens=(3, 4), usage={"prompt_tokens": 7})
    vec = Response(vector=(0.5, -1.0, 2.0))
    cache.put_many("fp", [("ll", full), ("vec", vec)])
    got = ResponseCache(tmp_path).get_many("fp", ["ll", "vec", "absent"])
    assert set(got) == {"ll", "vec"}
    assert got["ll"].logprobs == (-1.5, -0.25) and got["ll"].choice_tokens == (3, 4) and got["ll"].usage == {"prompt_tokens": 7}
    assert got["ll"].text == "B" and got["ll"].cached
    assert got["vec"].vector == (0.5, -1.0, 2.0) and got["vec"].text is None
    assert got["ll"] == Response(text="B", logprobs=(-1.5, -0.25), choice_tokens=(3, 4), usage={"prompt_tokens": 7}, cached=True)


def test_a_lookup_is_scoped_to_the_fingerprint(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put_many("fp-1", [("k", Response(text="one"))])
    assert cache.get_many("fp-2", ["k"]) == {}
    assert cache.get_many("fp-1", ["k"])["k"].text == "one"


def test_a_later_answer_replaces_an_earlier_one(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put_many("fp", [("k", Response(text="old"))])
    cache.put_many("fp", [("k", Response(text="new"))])
    assert len(cache) == 1 and cache.get_many("fp", ["k"])["k"].text == "new"


def test_many_keys_are_looked_up_in_chunks(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put_many("fp", [(f"k{i}", Response(text=str(i))) for i in range(1203)])
    got = cache.get_many("fp", [f"k{i}" for i in range(1203)] + ["missing"])
    assert len(got) == 1203 and got["k1202"].text == "1202"


def test_entries_written_before_choice_tokens_was_a_field_read_back_typed(tmp_path: Path) -> None:
    """Old cache rows kept the per-choice token counts in `usage` under a key prefix."""
    cache = ResponseCache(tmp_path)
    cache.close()
    old = {"text": "A", "error": None, "logprobs": [-1.0, -2.0],
           "usage": {"choice_tokens.1": 5, "choice_tokens.0": 3, "prompt_tokens": 2}}
    conn = sqlite3.connect(tmp_path / "responses.sqlite3")
    with conn:
        conn.execute("INSERT INTO responses VALUES (?, ?, ?, ?)", (cache_key("fp", "k"), "fp", json.dumps(old), 0.0))
    conn.close()
    got = ResponseCache(tmp_path).get_many("fp", ["k"])["k"]
    assert got.choice_tokens == (3, 5) and got.usage == {"prompt_tokens": 2} and got.logprobs == (-1.0, -2.0)
