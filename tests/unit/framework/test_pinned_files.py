"""A pinned many-file release at two revisions: each file fetched from its revision into its folder of the copy and
checked, kept with a manifest, re-checked from the cache, refused when bytes or pins differ. Uses a file:// mirror.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_tom.errors import TomDataError
from pytest_tom.fetch import MANIFEST
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.pinned_files import PinnedFiles

NEW, OLD = "a" * 40, "b" * 40
BODIES = {"data/q.json": b"{}", "data/meta.json": b'{"k": 1}', "old/data/q.json": b'{"old": true}'}


def pinned(bodies: dict[str, bytes] = BODIES) -> PinnedFiles:
    return PinnedFiles("toy", "Toy", "data/meta.json", {"": NEW, "old/": OLD},
                       {p: hashlib.sha256(b).hexdigest() for p, b in bodies.items()}, "Fetch the toy files.")


def mirror(tmp_path: Path) -> str:
    """The repository at both revisions: `old/` is a folder of the copy, not of the repository."""
    for path, body in BODIES.items():
        at = tmp_path / "m" / (f"{OLD}/{path[4:]}" if path.startswith("old/") else f"{NEW}/{path}")
        at.parent.mkdir(parents=True, exist_ok=True)
        at.write_bytes(body)
    return (tmp_path / "m").as_uri()


def test_a_file_comes_from_the_revision_of_the_longest_folder_it_is_under() -> None:
    assert [pinned().tree(p) for p in BODIES] == ["", "", "old/"]


def test_a_download_is_verified_kept_and_rechecked(tmp_path: Path) -> None:
    url, p = mirror(tmp_path), pinned()
    folder, verified = p.release(url).locate(DataSource(None, True, tmp_path / "cache"))
    assert verified and folder == tmp_path / "cache" / "toy" / NEW
    assert {path: (folder / path).read_bytes() for path in BODIES} == BODIES
    assert json.loads((folder / MANIFEST).read_text())["files"] == p.files
    assert p.release("unused").locate(DataSource(None, False, tmp_path / "cache")) == (folder, True)  # from the cache
    (folder / "old/data/q.json").write_bytes(b"edited")
    with pytest.raises(TomDataError, match="no longer matches"):
        p.release(url).locate(DataSource(None, False, tmp_path / "cache"))


def test_a_cached_copy_verified_against_other_pins_is_refused(tmp_path: Path) -> None:
    pinned().release(mirror(tmp_path)).locate(DataSource(None, True, tmp_path / "cache"))
    other = pinned({**BODIES, "data/q.json": b"[]"})
    with pytest.raises(TomDataError, match="not verified against the pinned sha256s"):
        other.release("unused").locate(DataSource(None, False, tmp_path / "cache"))


def test_a_download_with_other_bytes_is_refused_without_a_manifest(tmp_path: Path) -> None:
    url = mirror(tmp_path)
    with pytest.raises(TomDataError, match="sha256"):
        pinned({**BODIES, "old/data/q.json": b"other"}).release(url).locate(DataSource(None, True, tmp_path / "cache"))
    assert not (tmp_path / "cache" / "toy" / NEW / MANIFEST).exists()


def test_a_local_copy_is_found_first_else_the_advice(tmp_path: Path) -> None:
    (tmp_path / "root" / "toy" / "data").mkdir(parents=True)
    (tmp_path / "root" / "toy" / "data" / "meta.json").write_bytes(b"{}")
    found = pinned().release("").locate(DataSource(tmp_path / "root", False, tmp_path / "c"))
    assert found == (tmp_path / "root" / "toy", False)
    with pytest.raises(TomDataError, match="Toy data not found.*Fetch the toy files"):
        pinned().release("").locate(DataSource(tmp_path / "nothing", False, tmp_path / "c"))
