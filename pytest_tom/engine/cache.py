"""On-disk response cache. Keyed by sha256(schema version, model fingerprint, request key): the fingerprint covers
weights/config/template, the request key covers messages and decoding settings, so a new checkpoint or a changed prompt
can never be served a stale answer (peers key on model name or config only). SQLite in WAL mode with a busy timeout lets
pytest-xdist workers write to one cache file at once. Errors are never cached: a retry later may succeed.

What happens when the file misbehaves, and why:

* **Damaged** (garbage, truncated, not a database): found when the cache opens (`PRAGMA quick_check`, 15-50 ms warm) or
  at the first failing read; a `TomCacheError` naming the file stops the run. Running on without the cache would
  silently re-ask every answer it holds (hours and money on an API) and SQLite may write into a damaged file; the check
  runs before any model request, and `--tom-no-cache` is the fall-back a user may choose.
* **Not writable** (read-only file or folder, full disk): what the file holds is still read (read-only if need be), new
  answers are kept in memory for the run, and one `TomCacheWarning` says so; no question is ever asked twice.
* **Empty** (0 bytes) or not a file: a new cache is built aside and linked into place whole, so an empty file was
  emptied by something (a full disk, a failed copy); SQLite would take it for a new cache, so it is a `TomCacheError`.
* **An answer edited on disk**: each row carries sha256 of its key and answer JSON, checked at every read; a failing (or
  undecodable) answer is a miss, asked again, and one `TomCacheWarning` counts them. A cache from before checksums is
  migrated on open by checksumming its rows as they are (re-asking them would cost the whole cache); a read-only old
  cache is read unchecked.
* **Removed or replaced during the run**: the connection would keep writing into the deleted file. Every write first
  compares the path's inode with the one opened; on a change this run's answers are read back from the old file, the
  cache is opened again at the path, they are written there, and one warning says so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import queue
import sqlite3
import stat
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

from pytest_tom.errors import TomCacheError, TomCacheWarning
from pytest_tom.request import Response, sha256_text

CACHE_SCHEMA_VERSION = 1
"""Part of every key: raising it makes every cached answer unreachable, so it changes only when keys mean something new."""
_FILENAME = "responses.sqlite3"
_CREATE = ("CREATE TABLE IF NOT EXISTS responses ("
           " key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL,"
           " checksum TEXT)")
_COLUMNS = "key, fingerprint, response, created, checksum"
_INSERT = f"INSERT OR REPLACE INTO responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)"


def checksum(key: str, payload: bytes) -> str:
    """What a row's answer must hash to: sha256 of its cache key and its answer JSON (UTF-8)."""
    return hashlib.sha256(key.encode() + b"\n" + payload).hexdigest()


def cache_key(fingerprint: str, request_key: str) -> str:
    return sha256_text(f"v{CACHE_SCHEMA_VERSION}\n{fingerprint}\n{request_key}")


