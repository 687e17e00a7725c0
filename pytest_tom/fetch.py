"""Fetching official benchmark data (never shipped: licenses differ) at a pinned revision, verified, extracted safely.
Every file is checked against the pinned sha256, so a moved tag or tampered mirror fails loudly instead of changing
scores; downloads are bounded in bytes and time, archives in expanded size, so a hostile or stalled server cannot fill
the disk or hang a run; a cached copy is checked again before each use (its pins, or its verified download's manifest).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, TypeVar

from pytest_tom.errors import TomDataError

_BLOCK = 1 << 20
M = TypeVar("M")
MANIFEST = ".pytest-tom-manifest.json"  # beside files from a verified download: their sha256s, for re-checking later
REFETCH = "delete it, or pass --tom-download to fetch a verified copy again"


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds of one download and one extraction; the defaults leave the real releases ample room."""

    timeout_s: float = 60.0  # longest wait for any single network read
    deadline_s: float = 900.0  # longest a whole download may take (ToMBench's 20 files and FANToM's archive: seconds)
    max_bytes: int = 256 << 20  # largest file a download may bring (the real files are a few MB each)
    # Largest total an archive may expand to: JSON compresses about 5:1 (FANToM's few-MB archive expands to tens of
    # MB), while a 522 KB archive of zeros can claim 512 MiB.
    max_expanded: int = 256 << 20


LIMITS = Limits()  # used when a caller gives none; tests substitute small ones


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def _mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{int(n)} bytes"


