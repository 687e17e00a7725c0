"""A release declaration: a local copy first, then the re-checked download cache, then a verified download."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.fetch import MANIFEST, check_recorded, fetch_files, manifest_files, write_manifest
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.release import Release, cached_or_fetched, check_trees, pins_key, pins_setting, tree_digest

A, B = "a" * 64, "B" * 64


def _release(calls: list[str], *, fail_check: bool = False) -> Release:
    def check(folder: Path) -> None:
        calls.append("check")
        if fail_check:
            raise TomDataError("changed", path=folder)

    def fetch(folder: Path) -> None:
        calls.append("fetch")
        folder.mkdir(parents=True)
        (folder / "x.json").write_text("{}")

    return Release("demo", ("demo", ""), lambda c: (c / "x.json").is_file(), "rev1", lambda c: (c / "x.json").exists(),
                   check, fetch, "Put x.json there.", label="Demo", file="x.json")


def test_a_local_copy_comes_first_and_is_not_verified(tmp_path: Path) -> None:
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "x.json").write_text("{}")
    calls: list[str] = []
    assert _release(calls).locate(DataSource(tmp_path, True, tmp_path / "cache")) == (tmp_path / "demo", False)
    assert calls == []


def test_the_cache_is_rechecked_then_fetched_only_when_allowed(tmp_path: Path) -> None:
    calls: list[str] = []
    cache = tmp_path / "cache"
    with pytest.raises(TomDataError, match=r"Demo data not found; looked in .*/demo/x.json, .*x.json\. Put x.json"):
        _release(calls).locate(DataSource(tmp_path, False, cache))
    assert calls == []
    assert _release(calls).locate(DataSource(None, True, cache)) == (cache / "demo" / "rev1", True)
    assert calls == ["fetch"]
    assert _release(calls).locate(DataSource(None, False, cache)) == (cache / "demo" / "rev1", True)
    assert calls == ["fetch", "check"]
    with pytest.raises(TomDataError, match="changed"):  # offline, a changed copy is an error, never used
        _release([], fail_check=True).locate(DataSource(None, False, cache))


def test_cached_or_fetched_refetches_a_changed_copy_when_allowed() -> None:
    calls: list[str] = []

    def bad() -> None:
        raise TomDataError("changed")

    assert cached_or_fetched(True, bad, lambda: calls.append("fetch"), download=True) and calls == ["fetch"]
    assert not cached_or_fetched(False, bad, lambda: calls.append("fetch"), download=False)


def test_the_sha256_setting(tmp_path: Path) -> None:
    assert pins_setting("") is None and pins_setting(None) is None
    assert pins_setting(f" x.jsonl={A}, y.jsonl = {B} ") == {"x.jsonl": A, "y.jsonl": B.lower()}
    manifest = tmp_path / "SHA256SUMS"
    manifest.write_text(f"{A}  data/x.jsonl\n# note\n{B} *y.jsonl\n")
    assert pins_setting(str(manifest)) == {"x.jsonl": A, "y.jsonl": B.lower()}
    with pytest.raises(TomConfigError, match="expected a sha256 of 64 hex digits"):
        pins_setting("x.jsonl=abc")


def test_custom_pins_get_their_own_cache_folder() -> None:
    key = pins_key({"x.jsonl": A})
    assert key.startswith("sha256-") and len(key) == 23
    assert key == pins_key({"x.jsonl": A}) != pins_key({"x.jsonl": B.lower()})


def test_a_manifest_records_a_download_and_catches_a_later_edit(tmp_path: Path) -> None:
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "s.json").write_text("story")
    sha = hashlib.sha256(b"story").hexdigest()
    write_manifest(tmp_path / MANIFEST, {"files": {"t1/s.json": sha}})
    assert json.loads((tmp_path / MANIFEST).read_text())["files"] == {"t1/s.json": sha}
    check_recorded(tmp_path, manifest_files(tmp_path))
    (tmp_path / "t1" / "s.json").write_text("stories")
    with pytest.raises(TomDataError, match="no longer matches the sha256 recorded when it was verified"):
        check_recorded(tmp_path, manifest_files(tmp_path))
    (tmp_path / "t1" / "s.json").unlink()
    with pytest.raises(TomDataError, match="file of a verified download is missing"):
        check_recorded(tmp_path, manifest_files(tmp_path))
    (tmp_path / MANIFEST).write_text("not json")
    with pytest.raises(TomDataError, match="no readable record of a verified download"):
        manifest_files(tmp_path)


def test_fetch_files_checks_pins_and_leaves_no_partial_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f.json").write_bytes(b"[1]")
    good = hashlib.sha256(b"[1]").hexdigest()
    got = fetch_files(src.as_uri(), tmp_path / "out", {"d/f.json": good}, workers=2)
    assert got == {"d/f.json": good} and (tmp_path / "out" / "d" / "f.json").read_bytes() == b"[1]"
    with pytest.raises(TomDataError, match="checksum mismatch"):
        fetch_files(src.as_uri(), tmp_path / "bad", {"d/f.json": A})
    assert not any(p.is_file() for p in (tmp_path / "bad").rglob("*"))


def test_a_tree_is_pinned_by_the_digest_of_its_sha256sum_manifest_and_checked_whole(tmp_path: Path) -> None:
    files = {f"{n}.txt": tmp_path / f"{n}.txt" for n in ("b", "a")}
    for name, path in files.items():
        path.write_text(name)
    manifest = "".join(f"{hashlib.sha256(n.encode()).hexdigest()}  {n}\n" for n in ("a.txt", "b.txt"))
    pin = tree_digest(files)
    assert pin == hashlib.sha256(manifest.encode()).hexdigest()
    check_trees(tmp_path.parent, list(files), {tmp_path.name: pin}, "advice on {tree}")
    files["b.txt"].write_text("edited")
    with pytest.raises(TomDataError, match=f"{tmp_path.name}: the files' digest is [0-9a-f]{{64}}, not the pinned .*"
                                           f"revision; advice on {tmp_path.name}"):
        check_trees(tmp_path.parent, list(files), {tmp_path.name: pin}, "advice on {tree}")
    files["a.txt"].unlink()
    with pytest.raises(TomDataError, match="1 of 2 files are missing: advice"):
        check_trees(tmp_path.parent, list(files), {tmp_path.name: pin}, "advice on {tree}")
