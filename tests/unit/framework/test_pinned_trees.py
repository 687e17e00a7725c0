"""Pinned trees: settings (another revision's digests, partial), a local copy checked whole, a download fetched from a
file:// mirror written here, refused unless each tree has its pinned digest, then reused from the cache and re-checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.pinned_trees import PinnedTrees
from pytest_tom.framework.release import tree_digest

FILES = ("x.txt", "deep/y.txt")
BODIES = {"a": ("a one\n", "a two\n"), "b": ("b one\n", "b two\n")}


def write(root: Path, bodies: dict[str, tuple[str, ...]] = BODIES) -> dict[str, str]:
    """Both trees under `root`; their digests."""
    for tree, texts in bodies.items():
        for name, text in zip(FILES, texts, strict=True):
            (root / tree / name).parent.mkdir(parents=True, exist_ok=True)
            (root / tree / name).write_text(text)
    return {t: tree_digest({n: root / t / n for n in FILES}) for t in bodies}


def trees(sha256: dict[str, str], url: str = "") -> PinnedTrees:
    return PinnedTrees("toy", "Toy", "github.com/o/toy", "f" * 40, url, FILES, sha256)


def test_the_sha256_setting_replaces_named_trees_and_refuses_others() -> None:
    t = trees({"a": "1" * 64, "b": "2" * 64})
    assert t.pins("") == {"a": "1" * 64, "b": "2" * 64}
    assert t.pins("b=" + "3" * 64) == {"a": "1" * 64, "b": "3" * 64}
    with pytest.raises(TomConfigError, match=r"toy sha256: expected a=\.\.\. and/or b=\.\.\., got"):
        t.pins("c=" + "3" * 64)
    sha256, partial = t.options()
    assert "'a=<sha256>,b=<sha256>'" in sha256.help and "revision ffffffffffff" in sha256.help
    assert partial.name == "partial" and partial.kind is bool


def test_a_local_copy_must_be_whole_and_have_each_trees_digest(tmp_path: Path) -> None:
    pins = write(tmp_path / "toy")
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


def test_a_download_is_checked_kept_rechecked_and_other_pins_get_their_own_folder(tmp_path: Path) -> None:
    pins = write(tmp_path / "m")
    url, cache = (tmp_path / "m").as_uri(), tmp_path / "cache"
    with pytest.raises(TomDataError, match="a: the files' digest .*the download is not the pinned release"):
        trees({**pins, "a": "0" * 64}, url).release({**pins, "a": "0" * 64}).locate(DataSource(None, True, cache))
    folder, verified = trees(pins, url).release(pins).locate(DataSource(None, True, cache))
    assert verified and folder == cache / "toy" / ("f" * 40) and (folder / "b" / "deep" / "y.txt").read_text() == "b two\n"
    assert trees(pins, "").release(pins).locate(DataSource(None, False, cache))[0] == folder  # no fetch: the cache
    (folder / "a" / "x.txt").write_text("edited\n")
    with pytest.raises(TomDataError, match="a: the files' digest .*pass --tom-download"):
        trees(pins, "").release(pins).locate(DataSource(None, False, cache))
    other = write(tmp_path / "m", {"a": ("new\n", "a two\n"), "b": BODIES["b"]})
    folder, _ = trees(pins, url).release(other).locate(DataSource(None, True, cache))
    assert folder.name.startswith("sha256-") and (folder / "a" / "x.txt").read_text() == "new\n"