def download_verified(
    url: str, expected_sha256: str | None, tmp: Path, target: Path, *, limits: Limits | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Stream `url` into `tmp`; fails unless its sha256 is `expected_sha256` (None: the caller checks it otherwise) or
    past `max_bytes` or `deadline_s` (a read waits only what is left: no trickle keeps it alive); the received sha256.
    """
    lim = limits or LIMITS
    h = hashlib.sha256()
    start = clock()
    received = 0

    def over_deadline() -> TomDataError:
        return TomDataError(
            f"download of {url} took longer than its deadline of {lim.deadline_s:g} s ({_mib(received)} received): "
            "the server is stalled or too slow; try again later, or fetch the files yourself and point "
            "--tom-data-dir at them", path=target)

    try:
        with tmp.open("wb") as out, urllib.request.urlopen(  # noqa: S310 - http(s) or file URLs the user chose
            url, timeout=min(lim.timeout_s, lim.deadline_s)
        ) as resp:
            announced = resp.headers.get("Content-Length") if hasattr(resp, "headers") else None
            if announced and announced.isdigit() and int(announced) > lim.max_bytes:
                raise TomDataError(
                    f"download of {url} announces {_mib(int(announced))}, over the cap of {_mib(lim.max_bytes)}: "
                    "refusing to fetch it (not the pinned release?)", path=target)
            read = getattr(resp, "read1", resp.read)
            while True:
                if clock() - start > lim.deadline_s:
                    raise over_deadline()
                block = read(_BLOCK)
                if not block:
                    break
                received += len(block)
                if received > lim.max_bytes:
                    raise TomDataError(
                        f"download of {url} exceeds the cap of {_mib(lim.max_bytes)}: refusing to fetch more "
                        "(not the pinned release?)", path=target)
                h.update(block)
                out.write(block)
    except TimeoutError:
        if clock() - start >= lim.deadline_s:
            raise over_deadline() from None
        raise TomDataError(f"download of {url} failed: no data for {lim.timeout_s:g} s", path=target) from None
    except (urllib.error.URLError, OSError) as exc:
        if isinstance(getattr(exc, "reason", None), TimeoutError) and clock() - start >= lim.deadline_s:
            raise over_deadline() from None
        raise TomDataError(f"download of {url} failed: {exc}", path=target) from exc
    if expected_sha256 is not None and h.hexdigest() != expected_sha256:
        raise TomDataError(
            f"checksum mismatch for {url}: expected sha256 {expected_sha256}, got {h.hexdigest()}; "
            "refusing to use data that differs from the pinned release",
            path=target,
        )
    return h.hexdigest()


@contextlib.contextmanager
def _staged(target: Path) -> Iterator[Path]:
    """A temporary file beside `target`, moved onto it when the block succeeds: `target` is never half-written."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def fetch_pinned(base_url: str, files: Mapping[str, str], dest: Path, *, limits: Limits | None = None) -> Path:
    """Download each of `files` (name -> sha256) from `base_url` into `dest`, once: files already right are kept."""
    dest.mkdir(parents=True, exist_ok=True)
    stale = {n: e for n, e in sorted(files.items()) if not (dest / n).exists() or sha256_file(dest / n) != e}
    fetch_files(base_url, dest, stale, limits=limits)
    return dest


def check_pinned(folder: Path, files: Mapping[str, str]) -> None:
    """Fail unless every one of `files` (name -> sha256) is in `folder` with its checksum: a damaged one is named."""
    if missing := sorted(n for n in files if not (folder / n).is_file()):
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise TomDataError(f"the download cache is incomplete: {', '.join(map(repr, missing[:5]))}{more} missing; "
                           f"{REFETCH}", path=folder)
    for name, expected in sorted(files.items()):
        got = sha256_file(folder / name)
        if got != expected:
            raise TomDataError(
                f"this downloaded copy no longer matches its pinned sha256 {expected} (got {got}): it was damaged "
                f"or edited after the download; {REFETCH}", path=folder / name)


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


def _too_big(archive: Path, total: int, cap: int) -> TomDataError:
    return TomDataError(
        f"refusing to extract: the archive expands to more than {_mib(total)}, over the cap of {_mib(cap)} "
        "(an archive bomb, or not the pinned release)", path=archive)


def _copy_capped(src: IO[bytes], out: IO[bytes], archive: Path, cap: int) -> None:
    copied = 0
    for block in iter(lambda: src.read(_BLOCK), b""):
        copied += len(block)
        if copied > cap:
            raise _too_big(archive, copied, cap)
        out.write(block)


def _scan(members: Iterable[tuple[M, str, int, str | None, bool]], archive: Path, member: str, cap: int) -> M:
    """Check every (entry, name, size, why unsafe, is a file) before anything is written; the data file's entry
    (a tar's members come one header at a time, so a bomb is refused before its bytes are inflated).
    """
    found: dict[str, M] = {}
    total = 0
    for entry, name, size, kind, is_file in members:
        why = _unsafe_member(name) or kind
        if why is not None:
            raise TomDataError(f"refusing to extract: member {name!r} is {why}", path=archive)
        total += size
        if total > cap:
            raise _too_big(archive, total, cap)
        if is_file and PurePosixPath(name).name == member:
            found[name] = entry
    if not found:
        raise TomDataError(f"no {member} in the archive", path=archive)
    return found[min(found, key=lambda n: (len(PurePosixPath(n).parts), n))]


def _tar_members(tar: tarfile.TarFile) -> Iterator[tuple[tarfile.TarInfo, str, int, str | None, bool]]:
    while (m := tar.next()) is not None:
        kind = "a link" if m.issym() or m.islnk() else None if m.isfile() or m.isdir() else "a special file"
        yield m, m.name, m.size, kind, m.isfile()


def _zip_members(zf: zipfile.ZipFile) -> Iterator[tuple[zipfile.ZipInfo, str, int, str | None, bool]]:
    for info in zf.infolist():
        kind = "a link" if (info.external_attr >> 16 & 0o170000) == 0o120000 else None
        yield info, info.filename, info.file_size, kind, not info.is_dir()


def extract_file(archive: Path, member: str, dest: Path, *, limits: Limits | None = None) -> Path:
    """Copy `member` out of a .tar(.gz) or .zip: every member is checked first (absolute paths, `..`, links, devices,
    expanded size), and only the data file is written, to a fixed name; nothing in the archive decides where bytes land.
    """
    cap = (limits or LIMITS).max_expanded
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / member
    with _staged(target) as tmp, tmp.open("wb") as out:
        if tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tar:
                src = tar.extractfile(_scan(_tar_members(tar), archive, member, cap))
                assert src is not None  # a regular file, checked above
                _copy_capped(src, out, archive, cap)
        elif zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf, zf.open(_scan(_zip_members(zf), archive, member, cap)) as zsrc:
                _copy_capped(zsrc, out, archive, cap)
        else:
            raise TomDataError("not a tar or zip archive", path=archive)
    return target


def check_extracted(dest: Path, member: str, sha256: str) -> Path:
    """The extracted `member` in `dest`, checked against its manifest (fails: none, another archive's, not matching)."""
    target = dest / member
    manifest = read_manifest(dest / MANIFEST, target)
    archive = manifest.get("archive_sha256")
    if archive != sha256:
        raise TomDataError(
            f"this downloaded copy comes from archive sha256 {archive}, not the expected {sha256}; {REFETCH}",
            path=target)
    check_recorded(dest, {member: manifest_files(dest).get(member)})
    return target


def fetch_archive(url: str, sha256: str, member: str, dest: Path, *, limits: Limits | None = None) -> Path:
    """Download an archive once, check its sha256, extract `member` into `dest` (a copy is reused while it checks)."""
    target = dest / member
    if target.exists():
        try:
            return check_extracted(dest, member, sha256)
        except TomDataError:
            pass  # damaged or unrecorded: fetch it again below
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
        download_verified(url, sha256, Path(tmp, "archive"), target, limits=limits)
        extract_file(Path(tmp, "archive"), member, dest, limits=limits)
    write_manifest(dest / MANIFEST, {"source": url, "archive_sha256": sha256, "files": {member: sha256_file(target)}})
    return target


# --- several files, and the manifest of a verified download --------------------------------------------------------------


def fetch_files(base_url: str, dest: Path, files: Mapping[str, str | None], *, limits: Limits | None = None,
                workers: int = 1) -> dict[str, str]:
    """Download `files` into `dest` (checked if a sha256 is given), each via a temp file and `os.replace`; sha256s."""
    base = base_url.rstrip("/") + "/"

    def one(rel: str) -> tuple[str, str]:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with _staged(target) as tmp:
            return rel, download_verified(base + urllib.parse.quote(rel), files[rel], tmp, target, limits=limits)

    if workers <= 1:
        return dict(one(rel) for rel in files)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(one, files))


