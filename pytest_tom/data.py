"""Fetching official benchmark files at a pinned revision, verified by sha256.

The project never ships benchmark data (licenses differ); users point
`--tom-data-dir` at a local copy or let `--tom-download` fetch the official files
into their cache. Every file is checked against the checksum published for the
pinned revision, so a moved tag or a tampered mirror fails loudly instead of
silently changing scores.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from pytest_tom.errors import TomDataError

_TIMEOUT_S = 60


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_pinned(base_url: str, files: Mapping[str, str], dest: Path) -> Path:
    """Download each of `files` (name -> sha256) from `base_url` into `dest`, once.

    Files already present with the right checksum are kept; a partial download
    never replaces a good file because each file lands via a temp file and
    `os.replace`.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for name, expected in sorted(files.items()):
        target = dest / name
        if target.exists() and sha256_file(target) == expected:
            continue
        url = base_url + urllib.parse.quote(name)
        fd, tmp_name = tempfile.mkstemp(dir=dest, prefix=".part-")
        tmp = Path(tmp_name)
        try:
            h = hashlib.sha256()
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=_TIMEOUT_S) as resp:  # noqa: S310
                for block in iter(lambda: resp.read(1 << 20), b""):
                    h.update(block)
                    out.write(block)
            if h.hexdigest() != expected:
                raise TomDataError(
                    f"checksum mismatch for {url}: expected sha256 {expected}, got {h.hexdigest()}; "
                    "refusing to use data that differs from the pinned release",
                    path=target,
                )
            os.replace(tmp, target)
        except (urllib.error.URLError, OSError) as exc:
            raise TomDataError(f"download of {url} failed: {exc}", path=target) from exc
        finally:
            if tmp.exists():
                tmp.unlink()
    return dest
