"""Fetching official benchmark data at a pinned revision, verified by sha256, extracted safely.

The project never ships benchmark data (licenses differ); users point
`--tom-data-dir` at a local copy or let `--tom-download` fetch the official files
into their cache. Every file is checked against the checksum published for the
pinned revision, so a moved tag or a tampered mirror fails loudly instead of
silently changing scores.
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from pytest_tom.errors import TomDataError

_TIMEOUT_S = 60


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download_verified(url: str, expected_sha256: str, tmp: Path, target: Path, *, timeout: float = _TIMEOUT_S) -> None:
    """Stream `url` into `tmp`, failing unless its sha256 is `expected_sha256`; `target` names the file in errors."""
    h = hashlib.sha256()
    try:
        with tmp.open("wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
            for block in iter(lambda: resp.read(1 << 20), b""):
                h.update(block)
                out.write(block)
    except (urllib.error.URLError, OSError) as exc:
        raise TomDataError(f"download of {url} failed: {exc}", path=target) from exc
    if h.hexdigest() != expected_sha256:
        raise TomDataError(
            f"checksum mismatch for {url}: expected sha256 {expected_sha256}, got {h.hexdigest()}; "
            "refusing to use data that differs from the pinned release",
            path=target,
        )


def _temp_in(folder: Path, prefix: str) -> Path:
    fd, name = tempfile.mkstemp(dir=folder, prefix=prefix)
    os.close(fd)
    return Path(name)


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
        tmp = _temp_in(dest, ".part-")
        try:
            download_verified(base_url + urllib.parse.quote(name), expected, tmp, target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
    return dest


# --- archives ----------------------------------------------------------------------------------


def _unsafe_member(name: str) -> str | None:
    """Why an archive member name could escape the extraction folder, or None when it cannot."""
    if not name:
        return "an empty name"
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "an absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "a '..' component"
    return None


def extract_file(archive: Path, member: str, dest: Path) -> Path:
    """Copy the file named `member` out of a .tar(.gz) or .zip, refusing archives with unsafe members.

    Every member is checked before anything is written (absolute paths, `..`,
    links, devices), and only the one data file is written, to a fixed name, via a
    temporary file: nothing in the archive decides where bytes land.
    """
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / member
    found: list[str] = []
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            for m in members:
                why = _unsafe_member(m.name)
                if why is None and (m.issym() or m.islnk()):
                    why = "a link"
                elif why is None and not (m.isfile() or m.isdir()):
                    why = "a special file"
                if why is not None:
                    raise TomDataError(f"refusing to extract: member {m.name!r} is {why}", path=archive)
                if m.isfile() and PurePosixPath(m.name).name == member:
                    found.append(m.name)
            pick = _pick(found, archive, member)
            src = tar.extractfile(pick)
            assert src is not None  # a regular file, checked above
            data = src.read()
    elif zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                why = _unsafe_member(info.filename)
                mode = info.external_attr >> 16
                if why is None and (mode & 0o170000) == 0o120000:
                    why = "a link"
                if why is not None:
                    raise TomDataError(f"refusing to extract: member {info.filename!r} is {why}", path=archive)
                if not info.is_dir() and PurePosixPath(info.filename).name == member:
                    found.append(info.filename)
            data = zf.read(_pick(found, archive, member))
    else:
        raise TomDataError("not a tar or zip archive", path=archive)
    fd, tmp_name = tempfile.mkstemp(dir=dest, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp_name, target)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return target


def _pick(found: Sequence[str], archive: Path, member: str) -> str:
    if not found:
        raise TomDataError(f"no {member} in the archive", path=archive)
    return min(found, key=lambda n: (len(PurePosixPath(n).parts), n))


def fetch_archive(url: str, sha256: str, member: str, dest: Path, *, timeout: float = _TIMEOUT_S) -> Path:
    """Download an archive once, check its sha256, and extract the one file `member` into `dest`."""
    target = dest / member
    if target.exists():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    tmp = _temp_in(dest, ".download-")
    try:
        download_verified(url, sha256, tmp, target, timeout=timeout)
        return extract_file(tmp, member, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
