"""Releases that are trees of many small files at one revision of a git repository, each tree pinned by one digest
(`release.tree_digest`: the sha256 of its sorted `sha256sum` manifest) rather than by a sha256 per file, so a user pins
another revision with one `sha256=<tree>=<digest>,...` setting. A local copy is checked whole (every file present, each
tree's digest: counts catch a copy cut short, only a digest catches a file edited in place) unless `partial`. A download
is fetched file by file (the repository publishes no archive to pin) and checked before its manifest, written last,
marks it verified; other pins get a cache folder of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_tom.errors import TomConfigError
from pytest_tom.fetch import MANIFEST, REFETCH, fetch_files, write_manifest
from pytest_tom.framework.base import BenchmarkOption
from pytest_tom.framework.release import Release, check_trees, parse_pins, partial_option, pins_key


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
