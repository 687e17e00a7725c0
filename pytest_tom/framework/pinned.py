"""Releases that are files of a git repository at pinned revisions: a local copy under the data root, else the
download cache, else, with --tom-download, a fetch checked against the pins before anything reads it. The verified
copy keeps a manifest, written last, and is used only if it records exactly the pins; it is re-checked against them
before every later use.

`PinnedFile`: one file (BigToM's CSV, MMToM-QA's JSON), also checked against the git blob id the repository's tree
names it by; a user's `sha256=` pins another copy instead (the blob id then is not asked: it names the pinned bytes
only). `PinnedFiles`: several files by sha256, possibly from several revisions (OpenToM's current files and its
paper-era ones, kept under a folder of their own). `PinnedTrees`: trees of many small files (Hi-ToM's 2 x 1,200), each
tree pinned by one digest (`release.tree_digest`: the sha256 of its sorted `sha256sum` manifest) rather than a sha256
per file, so a user pins another revision with one `sha256=<tree>=<digest>,...` setting; a local copy is checked whole
(counts catch a copy cut short, only a digest catches a file edited in place) unless `partial`, and a download,
fetched file by file (the repository publishes no archive to pin), gets a cache folder of its pins.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.fetch import MANIFEST, REFETCH, check_recorded, fetch_files, read_manifest, write_manifest
from pytest_tom.framework.base import BenchmarkOption
from pytest_tom.framework.checks import check_sha256
from pytest_tom.framework.release import Release, check_trees, parse_pins, partial_option, pins_key


def git_blob(path: Path) -> str:
    r"""The id git names the file's bytes by (`git hash-object`): sha1 of ``blob <size>\0`` and the content."""
    body = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(body) + body, usedforsecurity=False).hexdigest()


def check_cached(folder: Path, pins: Mapping[str, str], what: str) -> None:
    """A cached download whose manifest records exactly `pins` (path -> sha256), its files unchanged since."""
    files = read_manifest(folder / MANIFEST, folder).get("files")
    if files != dict(pins):
        raise TomDataError(f"this download was not verified against {what}; {REFETCH}", path=folder)
    check_recorded(folder, files)


@dataclass(frozen=True, slots=True)
class PinnedFile:
    """`file` (its path in `repository`, e.g. github.com/owner/name) at `revision`, with its sha256 and git blob id."""

    benchmark: str
    label: str
    file: str
    repository: str
    revision: str
    sha256: str
    blob: str

    def download(self, url: str, folder: Path, sha256: str) -> None:
        """The file fetched from `url` + `file` and checked (the pins, or the user's sha256); the manifest, last."""
        (folder / MANIFEST).unlink(missing_ok=True)
        got = fetch_files(url, folder, {self.file: sha256 or self.sha256})[self.file]
        if not sha256 and (blob := git_blob(folder / self.file)) != self.blob:
            (folder / self.file).unlink()
            raise TomDataError(f"git blob id {blob}, not the pinned {self.blob}; refusing to use it", path=folder / self.file)
        write_manifest(folder / MANIFEST, {"source": url, "files": {self.file: got}})

    def release(self, url: str, sha256: str) -> Release:
        """`<data-dir>/<benchmark>/<file>` (the repository's layout), `<data-dir>/<file>`, else the download cache."""
        return Release(
            self.benchmark, (self.benchmark, ""), lambda f: (f / self.file).is_file(),
            sha256[:16] if sha256 else self.revision, lambda c: (c / MANIFEST).is_file(),
            lambda c: check_cached(c, {self.file: sha256 or self.sha256}, f"sha256 {sha256 or self.sha256}"),
            lambda c: self.download(url, c, sha256),
            f"Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding {self.benchmark}/{self.file} from "
            f"{self.repository} (revision {self.revision[:12]}), or pass --tom-download to fetch it (checked against its "
            "sha256 and git blob id).", label=self.label, file=self.file)


