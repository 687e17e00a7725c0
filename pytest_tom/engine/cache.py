"""On-disk response cache.

Keyed by sha256(schema version, model fingerprint, request key): the fingerprint
covers weights/config/template, the request key covers messages and decoding
settings, so a new checkpoint or a changed prompt can never be served a stale
answer (peers key on model name or config only). SQLite in WAL mode with a busy
timeout lets pytest-xdist workers write to one cache file at once. Errors are
never cached: a retry later may succeed.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from pytest_tom.request import Response, sha256_text

CACHE_SCHEMA_VERSION = 1
_FILENAME = "responses.sqlite3"


def cache_key(fingerprint: str, request_key: str) -> str:
    return sha256_text(f"v{CACHE_SCHEMA_VERSION}\n{fingerprint}\n{request_key}")


class ResponseCache:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / _FILENAME
        self._conn = sqlite3.connect(self.path, timeout=120, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            " key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)"
        )

    def get_many(self, fingerprint: str, request_keys: Sequence[str]) -> dict[str, Response]:
        """Return the cached responses among `request_keys`, keyed by request key."""
        wanted = {cache_key(fingerprint, k): k for k in request_keys}
        found: dict[str, Response] = {}
        keys = list(wanted)
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk)
            for key, payload in rows:
                found[wanted[key]] = Response.from_dict(json.loads(payload), cached=True)
        return found

    def put_many(self, fingerprint: str, items: Iterable[tuple[str, Response]]) -> int:
        """Store successful responses in one transaction; return how many were stored."""
        now = time.time()
        rows = [
            (cache_key(fingerprint, k), fingerprint, json.dumps(r.to_dict(), ensure_ascii=False), now)
            for k, r in items
            if r.ok
        ]
        if rows:
            with self._conn:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", rows)
        return len(rows)

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._conn.close()
