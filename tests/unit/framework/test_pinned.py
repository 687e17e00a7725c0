"""Pinned releases. One file: fetched and checked against its sha256 and git blob id, kept with a manifest, re-checked
from the cache, refused when the bytes are not the pinned ones. Many files at two revisions: each fetched from its
revision into its folder of the copy, refused when bytes or pins differ. Trees: settings, a local copy checked whole,
a download refused unless each tree has its pinned digest, then reused and re-checked. All use file:// mirrors.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.fetch import MANIFEST
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.pinned import PinnedFile, PinnedFiles, PinnedTrees, git_blob
from pytest_tom.framework.release import tree_digest

BODY = b"line one;x\r\nline two;y\r\n"


def pinned(body: bytes = BODY) -> PinnedFile:
    return PinnedFile("toy", "Toy", "data/toy.csv", "github.com/o/toy", "f" * 40, hashlib.sha256(body).hexdigest(),
                      hashlib.sha1(b"blob %d\0" % len(body) + body, usedforsecurity=False).hexdigest())


def mirror(tmp_path: Path, body: bytes = BODY) -> str:
    (tmp_path / "m" / "data").mkdir(parents=True)
    (tmp_path / "m" / "data" / "toy.csv").write_bytes(body)
    return (tmp_path / "m").as_uri() + "/"


def test_git_blob_is_what_git_names_the_bytes(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(BODY)
    git = subprocess.run(["git", "hash-object", str(tmp_path / "f")], capture_output=True, text=True, check=False)
    assert git_blob(tmp_path / "f") == pinned().blob and (git.returncode or git.stdout.strip() == pinned().blob)


def test_git_blob_gives_the_ids_git_gives_known_bytes(tmp_path: Path) -> None:  # whether or not git is installed
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "hello").write_bytes(b"hello\n")
    assert git_blob(tmp_path / "empty") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert git_blob(tmp_path / "hello") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_a_download_is_verified_kept_and_rechecked(tmp_path: Path) -> None:
    url, p = mirror(tmp_path), pinned()
    folder, verified = p.release(url, "").locate(DataSource(None, True, tmp_path / "cache"))
    assert verified and (folder / p.file).read_bytes() == BODY
    assert p.release(url, "").locate(DataSource(None, False, tmp_path / "cache"))[0] == folder  # from the cache
    (folder / p.file).write_bytes(BODY + b"tampered")
    with pytest.raises(TomDataError):
        p.release(url, "").locate(DataSource(None, False, tmp_path / "cache"))


def test_bytes_with_the_right_sha256_but_another_blob_are_refused(tmp_path: Path) -> None:
    p = pinned()
    wrong = PinnedFile(p.benchmark, p.label, p.file, p.repository, p.revision, p.sha256, "0" * 40)
    with pytest.raises(TomDataError, match="git blob id .*not the pinned 0000"):
        wrong.release(mirror(tmp_path), "").locate(DataSource(None, True, tmp_path / "cache"))
    assert not list((tmp_path / "cache").rglob("toy.csv"))


def test_a_local_copy_is_found_first_and_the_advice_names_the_layout(tmp_path: Path) -> None:
    (tmp_path / "root" / "toy" / "data").mkdir(parents=True)
    (tmp_path / "root" / "toy" / "data" / "toy.csv").write_bytes(BODY)
    assert pinned().release("", "").locate(DataSource(tmp_path / "root", False, tmp_path / "c"))[0] == tmp_path / "root" / "toy"
    with pytest.raises(Exception, match="toy/data/toy.csv from github.com/o/toy"):
        pinned().release("", "").locate(DataSource(tmp_path / "nothing", False, tmp_path / "c"))


NEW, OLD = "a" * 40, "b" * 40
BODIES = {"data/q.json": b"{}", "data/meta.json": b'{"k": 1}', "old/data/q.json": b'{"old": true}'}


def many(bodies: dict[str, bytes] = BODIES) -> PinnedFiles:
    return PinnedFiles("toy", "Toy", "data/meta.json", {"": NEW, "old/": OLD},
                       {p: hashlib.sha256(b).hexdigest() for p, b in bodies.items()}, "github.com/o/toy")


def many_mirror(tmp_path: Path) -> str:
    """The repository at both revisions: `old/` is a folder of the copy, not of the repository."""
    for path, body in BODIES.items():
        at = tmp_path / "m" / (f"{OLD}/{path[4:]}" if path.startswith("old/") else f"{NEW}/{path}")
        at.parent.mkdir(parents=True, exist_ok=True)
        at.write_bytes(body)
    return (tmp_path / "m").as_uri()


def test_many_files_a_file_comes_from_the_revision_of_the_longest_folder_it_is_under() -> None:
    assert [many().tree(p) for p in BODIES] == ["", "", "old/"]


def test_many_files_a_download_is_verified_kept_and_rechecked(tmp_path: Path) -> None:
    url, p = many_mirror(tmp_path), many()
    folder, verified = p.release(url).locate(DataSource(None, True, tmp_path / "cache"))
    assert verified and folder == tmp_path / "cache" / "toy" / NEW
    assert {path: (folder / path).read_bytes() for path in BODIES} == BODIES
    assert json.loads((folder / MANIFEST).read_text())["files"] == p.files
    assert p.release("unused").locate(DataSource(None, False, tmp_path / "cache")) == (folder, True)  # from the cache
    (folder / "old/data/q.json").write_bytes(b"edited")
    with pytest.raises(TomDataError, match="no longer matches"):
        p.release(url).locate(DataSource(None, False, tmp_path / "cache"))


def test_many_files_a_cached_copy_verified_against_other_pins_is_refused(tmp_path: Path) -> None:
    many().release(many_mirror(tmp_path)).locate(DataSource(None, True, tmp_path / "cache"))
    other = many({**BODIES, "data/q.json": b"[]"})
    with pytest.raises(TomDataError, match="not verified against the pinned sha256s"):
        other.release("unused").locate(DataSource(None, False, tmp_path / "cache"))


def test_many_files_a_download_with_other_bytes_is_refused_without_a_manifest(tmp_path: Path) -> None:
    url = many_mirror(tmp_path)
    with pytest.raises(TomDataError, match="sha256"):
        many({**BODIES, "old/data/q.json": b"other"}).release(url).locate(DataSource(None, True, tmp_path / "cache"))
    assert not (tmp_path / "cache" / "toy" / NEW / MANIFEST).exists()


def test_many_files_a_local_copy_is_found_first_else_the_advice(tmp_path: Path) -> None:
    (tmp_path / "root" / "toy" / "data").mkdir(parents=True)
    (tmp_path / "root" / "toy" / "data" / "meta.json").write_bytes(b"{}")
    found = many().release("").locate(DataSource(tmp_path / "root", False, tmp_path / "c"))
    assert found == (tmp_path / "root" / "toy", False)
    with pytest.raises(TomDataError, match=r"Toy data not found.*holding toy/data/ at aaaaaaaaaaaa; "
                       r"toy/old/data/ at bbbbbbbbbbbb from github.com/o/toy"):
        many().release("").locate(DataSource(tmp_path / "nothing", False, tmp_path / "c"))


TREE_FILES = ("x.txt", "deep/y.txt")
TREE_BODIES = {"a": ("a one\n", "a two\n"), "b": ("b one\n", "b two\n")}


def write_trees(root: Path, bodies: dict[str, tuple[str, ...]] = TREE_BODIES) -> dict[str, str]:
    """Both trees under `root`; their digests."""
    for tree, texts in bodies.items():
        for name, text in zip(TREE_FILES, texts, strict=True):
            (root / tree / name).parent.mkdir(parents=True, exist_ok=True)
            (root / tree / name).write_text(text)
    return {t: tree_digest({n: root / t / n for n in TREE_FILES}) for t in bodies}


def trees(sha256: dict[str, str], url: str = "") -> PinnedTrees:
    return PinnedTrees("toy", "Toy", "github.com/o/toy", "f" * 40, url, TREE_FILES, sha256)


def test_trees_the_sha256_setting_replaces_named_trees_and_refuses_others() -> None:
    t = trees({"a": "1" * 64, "b": "2" * 64})
    assert t.pins("") == {"a": "1" * 64, "b": "2" * 64}
    assert t.pins("b=" + "3" * 64) == {"a": "1" * 64, "b": "3" * 64}
    with pytest.raises(TomConfigError, match=r"toy sha256: expected a=\.\.\. and/or b=\.\.\., got"):
        t.pins("c=" + "3" * 64)
    sha256, partial = t.options()
    assert "'a=<sha256>,b=<sha256>'" in sha256.help and "revision ffffffffffff" in sha256.help
    assert partial.name == "partial" and partial.kind is bool


def test_trees_a_local_copy_must_be_whole_and_have_each_trees_digest(tmp_path: Path) -> None:
    pins = write_trees(tmp_path / "toy")
    t = trees(pins)
    t.check(tmp_path / "toy", pins)
    assert t.release(pins).locate(DataSource(tmp_path, False, tmp_path / "c")) == (tmp_path / "toy", False)
    (tmp_path / "toy" / "b" / "x.txt").write_text("edited\n")
    with pytest.raises(TomDataError, match=r"b: the files' digest is .*toy\.sha256=b=<sha256> .*toy\.partial=true"):
        t.check(tmp_path / "toy", pins)
    (tmp_path / "toy" / "a" / "deep" / "y.txt").unlink()
    with pytest.raises(TomDataError, match="1 of 2 files are missing: restore it"):
        t.check(tmp_path / "toy", pins)
    with pytest.raises(TomDataError, match=r"Toy data not found.*toy/ from github.com/o/toy at ffffffffffff \(its a/ and b/\)"):
        t.release(pins).locate(DataSource(tmp_path / "none", False, tmp_path / "c"))


def test_trees_a_download_is_checked_kept_rechecked_and_other_pins_get_their_own_folder(tmp_path: Path) -> None:
    pins = write_trees(tmp_path / "m")
    url, cache = (tmp_path / "m").as_uri(), tmp_path / "cache"
    with pytest.raises(TomDataError, match="a: the files' digest .*the download is not the pinned release"):
        trees({**pins, "a": "0" * 64}, url).release({**pins, "a": "0" * 64}).locate(DataSource(None, True, cache))
    folder, verified = trees(pins, url).release(pins).locate(DataSource(None, True, cache))
    assert verified and folder == cache / "toy" / ("f" * 40) and (folder / "b" / "deep" / "y.txt").read_text() == "b two\n"
    assert trees(pins, "").release(pins).locate(DataSource(None, False, cache))[0] == folder  # no fetch: the cache
    (folder / "a" / "x.txt").write_text("edited\n")
    with pytest.raises(TomDataError, match="a: the files' digest .*pass --tom-download"):
        trees(pins, "").release(pins).locate(DataSource(None, False, cache))
    other = write_trees(tmp_path / "m", {"a": ("new\n", "a two\n"), "b": TREE_BODIES["b"]})
    folder, _ = trees(pins, url).release(other).locate(DataSource(None, True, cache))
    assert folder.name.startswith("sha256-") and (folder / "a" / "x.txt").read_text() == "new\n"


def test_many_files_a_file_is_found_by_its_path_or_an_alias_and_checked_by_its_pin(tmp_path: Path) -> None:
    p = dataclasses.replace(many(), aliases=(("q.json", "q_old.json"),))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.json").write_bytes(BODIES["data/meta.json"])
    (tmp_path / "data" / "q_old.json").write_bytes(BODIES["data/q.json"])
    found = {path: p.find(tmp_path, path) for path in ("data/meta.json", "data/q.json")}
    assert found["data/q.json"] == tmp_path / "data" / "q_old.json"
    p.check(found)  # both have their pinned bytes
    with pytest.raises(TomDataError, match="this Toy file is missing"):
        p.find(tmp_path, "old/data/q.json")
    (tmp_path / "data" / "q_old.json").write_bytes(b"edited")
    with pytest.raises(TomDataError, match="q_old.json.*sha256"):
        p.check(found)
