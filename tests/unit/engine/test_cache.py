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
    old = {"text": "A", "error": None, "logprobs": [-1.0, -2.0],
           "usage": {"choice_tokens.1": 5, "choice_tokens.0": 3, "prompt_tokens": 2}}
    _legacy_cache(tmp_path, {"k": json.dumps(old)})
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
    with pytest.warns(TomCacheWarning, match="2 cached answers in .* failed their checksum"):
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


# -- integrity: checksums, an old cache, an empty file, a file removed or replaced during the run ------------


def _legacy_cache(directory: Path, rows: dict[str, str]) -> None:
    """A cache as pytest-tom wrote it before checksums: four columns, rows keyed like today."""
    conn = sqlite3.connect(directory / "responses.sqlite3")
    with conn:
        conn.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, response TEXT NOT NULL,"
                     " created REAL NOT NULL)")
        conn.executemany("INSERT INTO responses VALUES (?, ?, ?, ?)",
                         [(cache_key("fp", k), "fp", v, 0.0) for k, v in rows.items()])
    conn.close()


def test_an_answer_edited_on_disk_fails_its_checksum_and_is_asked_again(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put_many("fp", [(f"k{i}", Response(text=f"[[A]] answer {i:03d}")) for i in range(40)])
    cache.close()
    db = tmp_path / "responses.sqlite3"
    data = db.read_bytes()
    for i in (7, 12, 30):  # the same length: SQLite's own checks cannot tell
        assert data.count(f"[[A]] answer {i:03d}".encode()) == 1
        data = data.replace(f"[[A]] answer {i:03d}".encode(), f"[[B]] answer {i:03d}".encode())
    db.write_bytes(data)
    cache = ResponseCache(tmp_path)
    with pytest.warns(TomCacheWarning, match=r"3 cached answers in .*responses.sqlite3 failed their checksum .* and "
                                             r"were asked again"):
        found = cache.get_many("fp", [f"k{i}" for i in range(40)])
    assert set(found) == {f"k{i}" for i in range(40)} - {"k7", "k12", "k30"}
    assert all(r.text and r.text.startswith("[[A]]") for r in found.values())
    cache.put_many("fp", [("k7", Response(text="[[A]] answer 007"))])  # asked again: replaced, and trusted again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get_many("fp", ["k7"])["k7"].text == "[[A]] answer 007"


def test_a_cache_from_before_checksums_is_migrated_and_keeps_its_answers(tmp_path: Path) -> None:
    _legacy_cache(tmp_path, {f"k{i}": json.dumps({"text": f"[[C]] {i}", "error": None}) for i in range(5)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = ResponseCache(tmp_path).get_many("fp", [f"k{i}" for i in range(5)])
    assert {k: r.text for k, r in found.items()} == {f"k{i}": f"[[C]] {i}" for i in range(5)}
    conn = sqlite3.connect(tmp_path / "responses.sqlite3")
    assert conn.execute("SELECT COUNT(*) FROM responses WHERE checksum IS NULL").fetchone() == (0,)
    # a row an older pytest-tom adds later carries no checksum: asked again, never trusted
    with conn:
        conn.execute("INSERT INTO responses (key, fingerprint, response, created) VALUES (?, 'fp', ?, 0)",
                     (cache_key("fp", "late"), json.dumps({"text": "[[D]]", "error": None})))
    conn.close()
    with pytest.warns(TomCacheWarning, match="1 cached answer in .* failed its checksum"):
        assert "late" not in ResponseCache(tmp_path).get_many("fp", ["late"])


@pytest.mark.parametrize("what", ["empty", "folder"])
def test_an_empty_file_or_a_folder_at_the_cache_path_is_a_clear_error(tmp_path: Path, what: str) -> None:
    db = tmp_path / "responses.sqlite3"
    if what == "empty":
        db.write_bytes(b"")
    else:
        db.mkdir()
    with pytest.raises(TomCacheError) as info:
        ResponseCache(tmp_path)
    message = str(info.value)
    assert message.startswith(f"the response cache {db} is {'empty (0 bytes)' if what == 'empty' else 'not a file'}")
    assert "--tom-no-cache" in message and info.value.path == db and isinstance(info.value, TomConfigError)
    if what == "empty":
        assert db.stat().st_size == 0  # left as it was: the user decides


def test_a_new_cache_is_never_an_empty_file_at_its_path(tmp_path: Path) -> None:
    ResponseCache(tmp_path)  # nothing stored yet: what a second process (an xdist worker) may open at once
    assert (tmp_path / "responses.sqlite3").stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("responses.sqlite3")) == []
    ResponseCache(tmp_path).close()


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_cache_removed_or_replaced_during_the_run_keeps_the_runs_answers(tmp_path: Path, how: str) -> None:
    theirs = ResponseCache(tmp_path / "other")
    theirs.put_many("fp", [("theirs", Response(text="kept"))])
    theirs.close()
    cache = ResponseCache(tmp_path / "cache")
    for i in range(5):
        cache.store("fp", f"k{i}", Response(text=f"a{i}"))
    cache.flush()
    db = tmp_path / "cache" / "responses.sqlite3"
    if how == "removed":
        for path in db.parent.iterdir():
            path.unlink()
    else:
        (tmp_path / "other" / "responses.sqlite3").rename(db)
    cache.store("fp", "k5", Response(text="a5"))
    with pytest.warns(TomCacheWarning, match=rf"the response cache .*responses.sqlite3 was {how} during the run: "
                                             r".*this run's 5 earlier answers were written to it"):
        cache.flush()
    cache.close()
    found = ResponseCache(tmp_path / "cache").get_many("fp", ["theirs", *(f"k{i}" for i in range(6))])
    assert {f"k{i}" for i in range(6)} <= set(found)
    assert ("theirs" in found) == (how == "replaced")
