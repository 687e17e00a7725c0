"""The on-disk cache: concurrent writers (pytest-xdist workers share one file), keys, what it stores,
and a damaged or unwritable file."""

from __future__ import annotations

import json
import multiprocessing
import random
import sqlite3
import warnings
from pathlib import Path

import pytest

from pytest_tom.engine import CACHE_SCHEMA_VERSION, ResponseCache, cache_key
from pytest_tom.errors import TomCacheError, TomCacheWarning, TomConfigError
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


# -- a damaged file: one clear error when the cache opens, naming the file and the ways on ----------------------


def _filled(directory: Path, n: int = 3000) -> Path:
    cache = ResponseCache(directory)
    cache.put_many("fp", [(f"k{i}", Response(text="[[B]] " * (i % 50))) for i in range(n)])
    cache.close()
    return directory / "responses.sqlite3"


def _garbage_in_the_middle(path: Path) -> None:
    with path.open("r+b") as f:
        f.seek(path.stat().st_size // 2)
        f.write(random.Random(8).randbytes(8192))


def _truncated(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)


def _pure_garbage(path: Path) -> None:
    path.write_bytes(random.Random(0).randbytes(path.stat().st_size))


@pytest.mark.parametrize(("damage", "reason"), [
    (_garbage_in_the_middle, "btreeInitPage() returns error code 11"),
    (_truncated, "database disk image is malformed"),
    (_pure_garbage, "file is not a database"),
])
def test_a_damaged_file_is_one_clear_error_when_the_cache_opens(tmp_path: Path, damage, reason: str) -> None:
    db = _filled(tmp_path)
    damage(db)
    with pytest.raises(TomCacheError) as info:
        ResponseCache(tmp_path)
    message = str(info.value)
    assert message.startswith(f"the response cache {db} is damaged (") and reason in message
    assert "--tom-no-cache" in message and f"mv {db} {db}.damaged" in message
    assert isinstance(info.value, TomConfigError) and info.value.path == db


def test_damage_met_by_a_later_read_is_the_same_clear_error(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)

    class Damaged:
        def execute(self, *args: object) -> None:
            raise sqlite3.DatabaseError("database disk image is malformed")

    cache._conn = Damaged()  # type: ignore[assignment]
    with pytest.raises(TomCacheError, match=r"is damaged \(database disk image is malformed\)"):
        cache.get_many("fp", ["k"])


def test_an_entry_that_cannot_be_decoded_is_a_miss_and_is_replaced(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put_many("fp", [("good", Response(text="ok")), ("bad", Response(text="ok")), ("worse", Response(text="ok"))])
    cache._conn.execute("UPDATE responses SET response = ? WHERE key = ?", ("{not json", cache_key("fp", "bad")))
    cache._conn.execute("UPDATE responses SET response = CAST(? AS BLOB) WHERE key = ?", (b"\xff\xfe\x00garbage",
                                                                                         cache_key("fp", "worse")))
    assert set(cache.get_many("fp", ["good", "bad", "worse"])) == {"good"}
    cache.put_many("fp", [("bad", Response(text="again"))])
    assert cache.get_many("fp", ["bad"])["bad"].text == "again"


# -- a file that cannot be written: read what it holds, keep new answers in memory, warn once ---------------


def _read_only(cache: ResponseCache) -> None:
    """What a read-only file looks like to SQLite, whoever runs the test (root writes through chmod)."""
    cache._conn.close()
    cache._conn = sqlite3.connect(f"{cache.path.as_uri()}?mode=ro", uri=True, isolation_level=None,
                                  check_same_thread=False)


def test_a_cache_that_cannot_be_written_keeps_answers_in_memory_and_warns_once(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put_many("fp", [("old", Response(text="stored"))])
    _read_only(cache)
    with pytest.warns(TomCacheWarning) as caught:
        assert cache.put_many("fp", [("new", Response(text="in memory")), ("err", Response(error="x"))]) == 0
        assert cache.put_many("fp", [("newer", Response(text="also in memory"))]) == 0
        cache.store("fp", "queued", Response(text="through the writer"))
        cache.flush()
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"the response cache {cache.path} cannot be written (attempt to write a readonly database)" in message
    got = cache.get_many("fp", ["old", "new", "newer", "queued", "err"])
    assert {k: r.text for k, r in got.items()} == {"old": "stored", "new": "in memory", "newer": "also in memory",
                                                    "queued": "through the writer"}
    assert all(r.cached for r in got.values())
    assert len(cache) == 1 and cache.unsaved == 3


def test_a_folder_that_cannot_be_created_is_a_cache_in_memory(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("in the way")
    folder = tmp_path / "a-file" / "cache"
    cache = ResponseCache(folder)
    assert cache.get_many("fp", ["k"]) == {}
    with pytest.warns(TomCacheWarning, match=f"cannot create the folder {folder}"):
        cache.put_many("fp", [("k", Response(text="kept"))])
    assert cache.get_many("fp", ["k"])["k"].text == "kept" and len(cache) == 0


def test_nothing_to_write_is_no_warning(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    _read_only(cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.put_many("fp", [("err", Response(error="timeout"))])
        cache.flush()


# -- the writer thread ------------------------------------------------------------------------------------------


def test_stored_answers_are_in_the_file_after_flush(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    for i in range(500):
        cache.store("fp", f"k{i}", Response(text=str(i)))
    cache.store("fp", "error", Response(error="never cached"))
    cache.flush()
    assert len(cache) == 500
    assert ResponseCache(tmp_path).get_many("fp", ["k499", "error"]).keys() == {"k499"}
    cache.store("fp", "after", Response(text="a new writer"))
    cache.close()
    assert len(ResponseCache(tmp_path)) == 501
