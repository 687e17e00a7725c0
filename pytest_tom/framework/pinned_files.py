"""A release that is several files of a git repository, each pinned by its sha256, possibly at several revisions (the
files at one commit and older versions of some at another, kept under a folder of their own): the many-file sibling of
`pinned.PinnedFile`, found and cached the same way. A download fetches each revision's files into its folder of the
copy, checked against their sha256s before anything reads them, and records them in a manifest written last; a cached
copy is used only if that manifest records exactly the pins, and is re-checked against it before every use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_tom.errors import TomDataError
from pytest_tom.fetch import MANIFEST, REFETCH, check_recorded, fetch_files, read_manifest, write_manifest
from pytest_tom.framework.release import Release


@dataclass(frozen=True, slots=True)
class PinnedFiles:
    """`files`: each file's path in a copy -> its sha256. `revisions`: a folder of the copy (`""`: its root; others end
    in `/`) -> the revision it holds, the first naming the cache folder; a file comes from the revision of the longest
    folder its path is under, at its path less that folder. `marker`: the file whose presence makes a folder a local
    copy. `wanted` ends the not-found message.
    """

    benchmark: str
    label: str
    marker: str
    revisions: Mapping[str, str]
    files: Mapping[str, str]
    wanted: str

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

    def check_download(self, folder: Path) -> None:
        """A cached download, verified against these pins and unchanged since."""
        files = read_manifest(folder / MANIFEST, folder).get("files")
        if files != dict(self.files):
            raise TomDataError(f"this download was not verified against the pinned sha256s; {REFETCH}", path=folder)
        check_recorded(folder, files)

    def release(self, url: str) -> Release:
        """`<data-dir>/<benchmark>/` (the repository's layout), `<data-dir>/`, else the download cache."""
        return Release(
            self.benchmark, (self.benchmark, ""), lambda f: (f / self.marker).is_file(), next(iter(self.revisions.values())),
            lambda c: (c / MANIFEST).is_file(), self.check_download, lambda c: self.download(url, c), self.wanted,
            label=self.label)