@dataclass(frozen=True, slots=True)
class PinnedFiles:
    """`files`: each file's path in a copy -> its sha256. `revisions`: a folder of the copy (`""`: its root; others end
    in `/`) -> the revision it holds, the first naming the cache folder; a file comes from the revision of the longest
    folder its path is under, at its path less that folder. `marker`: the file whose presence makes a folder a local
    copy. `repository`: where the files come from (github.com/owner/name). `aliases`: other names a local copy may give a
    file, as (part of its path, that part's replacement), e.g. the names of an older revision or of a Hugging Face copy.
    """

    benchmark: str
    label: str
    marker: str
    revisions: Mapping[str, str]
    files: Mapping[str, str]
    repository: str
    aliases: tuple[tuple[str, str], ...] = ()

    @property
    def held(self) -> str:
        """What a copy holds: the folder of each revision's files in the copy, and the revision."""
        folders = {tree: posixpath.commonpath([posixpath.dirname(p) for p in self.files if self.tree(p) == tree])
                   for tree in self.revisions}
        return "; ".join(f"{posixpath.join(self.benchmark, folders[tree], '')} at {rev[:12]}"
                         for tree, rev in self.revisions.items())

    def options(self, url: str) -> tuple[BenchmarkOption, BenchmarkOption]:
        """The `source_url` setting (`url`: the repository's raw-file root) and the `partial` setting."""
        return (BenchmarkOption("source_url", url, f"Where --tom-download fetches the release from ({self.repository}: "
                                f"{self.held})."),
                partial_option("partial or changed copy; by default a local copy must be the whole pinned release."))

    def find(self, folder: Path, path: str) -> Path:
        """A file of a copy by its path in `files`, else by an alias; a missing file is an error naming the path."""
        for name in (path, *(path.replace(part, other) for part, other in self.aliases)):
            if (folder / name).is_file():
                return folder / name
        raise TomDataError(f"this {self.label} file is missing", path=folder / path)

    def check(self, found: Mapping[str, Path]) -> None:
        """The files a loader read (their paths in `files` -> where they are) each against its pinned sha256."""
        for path, file in found.items():
            check_sha256(file, self.files[path], benchmark=self.benchmark, given=False, partial=False)

    def tree(self, path: str) -> str:
        """The folder of `revisions` a file's path is under (the longest that applies)."""
        return max((t for t in self.revisions if path.startswith(t)), key=len)

    def download(self, url: str, folder: Path) -> None:
        """Every file fetched from `url`/<revision>/<path in the repository> and checked; the manifest, last."""
        (folder / MANIFEST).unlink(missing_ok=True)
        got: dict[str, str] = {}
        for tree, revision in self.revisions.items():
            want = {p.removeprefix(tree): s for p, s in self.files.items() if self.tree(p) == tree}
            got |= {tree + p: s for p, s in fetch_files(f"{url.rstrip('/')}/{revision}/", folder / tree, want).items()}
        write_manifest(folder / MANIFEST, {"source": url, "files": got})

    def release(self, url: str) -> Release:
        """`<data-dir>/<benchmark>/` (the repository's layout), `<data-dir>/`, else the download cache."""
        return Release(
            self.benchmark, (self.benchmark, ""), lambda f: (f / self.marker).is_file(), next(iter(self.revisions.values())),
            lambda c: (c / MANIFEST).is_file(),
            lambda c: check_cached(c, self.files, "the pinned sha256s"), lambda c: self.download(url, c),
            f"Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding {self.held} from {self.repository}, or pass "
            "--tom-download to fetch them, each checked against its sha256.", label=self.label)


@dataclass(frozen=True, slots=True)
class PinnedTrees:
    """The trees of `sha256` (tree -> its digest at `revision` of `repository`, e.g. github.com/owner/name), each
    holding every path of `files`; --tom-download fetches `<url>/<tree>/<file>`.
    """

    benchmark: str
    label: str
    repository: str
    revision: str
    url: str
    files: Sequence[str]
    sha256: Mapping[str, str]

    @property
    def advice(self) -> str:
        """How to run a copy that is not the whole pinned release anyway."""
        return (f"or pass --tom-set {self.benchmark}.partial=true (suite keyword partial=True) to run a deliberately "
                "partial or changed copy")

    def options(self) -> tuple[BenchmarkOption, BenchmarkOption]:
        """The `sha256` setting (another revision's digests) and the `partial` setting."""
        trees = ",".join(f"{t}=<sha256>" for t in self.sha256)
        return (BenchmarkOption("sha256", "", f"Digests for another revision: '{trees}' (sha256 of each tree's sorted "
                                f"sha256sum manifest); empty: revision {self.revision[:12]}."),
                partial_option("partial or changed copy; by default a local copy must be the whole pinned release."))

    def pins(self, setting: str) -> dict[str, str]:
        """The pinned digests, those the `sha256` setting names replaced; a tree it names must be one of ours."""
        pins = {**self.sha256, **(parse_pins(setting) if setting else {})}
        if set(pins) != set(self.sha256):
            trees = " and/or ".join(f"{t}=..." for t in self.sha256)
            raise TomConfigError(f"{self.benchmark} sha256: expected {trees}, got {pins}")
        return pins

    def check(self, folder: Path, pins: Mapping[str, str]) -> None:
        """A local copy is the whole release `pins` name: every file of every tree, each tree's digest."""
        check_trees(folder, self.files, pins, f"restore it, give --tom-set {self.benchmark}.sha256={{tree}}=<sha256> for "
                    "another revision, " + self.advice)

    def download(self, folder: Path, pins: Mapping[str, str]) -> None:
        """File by file, then checked; the manifest, written last, marks the copy verified."""
        (folder / MANIFEST).unlink(missing_ok=True)
        fetch_files(self.url, folder, {f"{t}/{f}": None for t in pins for f in self.files}, workers=8)
        check_trees(folder, self.files, pins, "the download is not the pinned release; refusing to use it")
        write_manifest(folder / MANIFEST, {"source": self.url, "sha256": dict(pins)})

    def release(self, pins: Mapping[str, str]) -> Release:
        """`<data-dir>/<benchmark>/` (the repository's layout), else `<data-dir>/`, else the download cache of `pins`."""
        trees = " and ".join(f"{t}/" for t in pins)
        return Release(
            self.benchmark, (self.benchmark, ""), lambda f: all((f / t).is_dir() for t in pins),
            self.revision if dict(pins) == dict(self.sha256) else pins_key(pins), lambda c: (c / MANIFEST).is_file(),
            lambda c: check_trees(c, self.files, pins, REFETCH), lambda c: self.download(c, pins),
            f"Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding {self.benchmark}/ from {self.repository} at "
            f"{self.revision[:12]} (its {trees}), or pass --tom-download to fetch them (each tree checked against its "
            "pinned digest).", label=self.label)