def _is_damage(exc: sqlite3.Error) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB: the file itself is bad (not locked, read-only or missing)."""
    name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+
    if name:
        return str(name).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    return type(exc) is sqlite3.DatabaseError  # what both map to; subclasses are other failures


def _has_checksums(conn: sqlite3.Connection) -> bool:
    return any(row[1] == "checksum" for row in conn.execute("PRAGMA table_info(responses)"))


class ResponseCache:
    def __init__(self, directory: Path) -> None:
        self.path = directory / _FILENAME
        self.write_error: str | None = None
        """Why answers cannot be stored (None while they can); set by the first failed write."""
        self._memory: dict[str, Response] = {}
        """Answers that could not be stored, by cache key: they answer the rest of this run."""
        self._warned = False
        self._lock = threading.Lock()
        """One connection, used by the engine's thread and the writer thread."""
        self._queue: queue.SimpleQueue[tuple[str, str, Response] | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._checked = True
        """Whether rows carry checksums (False only for a pre-checksum cache opened read-only)."""
        self._identity: tuple[int, int] | None = None
        """(device, inode) of the file opened: a change means it was removed or replaced."""
        self._sidecars: dict[Path, tuple[int, int]] = {}
        """(device, inode) of the -wal and -shm files the connection opened."""
        self._opened = time.time()
        self._notices: list[str] = []
        """Warnings found by the writer thread, given in the engine's thread at the next `flush`."""
        self._directory = directory
        self._conn = self._open(directory)

    def _open(self, directory: Path) -> sqlite3.Connection | None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.write_error = f"cannot create the folder {directory}: {exc.strerror or exc}"
            return None
        self._refuse_non_cache()
        conn: sqlite3.Connection | None = None
        try:
            self._create_whole()
            conn = sqlite3.connect(self.path, timeout=120, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_CREATE)
            self._migrate(conn)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            if _is_damage(exc):
                raise self._damaged(exc) from None
            # A read-only file or folder: read what it holds, keep new answers in memory.
            self.write_error = str(exc)
            conn = self._open_read_only()
        if conn is not None:
            self._check(conn)
            self._checked = _has_checksums(conn)
            self._identity = self._stat()
            sidecars = (self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm"))
            self._sidecars = {path: ident for path in sidecars if (ident := self._stat(path))}
        return conn

    def _refuse_non_cache(self) -> None:
        """A folder, or an empty file, at the cache path: a clear error, never a new cache built over it."""
        try:
            st = os.stat(self.path)
        except OSError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise TomCacheError(
                f"the response cache {self.path} is not a file. Move it away, point --tom-cache-dir at another "
                "folder, or run with --tom-no-cache.", path=self.path)
        if st.st_size == 0:
            raise TomCacheError(
                f"the response cache {self.path} is empty (0 bytes). A cache file is never empty, so something "
                f"emptied it (a full disk, a failed copy); SQLite would take it for a new cache without a word. "
                f"Remove it to start a new cache (`rm {self.path}`), or run with --tom-no-cache.", path=self.path)

    def _create_whole(self) -> None:
        """Build a new cache aside and link it into place, so the path never holds a half-made (empty) file. Linking
        never replaces a file another process (an xdist worker) made first; without hard links the file is made in
        place, as SQLite does.
        """
        if self.path.exists():
            return
        aside = self.path.with_name(f".{_FILENAME}.{os.getpid()}.{threading.get_ident()}.new")
        try:
            conn = sqlite3.connect(aside, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_CREATE)
            finally:
                conn.close()
            try:
                os.link(aside, self.path)
            except FileExistsError:
                pass
            except OSError:
                if not self.path.exists():
                    os.replace(aside, self.path)
        finally:
            for leftover in (aside, aside.with_name(aside.name + "-wal"), aside.with_name(aside.name + "-shm")):
                leftover.unlink(missing_ok=True)

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """A cache from before checksums: add the column and checksum its rows as they are, once, in one transaction."""
        if _has_checksums(conn):
            return
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            if _has_checksums(conn):
                return  # another process migrated it while this one waited
            conn.execute("ALTER TABLE responses ADD COLUMN checksum TEXT")
            rows = conn.execute("SELECT key, CAST(response AS BLOB) FROM responses").fetchall()
            conn.executemany("UPDATE responses SET checksum = ? WHERE key = ?",
                             [(checksum(key, bytes(payload)), key) for key, payload in rows])

    def _stat(self, path: Path | None = None) -> tuple[int, int] | None:
        try:
            st = os.stat(path or self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _open_read_only(self) -> sqlite3.Connection | None:
        """A read-only connection, or None when there is nothing to read. A WAL database in an unwritable folder cannot
        even be read normally (SQLite needs its -shm file), so the last resort is `immutable=1`, which reads the main
        file as it is.
        """
        if not self.path.is_file():
            return None
        last: sqlite3.Error | None = None
        for query in ("mode=ro", "immutable=1"):
            try:
                conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?{query}", uri=True, timeout=120,
                                       isolation_level=None, check_same_thread=False)
            except sqlite3.Error as exc:
                last = exc
                continue
            try:
                conn.execute("SELECT 1 FROM responses LIMIT 1").fetchall()
                return conn
            except sqlite3.Error as exc:
                conn.close()
                if _is_damage(exc):
                    raise self._damaged(exc) from None
                if "no such table" in str(exc):
                    return None
                last = exc
        raise self._unreadable(last or sqlite3.OperationalError("unable to open database file"))

    def _check(self, conn: sqlite3.Connection) -> None:
        try:
            rows = conn.execute("PRAGMA quick_check(1)").fetchall()
        except sqlite3.Error as exc:
            conn.close()
            raise self._failure(exc) from None
        if rows != [("ok",)]:
            conn.close()
            raise self._damaged(str(rows[0][0]) if rows else "integrity check failed")

    def _damaged(self, reason: object) -> TomCacheError:
        # quick_check reports on several lines under a "*** in database main ***" heading
        reason = "; ".join(line for line in str(reason).splitlines() if line and not line.startswith("***"))
        return TomCacheError(
            f"the response cache {self.path} is damaged ({reason}). The run stops here rather than ask the "
            f"model again for every answer the file holds. Run with --tom-no-cache to go on without it, or move "
            f"the file away to start a new cache (`mv {self.path} {self.path}.damaged`; "
            f"`sqlite3 {self.path}.damaged .recover` may salvage its answers).",
            path=self.path,
        )

    def _failure(self, exc: sqlite3.Error) -> TomCacheError:
        return self._damaged(exc) if _is_damage(exc) else self._unreadable(exc)

    def _unreadable(self, reason: object) -> TomCacheError:
        return TomCacheError(
            f"the response cache {self.path} cannot be read ({reason}). Run with --tom-no-cache to go on "
            "without it, or point --tom-cache-dir at another folder.",
            path=self.path,
        )

    def _warn(self) -> None:
        """Once, that the file cannot be written; then what the writer thread found (called by `put_many` and `flush`)."""
        if not self._warned and self.write_error is not None and self._memory:
            self._warned = True
            warnings.warn(TomCacheWarning(
                f"pytest-tom: the response cache {self.path} cannot be written ({self.write_error}): this run keeps "
                "its new answers in memory, and the next run will ask them again. Make the file and its folder "
                "writable, or point --tom-cache-dir at a writable folder."), stacklevel=3)
        with self._lock:
            notices, self._notices = self._notices, []
        for notice in notices:
            warnings.warn(TomCacheWarning(notice), stacklevel=3)

    def get_many(self, fingerprint: str, request_keys: Sequence[str]) -> dict[str, Response]:
        """Return the cached responses among `request_keys`, keyed by request key."""
        wanted = {cache_key(fingerprint, k): k for k in request_keys}
        found: dict[str, Response] = {}
        keys = list(wanted)
        failed = 0
        with self._lock:
            if self._conn is not None:
                try:
                    for start in range(0, len(keys), 500):
                        chunk = keys[start : start + 500]
                        marks = ",".join("?" * len(chunk))
                        # As bytes: a damaged entry that is not UTF-8 is one miss, not a failed lookup.
                        digest = "checksum" if self._checked else "NULL"
                        rows = self._conn.execute(
                            f"SELECT key, CAST(response AS BLOB), {digest} FROM responses WHERE key IN ({marks})",
                            chunk)
                        for key, payload, stored in rows:
                            payload = bytes(payload)
                            intact = not self._checked or stored == checksum(key, payload)
                            response = _decode(payload) if intact else None
                            if response is None:
                                failed += 1
                            else:
                                found[wanted[key]] = response
                except sqlite3.Error as exc:
                    raise self._failure(exc) from None
            for key in keys:
                kept = self._memory.get(key)
                if kept is not None and wanted[key] not in found:
                    found[wanted[key]] = kept
        if failed:
            warnings.warn(TomCacheWarning(
                f"pytest-tom: {failed} cached answer{'s' if failed > 1 else ''} in {self.path} failed "
                f"{'their' if failed > 1 else 'its'} checksum (edited or damaged on disk) and "
                f"{'were' if failed > 1 else 'was'} asked again"), stacklevel=2)
        return found

    def put_many(self, fingerprint: str, items: Iterable[tuple[str, Response]]) -> int:
        """Store successful responses in one transaction, now; return how many reached the file. Never raises for an
        unwritable file: those answers stay in memory and one warning says so.
        """
        stored = self._write([(fingerprint, k, r) for k, r in items])
        self._warn()
        return stored

    def store(self, fingerprint: str, request_key: str, response: Response) -> None:
        """Hand one answer to the writer thread, which commits whatever has queued up since its last commit. A commit
        per answer (0.1-0.2 ms) doubled the engine time of free answers; grouping what arrived during the previous
        commit keeps that near zero, so a killed process loses at most the answers of the last commit, and `flush`
        (after each batch, on Ctrl-C and SIGTERM) none.
        """
        if not response.ok:
            return
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_queued, name="pytest-tom cache writer", daemon=True)
            self._writer.start()
        self._queue.put((fingerprint, request_key, response))

    def flush(self) -> None:
        """Wait until every answer handed to `store` is written (or kept in memory); warn once if it cannot be."""
        writer = self._writer
        if writer is not None:
            self._queue.put(None)
            writer.join()
            self._writer = None
        self._warn()

    def _write_queued(self) -> None:
        """The writer thread: one transaction for everything queued since the last one, until `flush`."""
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            items = [item for item in batch if item is not None]
            try:
                self._write(items)
            except Exception:  # noqa: BLE001 - the writer must never die with answers queued
                with self._lock:
                    self._memory.update((cache_key(f, k), dataclasses.replace(r, cached=True)) for f, k, r in items)
            if len(items) < len(batch):
                return

    def _write(self, items: Sequence[tuple[str, str, Response]]) -> int:
        """Commit the successful answers among (fingerprint, request key, response) in one transaction. Returns how many
        reached the file; the others answer the rest of this run from memory.
        """
        now = time.time()
        rows: list[tuple[str, str, str, float, str]] = []
        unsaved: dict[str, Response] = {}
        answers: dict[str, Response] = {}
        for fingerprint, request_key, response in items:
            if not response.ok:
                continue
            key = cache_key(fingerprint, request_key)
            answers[key] = dataclasses.replace(response, cached=True)
            try:
                text = json.dumps(response.to_dict(), ensure_ascii=False)
                rows.append((key, fingerprint, text, now, checksum(key, text.encode())))
            except (TypeError, ValueError):  # not JSON (a numpy float in usage, say): this run only
                unsaved[key] = answers[key]
        stored = 0
        with self._lock:
            if rows and self._conn is None and self.write_error is None:
                self.write_error = "the cache is closed"
            if rows and self._conn is not None and self.write_error is None:
                try:
                    self._follow_the_path()
                    with self._conn:
                        self._conn.execute("BEGIN IMMEDIATE")
                        self._conn.executemany(_INSERT, rows)
                    stored = len(rows)
                except sqlite3.Error as exc:
                    self.write_error = str(exc)
            if not stored:
                unsaved.update((row[0], answers[row[0]]) for row in rows)
            self._memory.update(unsaved)
        return stored

    def _follow_the_path(self) -> None:
        """Before a write (lock held): if the file was removed or replaced, carry this run's answers to the new one."""
        if self._conn is None or self._identity is None or self._stat() == self._identity:
            return
        old = self._conn
        kept = old.execute(f"SELECT {_COLUMNS} FROM responses WHERE created >= ?", (self._opened,)).fetchall()
        old.close()
        self._conn = None
        for path, ident in self._sidecars.items():
            # SQLite leaves the write-ahead log of an unlinked file at its path, where the new file would replay it:
            # ours (the same inode as when we opened) goes; another process's stays.
            if self._stat(path) == ident:
                path.unlink(missing_ok=True)
        what = "removed" if not self.path.exists() else "replaced"
        try:
            self._conn = self._open(self._directory)
        except TomCacheError as exc:
            self.write_error = f"it was {what} during the run, and then: {exc}"
            raise sqlite3.OperationalError(self.write_error) from None
        if self._conn is None:
            raise sqlite3.OperationalError(self.write_error or f"it was {what} during the run")
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(_INSERT, kept)
        self._notices.append(
            f"pytest-tom: the response cache {self.path} was {what} during the run: "
            f"{'it was made again' if what == 'removed' else 'the new file is used'}, and this run's {len(kept)} "
            "earlier answers were written to it with the new ones, so none is lost.")

    @property
    def unsaved(self) -> int:
        """Answers kept in memory only, because the file could not be written."""
        return len(self._memory)

    def __len__(self) -> int:
        """Answers stored in the file (what a later run can read)."""
        with self._lock:
            if self._conn is None:
                return 0
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _decode(payload: bytes) -> Response | None:
    """A stored response, or None for an entry that cannot be read back (it is then asked again)."""
    try:
        return Response.from_dict(json.loads(payload), cached=True)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
