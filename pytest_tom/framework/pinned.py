"""A release that is one file of a git repository at a pinned revision (BigToM's CSV; MMToM-QA's file has the same
shape): a local copy under the data root, else the download cache, else, with --tom-download, a fetch checked against
the file's sha256 and the git blob id the repository's tree names it by, before anything reads it. The verified copy
keeps a manifest and is re-checked against it before every later use. A user's `sha256=` pins another copy instead
(the blob id is then not asked: it names the pinned bytes only).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pytest_tom.errors import TomDataError
from pytest_tom.fetch import MANIFEST, check_recorded, fetch_files, read_manifest, write_manifest
from pytest_tom.framework.release import Release


def git_blob(path: Path) -> str:
    r"""The id git names the file's bytes by (`git hash-object`): sha1 of ``blob <size>\0`` and the content."""
    body = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(body) + body, usedforsecurity=False).hexdigest()


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

    def check_download(self, folder: Path, sha256: str) -> None:
        """A cached download, unchanged since it was verified against these pins."""
        files = read_manifest(folder / MANIFEST, folder).get("files")
        if not isinstance(files, dict) or files.get(self.file) != (sha256 or self.sha256):
            raise TomDataError(f"this download was not verified against sha256 {sha256 or self.sha256}; delete it, or "
                               "pass --tom-download to fetch a verified copy again", path=folder)
        check_recorded(folder, files)

    def release(self, url: str, sha256: str) -> Release:
        """`<data-dir>/<benchmark>/<file>` (the repository's layout), `<data-dir>/<file>`, else the download cache."""
        return Release(
            self.benchmark, (self.benchmark, ""), lambda f: (f / self.file).is_file(),
            sha256[:16] if sha256 else self.revision, lambda c: (c / MANIFEST).is_file(),
            lambda c: self.check_download(c, sha256), lambda c: self.download(url, c, sha256),
            f"Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding {self.benchmark}/{self.file} from "
            f"{self.repository} (revision {self.revision[:12]}), or pass --tom-download to fetch it (checked against its "
            "sha256 and git blob id).", label=self.label, file=self.file)