def write_manifest(path: Path, body: Mapping[str, Any]) -> None:
    """Record a verified download (written last, atomically: an interrupted or rejected download has none)."""
    with _staged(path) as tmp:
        tmp.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def read_manifest(path: Path, where: Path) -> dict[str, Any]:
    """The record of a verified download, or an error (naming `where`) saying the copy cannot be checked."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(body, dict):
            raise TypeError
        return body
    except (OSError, ValueError, TypeError):
        raise _unrecorded(where) from None


def _unrecorded(where: Path) -> TomDataError:
    return TomDataError(f"this downloaded copy has no readable record of a verified download ({MANIFEST}), so it "
                        f"cannot be checked; {REFETCH}", path=where)


def check_recorded(folder: Path, files: Mapping[str, Any]) -> None:
    """Every file a manifest lists (relative path -> sha256) is in `folder`, unchanged since it was verified."""
    for rel, expected in files.items():
        path = folder / rel
        if not path.is_file():
            raise TomDataError(f"this file of a verified download is missing; {REFETCH}", path=path)
        got = sha256_file(path)
        if got != expected:
            raise TomDataError(f"this downloaded copy no longer matches the sha256 recorded when it was verified "
                               f"({expected}, now {got}): it was damaged or edited after the download; {REFETCH}",
                               path=path)


def manifest_files(folder: Path) -> dict[str, Any]:
    """The `files` a verified download in `folder` recorded (relative path -> sha256)."""
    files = read_manifest(folder / MANIFEST, folder).get("files")
    if not isinstance(files, dict):
        raise _unrecorded(folder)
    return files
