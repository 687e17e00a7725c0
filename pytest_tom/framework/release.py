"""A benchmark's release: where its files are, how a copy is found, fetched and re-checked. Order: a local copy under the
data root (checked whole by the loader), then the download cache (re-checked against what its verified download
recorded), then, with --tom-download only, a fresh download checked against its pins. Checksums a user gives (`sha256=`)
stand in for the pins and get their own cache folder (`pins_key`), so two sets of pins never share one copy.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.fetch import sha256_file
from pytest_tom.framework.base import BenchmarkOption, DataSource

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
_SUM_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def partial_option(copy: str) -> BenchmarkOption:
    """The `partial` setting; `copy` ends "true runs a deliberately ...": what such a copy lacks, what is checked."""
    return BenchmarkOption("partial", "false", f"true runs a deliberately {copy}", kind=bool)


def partial_advice(benchmark: str, restore: str = "restore it from the official release", fresh: str = "verified",
                   copy: str = "partial") -> str:
    """How to get past a failed whole-release check: restore the copy, fetch a checked one, or declare it partial."""
    return (f"{restore} (or remove the local copy and pass --tom-download for a {fresh} one), or pass --tom-set "
            f"{benchmark}.partial=true (suite keyword partial=True) to run a deliberately {copy} copy")


def release_options(url: str, fetches: str, sha256: str, partial: str) -> tuple[BenchmarkOption, ...]:
    """The `source_url` (where --tom-download `fetches`), `sha256` and `partial` settings of a release."""
    return (BenchmarkOption("source_url", url, f"Where --tom-download fetches {fetches}."),
            BenchmarkOption("sha256", "", sha256), partial_option(partial))


def parse_sha256(value: str, what: str) -> str:
    """One sha256 as 64 hex digits (lower-cased), or a TomConfigError naming `what`."""
    text = value.strip()
    if not _HEX64.match(text):
        raise TomConfigError(f"{what}: expected a sha256 of 64 hex digits, got {value!r}")
    return text.lower()


def parse_pins(value: str) -> dict[str, str]:
    """`name=sha256,name=sha256` (file names, no folders) into a name -> sha256 mapping."""
    pins: dict[str, str] = {}
    for part in value.split(","):
        if not part.strip():
            continue
        name, sep, digest = part.partition("=")
        name = name.strip()
        if not sep or not name or "/" in name:
            raise TomConfigError(f"checksums: expected 'file name=sha256', got {part.strip()!r}")
        if name in pins:
            raise TomConfigError(f"checksums: {name!r} is given twice")
        pins[name] = parse_sha256(digest, f"checksum of {name!r}")
    if not pins:
        raise TomConfigError(f"checksums: no 'file name=sha256' in {value!r}")
    return pins


def read_pins(path: Path, key: Callable[[PurePosixPath], str] = lambda p: p.name,
              what: str = "<file name>") -> dict[str, str]:
    """A manifest in `sha256sum` format (`<sha256>  <file>` per line), keyed by `key(listed path)` (its name by default)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TomDataError(f"cannot read the checksum manifest: {exc}", path=path) from exc
    pins: dict[str, str] = {}
    for no, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _SUM_LINE.match(line.strip())
        if m is None:
            raise TomDataError(f"expected '<sha256>  {what}' (sha256sum format)", path=path, record=f"line {no}")
        name = key(PurePosixPath(m.group(2).strip().replace("\\", "/")))
        if name in pins:
            raise TomDataError(f"{name!r} is listed twice", path=path, record=f"line {no}")
        pins[name] = m.group(1).lower()
    if not pins:
        raise TomDataError("no checksums in this manifest", path=path)
    return pins


def pins_setting(value: Any, key: Callable[[PurePosixPath], str] = lambda p: p.name,
                 what: str = "<file name>") -> dict[str, str] | None:
    """The `sha256` setting: None when empty, a `name=sha256,...` list, or the path of a sha256sum manifest."""
    text = str(value or "").strip()
    if not text:
        return None
    return parse_pins(text) if "=" in text else read_pins(Path(text).expanduser(), key, what)


def pins_key(pins: Mapping[str, str]) -> str:
    """The download-cache folder of custom checksums: a digest of them, so other pins never reuse the copy."""
    digest = hashlib.sha256("\n".join(f"{v}  {k}" for k, v in sorted(pins.items())).encode()).hexdigest()
    return f"sha256-{digest[:16]}"


def tree_digest(files: Mapping[str, Path]) -> str:
    """The sha256 of the sorted `sha256sum` manifest of `files` (manifest name -> file): one pin per tree of small files."""
    return hashlib.sha256("".join(f"{sha256_file(p)}  {n}\n" for n, p in sorted(files.items())).encode()).hexdigest()


def check_trees(folder: Path, files: Sequence[str], pins: Mapping[str, str], advice: str) -> None:
    """Each tree `folder/<tree>` of `pins` must hold every one of `files` (a copy cut short) and have its pinned digest
    (a file edited). `advice` (its `{tree}` filled in) ends both messages: how to restore the copy, pin another
    revision or run it deliberately partial.
    """
    for tree, pin in pins.items():
        paths, hint = {name: folder / tree / name for name in files}, advice.format(tree=tree)
        if missing := sum(not p.is_file() for p in paths.values()):
            raise TomDataError(f"{missing} of {len(paths)} files are missing: {hint}", path=folder / tree)
        if (got := tree_digest(paths)) != pin:
            raise TomDataError(f"the files' digest is {got}, not the pinned {pin}: a file was edited or comes from "
                               f"another revision; {hint}", path=folder / tree)


def cached_or_fetched(present: bool, check: Callable[[], object], fetch: Callable[[], object], *, download: bool) -> bool:
    """Use the cached copy if it still checks out, else fetch when allowed; False when neither applies. A cached copy
    failing its check changed since it was verified: an error offline, re-fetched with --tom-download.
    """
    if present:
        try:
            check()
            return True
        except TomDataError:
            if not download:
                raise
    if download:
        fetch()
        return True
    return False


@dataclass(frozen=True, slots=True)
class Release:
    """Where a benchmark's files lie and how a copy of them is checked and fetched. `local`: folders under the data root,
    most specific first (`""` is the root); the first that `holds` the release is used as it is. `cache`: the folder
    under `<cache>/<benchmark>/`, where `present` says a copy is, `check` re-checks it and `fetch` downloads one.
    `wanted` ends the not-found message.
    """

    benchmark: str
    local: Sequence[str]
    holds: Callable[[Path], bool]
    cache: str
    present: Callable[[Path], bool]
    check: Callable[[Path], object]
    fetch: Callable[[Path], object]
    wanted: str
    label: str = ""
    """The benchmark's name in messages ("ToMBench"); its registry name by default."""
    file: str = ""
    """The one file a single-file release is (FANToM's): messages name it in each folder looked in."""

    def candidates(self, source: DataSource) -> list[Path]:
        return [source.root / sub if sub else source.root for sub in self.local] if source.root is not None else []

    def locate(self, source: DataSource) -> tuple[Path, bool]:
        """The folder holding the release, and whether it is a verified download (True) or a local copy (False)."""
        candidates = self.candidates(source)
        for folder in candidates:
            if self.holds(folder):
                return folder, False
        cached = source.cache_dir / self.benchmark / self.cache
        if cached_or_fetched(self.present(cached), lambda: self.check(cached), lambda: self.fetch(cached),
                             download=source.download):
            return cached, True
        where = ", ".join(str(c / self.file if self.file else c) for c in candidates) or "(no --tom-data-dir given)"
        raise TomDataError(f"{self.label or self.benchmark} data not found; looked in {where}. {self.wanted}")
