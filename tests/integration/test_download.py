"""Fetching official data (pytest_tom.fetch): pinned sha256, safe archive extraction, from a local server only."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import os
import shutil
import socket
import stat
import tarfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.fetch import (
    LIMITS,
    MANIFEST,
    Limits,
    check_extracted,
    check_pinned,
    download_verified,
    extract_file,
    fetch_archive,
    fetch_pinned,
    sha256_file,
)
from pytest_tom.framework.release import parse_pins, read_pins


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; records each request; cuts a file listed in `truncate` short after half its bytes."""

    requests_seen: list[str] = []
    truncate: set[str] = set()

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Handler.requests_seen.append(self.path)
        local = Path(self.translate_path(self.path))
        if local.name in _Handler.truncate:
            body = local.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        super().do_GET()


Serve = Callable[[Path], str]
Release = tuple[Path, dict[str, str]]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start an HTTP server on 127.0.0.1 for a folder; return its base URL (ends with '/')."""
    servers: list[http.server.ThreadingHTTPServer] = []
    _Handler.requests_seen = []
    _Handler.truncate = set()

    def start(root: Path) -> str:
        handler = functools.partial(_Handler, directory=str(root))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


FILES = {"False Belief Task.jsonl": b'{"a": 1}\n', "Hidden Emotions.jsonl": b'{"b": 2}\n' * 100}


@pytest.fixture
def release(tmp_path: Path) -> Release:
    """A mirror folder holding the release files, and their pins."""
    root = tmp_path / "mirror"
    (root / "data").mkdir(parents=True)
    for name, data in FILES.items():
        (root / "data" / name).write_bytes(data)
    return root, {name: sha(data) for name, data in FILES.items()}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# -- pinned files ------------------------------------------------------------------------------------------------


def test_download_then_reuse_without_network(serve: Serve, release: Release, tmp_path: Path) -> None:
    root, pins = release
    url = serve(root) + "data/"
    dest = tmp_path / "cache" / "tombench"
    assert fetch_pinned(url, pins, dest) == dest
    assert sorted(p.name for p in dest.iterdir()) == sorted(FILES)
    assert all((dest / n).read_bytes() == data for n, data in FILES.items())
    assert "/data/Hidden%20Emotions.jsonl" in _Handler.requests_seen  # names are quoted
    # a later call finds the verified copies and asks the server nothing
    _Handler.requests_seen.clear()
    shutil.rmtree(root)
    fetch_pinned(url, pins, dest)
    assert _Handler.requests_seen == []


def test_a_stale_copy_is_downloaded_again(serve: Serve, release: Release, tmp_path: Path) -> None:
    root, pins = release
    dest = tmp_path / "cache"
    dest.mkdir()
    (dest / "Hidden Emotions.jsonl").write_bytes(b"an older revision")
    fetch_pinned(serve(root) + "data/", pins, dest)
    assert (dest / "Hidden Emotions.jsonl").read_bytes() == FILES["Hidden Emotions.jsonl"]
    assert _Handler.requests_seen == ["/data/False%20Belief%20Task.jsonl", "/data/Hidden%20Emotions.jsonl"]


def test_a_tampered_file_is_refused(serve: Serve, release: Release, tmp_path: Path) -> None:
    root, pins = release
    victim = root / "data" / "Hidden Emotions.jsonl"
    victim.write_bytes(victim.read_bytes().replace(b"2", b"3"))
    url = serve(root) + "data/"
    dest = tmp_path / "cache"
    with pytest.raises(TomDataError) as info:
        fetch_pinned(url, pins, dest)
    message = str(info.value)
    assert f"file {dest / 'Hidden Emotions.jsonl'}: checksum mismatch for {url}Hidden%20Emotions.jsonl" in message
    assert f"expected sha256 {pins['Hidden Emotions.jsonl']}, got {sha(victim.read_bytes())}" in message
    assert "refusing to use data that differs from the pinned release" in message
    assert not (dest / "Hidden Emotions.jsonl").exists() and leftovers(dest) == []
    assert (dest / "False Belief Task.jsonl").read_bytes() == FILES["False Belief Task.jsonl"]  # the good one is kept


def test_a_partial_download_never_replaces_a_good_file(serve: Serve, release: Release, tmp_path: Path) -> None:
    root, pins = release
    dest = tmp_path / "cache"
    dest.mkdir()
    good = b"the copy this user has been running on"
    (dest / "Hidden Emotions.jsonl").write_bytes(good)
    _Handler.truncate = {"Hidden Emotions.jsonl"}
    with pytest.raises(TomDataError, match="checksum mismatch for .*Hidden%20Emotions.jsonl"):
        fetch_pinned(serve(root) + "data/", pins, dest)
    assert (dest / "Hidden Emotions.jsonl").read_bytes() == good
    assert leftovers(dest) == []


def test_an_unreachable_source_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/data/"
    with pytest.raises(TomDataError, match=rf"download of {url}x\.jsonl failed"):
        fetch_pinned(url, {"x.jsonl": "0" * 64}, tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == [] and list((tmp_path / "cache").iterdir()) == []


def test_a_missing_file_on_the_server_is_a_clear_error(serve: Serve, release: Release, tmp_path: Path) -> None:
    root, _ = release
    with pytest.raises(TomDataError, match=r"download of .*/data/absent\.jsonl failed: HTTP Error 404"):
        fetch_pinned(serve(root) + "data/", {"absent.jsonl": "0" * 64}, tmp_path / "cache")


def test_download_verified_streams_into_the_temporary_file(serve: Serve, release: Release, tmp_path: Path) -> None:
    root, pins = release
    tmp, target = tmp_path / "part", tmp_path / "target"
    download_verified(serve(root) + "data/Hidden%20Emotions.jsonl", pins["Hidden Emotions.jsonl"], tmp, target)
    assert tmp.read_bytes() == FILES["Hidden Emotions.jsonl"] and not target.exists()
    assert sha256_file(tmp) == pins["Hidden Emotions.jsonl"]


def test_a_file_url_works_too(release: Release, tmp_path: Path) -> None:
    root, pins = release
    dest = tmp_path / "cache"
    fetch_pinned((root / "data").as_uri() + "/", pins, dest)
    assert (dest / "Hidden Emotions.jsonl").read_bytes() == FILES["Hidden Emotions.jsonl"]


# -- archives ---------------------------------------------------------------------------------------------------------


DATA = b'[{"set_id": "x"}]'


def make_tar(path: Path, members: dict[str, bytes], *, mode: str = "w:gz", special: dict[str, bytes] | None = None,
             links: dict[str, str] | None = None, hardlinks: dict[str, str] | None = None) -> str:
    """Write a tar with regular `members`, symlinks, hard links and special files (type byte -> name)."""
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        for name, target in (hardlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.LNKTYPE, target
            tar.addfile(info)
        for name, kind in (special or {}).items():
            info = tarfile.TarInfo(name)
            info.type = kind
            tar.addfile(info)
    return sha(path.read_bytes())


def make_zip(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3  # unix
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


def test_an_archive_is_downloaded_checked_and_only_its_data_file_written(serve: Serve, tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    root.mkdir()
    digest = make_tar(root / "fantom.tar.gz", {"fantom/fantom_v1.json": DATA, "fantom/README": b"x"})
    dest = tmp_path / "cache"
    url = serve(root) + "fantom.tar.gz"
    got = fetch_archive(url, digest, "fantom_v1.json", dest)
    assert got == dest / "fantom_v1.json" and got.read_bytes() == DATA
    # nothing else written, no temp left; the manifest records the extracted file's sha256 for later re-checks
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, "fantom_v1.json"]
    (root / "fantom.tar.gz").unlink()
    _Handler.requests_seen.clear()
    assert fetch_archive(url, digest, "fantom_v1.json", dest) == got  # second call: no download
    assert _Handler.requests_seen == []


def test_a_different_archive_is_refused(serve: Serve, tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    root.mkdir()
    make_tar(root / "fantom.tar.gz", {"fantom_v1.json": DATA})
    with pytest.raises(TomDataError, match="checksum mismatch"):
        fetch_archive(serve(root) + "fantom.tar.gz", "0" * 64, "fantom_v1.json", tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"members": {"../fantom_v1.json": DATA}}, "a '..' component"),
        ({"members": {"fantom/../../fantom_v1.json": DATA}}, "a '..' component"),
        ({"members": {"..\\fantom_v1.json": DATA}}, "a '..' component"),
        ({"members": {"/tmp/fantom_v1.json": DATA}}, "an absolute path"),
        ({"members": {"C:/fantom_v1.json": DATA}}, "an absolute path"),
        ({"members": {"fantom_v1.json": DATA}, "links": {"fantom/evil": "/etc/passwd"}}, "a link"),
        ({"members": {"fantom_v1.json": DATA}, "hardlinks": {"fantom/evil": "/etc/passwd"}}, "a link"),
        ({"members": {"fantom_v1.json": DATA}, "special": {"fantom/pipe": tarfile.FIFOTYPE}}, "a special file"),
        ({"members": {"fantom_v1.json": DATA}, "special": {"fantom/tty": tarfile.CHRTYPE}}, "a special file"),
        ({"members": {"fantom_v1.json": DATA}, "special": {"fantom/disk": tarfile.BLKTYPE}}, "a special file"),
    ],
)
def test_unsafe_tar_archives_are_refused(serve: Serve, tmp_path: Path, kw: dict[str, object], why: str) -> None:
    root = tmp_path / "mirror"
    root.mkdir()
    digest = make_tar(root / "bad.tar.gz", **kw)  # type: ignore[arg-type]
    dest = tmp_path / "deep" / "cache"
    with pytest.raises(TomDataError, match=f"refusing to extract: member .* is {why}"):
        fetch_archive(serve(root) + "bad.tar.gz", digest, "fantom_v1.json", dest)
    assert list(dest.iterdir()) == []  # nothing written, not even the data file that was safe
    assert not (tmp_path / "deep" / "fantom_v1.json").exists() and not (tmp_path / "fantom_v1.json").exists()


def test_an_uncompressed_tar_and_the_shallowest_copy(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar"
    make_tar(archive, {"x/y/fantom_v1.json": b"deep", "x/fantom_v1.json": DATA, "x/fantom_v1.json.bak": b"no"}, mode="w")
    assert extract_file(archive, "fantom_v1.json", tmp_path / "out").read_bytes() == DATA


def test_zip_archives_and_zip_slip(tmp_path: Path) -> None:
    good = make_zip(tmp_path / "good.zip", {"fantom/fantom_v1.json": DATA, "fantom/other.txt": b"x"})
    out = tmp_path / "out"
    assert extract_file(good, "fantom_v1.json", out).read_bytes() == DATA
    assert sorted(p.name for p in out.iterdir()) == ["fantom_v1.json"]
    bad = make_zip(tmp_path / "bad.zip", {"../../fantom_v1.json": b"[]"})
    with pytest.raises(TomDataError, match="'..' component"):
        extract_file(bad, "fantom_v1.json", tmp_path / "out2")


@pytest.mark.parametrize(
    ("members", "links", "why"),
    [
        ({"/etc/fantom_v1.json": b"[]"}, None, "an absolute path"),
        ({"fantom\\..\\..\\fantom_v1.json": b"[]"}, None, "a '..' component"),
        ({"fantom_v1.json": DATA}, {"fantom/evil": "/etc/passwd"}, "a link"),
    ],
)
def test_unsafe_zip_archives_are_refused(tmp_path: Path, members: dict[str, bytes], links: dict[str, str] | None,
                                        why: str) -> None:
    bad = make_zip(tmp_path / "bad.zip", members, links)
    out = tmp_path / "out"
    with pytest.raises(TomDataError, match=f"refusing to extract: member .* is {why}"):
        extract_file(bad, "fantom_v1.json", out)
    assert list(out.iterdir()) == []


def test_not_an_archive_or_no_data_file(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_bytes(DATA)
    with pytest.raises(TomDataError, match=r"file .*plain\.json: not a tar or zip archive"):
        extract_file(plain, "fantom_v1.json", tmp_path / "out")
    archive = tmp_path / "a.tar.gz"
    make_tar(archive, {"fantom/README": b"x"}, special={"fantom/fantom_v1.json": tarfile.DIRTYPE})  # a folder is not the file
    with pytest.raises(TomDataError, match="no fantom_v1.json in the archive"):
        extract_file(archive, "fantom_v1.json", tmp_path / "out")


def test_extraction_replaces_the_target_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "fantom_v1.json").write_bytes(b"old")
    archive = tmp_path / "a.zip"
    make_zip(archive, {"fantom_v1.json": DATA})
    extract_file(archive, "fantom_v1.json", out)
    assert (out / "fantom_v1.json").read_bytes() == DATA and leftovers(out) == []
    assert not os.path.exists(tmp_path / "fantom_v1.json")


# -- through the plugin and on the real release -------------------------------------------------------------------------


def test_tom_download_fetches_into_the_cache_and_later_runs_reuse_it(
    pytester: pytest.Pytester, fixtures_dir: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = fixtures_dir / "tombench" / "data"
    pins = {p.name: sha(p.read_bytes()) for p in data.glob("*.jsonl")}
    manifest = tmp_path / "SHA256SUMS"  # the fixtures as a mirror's own release, pinned by a sha256sum manifest
    manifest.write_text("".join(f"{digest}  data/{name}\n" for name, digest in pins.items()), encoding="utf-8")
    url = serve(fixtures_dir / "tombench")
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    args = ["--tom-benchmark=tombench", f"--tom-data-dir={empty}", f"--tom-cache-dir={tmp_path / 'cache'}",
            f"--tom-set=tombench.sha256={manifest}", "--collect-only", "-q", "-p", "no:cacheprovider"]
    result = pytester.runpytest(*args, "--tom-download", f"--tom-set=tombench.source_url={url}")
    result.stdout.fnmatch_lines(["*52 tests collected*"])
    [cached] = (tmp_path / "cache" / "data" / "tombench").glob("sha256-*/data")  # not the pinned revision's folder
    assert sorted(p.name for p in cached.glob("*.jsonl")) == sorted(pins)
    _Handler.requests_seen.clear()
    again = pytester.runpytest(*args)
    again.stdout.fnmatch_lines(["*52 tests collected*"])
    assert _Handler.requests_seen == []


@pytest.mark.realdata
def test_the_real_tombench_release_matches_the_pinned_checksums(real_data_dir: Path, serve: Serve, tmp_path: Path) -> None:
    from pytest_tom.evals.tombench.data import OFFICIAL_SHA256

    dest = fetch_pinned(serve(real_data_dir / "tombench") + "data/", OFFICIAL_SHA256, tmp_path / "cache")
    assert sorted(p.name for p in dest.iterdir()) == sorted(OFFICIAL_SHA256)


# -- limits, manifests and checksum settings (issue 8) ------------------------------------------------------------------


class _Clock:
    """A fake monotonic clock: each reading advances it by `step` seconds."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_download_stops_at_its_deadline_and_its_size_cap(serve: Serve, release: Release, tmp_path: Path) -> None:
    root, pins = release
    url = serve(root) + "data/Hidden%20Emotions.jsonl"
    tmp, target = tmp_path / "part", tmp_path / "target"
    # the clock moves 1 s per reading: the second read is past a 1.5 s deadline, whatever the machine's speed
    with pytest.raises(TomDataError, match=r"took longer than its deadline of 1.5 s \(900 bytes received\)"):
        download_verified(url, pins["Hidden Emotions.jsonl"], tmp, target, clock=_Clock(1.0),
                          limits=Limits(deadline_s=1.5, max_bytes=1 << 20, timeout_s=5))
    with pytest.raises(TomDataError, match="announces 900 bytes, over the cap of 899 bytes"):
        download_verified(url, pins["Hidden Emotions.jsonl"], tmp, target, limits=Limits(max_bytes=899))
    # a file:// response counts what it reads too (no server to announce a size)
    file_url = (root / "data" / "Hidden Emotions.jsonl").as_uri()
    download_verified(file_url, pins["Hidden Emotions.jsonl"], tmp, target, limits=Limits(max_bytes=900))
    assert tmp.read_bytes() == FILES["Hidden Emotions.jsonl"]


def test_the_default_limits_leave_the_real_releases_ample_room() -> None:
    assert LIMITS.max_bytes >= 256 << 20 and LIMITS.deadline_s >= 600 and LIMITS.max_expanded >= 256 << 20
    assert LIMITS.max_expanded < 512 << 20  # the archive bomb (522 KB expanding to 512 MiB) is refused


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_an_archive_expanding_past_the_cap_is_refused_before_writing(tmp_path: Path, kind: str) -> None:
    members = {"fantom/README": b"r" * 100, "fantom/fantom_v1.json": b"\0" * 5000}
    archive = tmp_path / f"bomb.{kind}"
    if kind == "tar":
        make_tar(archive, members)
    else:
        make_zip(archive, members)
    out = tmp_path / "out"
    with pytest.raises(TomDataError, match="refusing to extract: the archive expands to more than 5100 bytes, over the cap of 4096"):
        extract_file(archive, "fantom_v1.json", out, limits=Limits(max_expanded=4096))
    assert list(out.iterdir()) == []
    assert extract_file(archive, "fantom_v1.json", out, limits=Limits(max_expanded=5100)).stat().st_size == 5000


def test_a_damaged_extracted_copy_is_refused_then_fetched_again(serve: Serve, tmp_path: Path) -> None:
    root = tmp_path / "mirror"
    root.mkdir()
    digest = make_tar(root / "fantom.tar.gz", {"fantom/fantom_v1.json": DATA})
    url, dest = serve(root) + "fantom.tar.gz", tmp_path / "cache"
    got = fetch_archive(url, digest, "fantom_v1.json", dest)
    assert check_extracted(dest, "fantom_v1.json", digest) == got
    got.write_bytes(DATA.replace(b"x", b"y"))
    with pytest.raises(TomDataError, match=r"no longer matches the sha256 recorded when it was verified .*--tom-download"):
        check_extracted(dest, "fantom_v1.json", digest)
    with pytest.raises(TomDataError, match=f"comes from archive sha256 {digest}, not the expected {'1' * 64}"):
        check_extracted(dest, "fantom_v1.json", "1" * 64)
    _Handler.requests_seen.clear()
    assert fetch_archive(url, digest, "fantom_v1.json", dest).read_bytes() == DATA  # re-fetched, one request
    assert _Handler.requests_seen == ["/fantom.tar.gz"]
    (dest / MANIFEST).unlink()
    with pytest.raises(TomDataError, match="no readable record of a verified download"):
        check_extracted(dest, "fantom_v1.json", digest)


def test_check_pinned_names_a_missing_or_damaged_cached_file(release: Release, tmp_path: Path) -> None:
    root, pins = release
    folder = root / "data"
    check_pinned(folder, pins)
    (folder / "Hidden Emotions.jsonl").write_bytes(b"changed")
    with pytest.raises(TomDataError, match=r"Hidden Emotions.jsonl: this downloaded copy no longer matches its pinned sha256"):
        check_pinned(folder, pins)
    (folder / "False Belief Task.jsonl").unlink()
    with pytest.raises(TomDataError, match=r"the download cache is incomplete: 'False Belief Task.jsonl' missing"):
        check_pinned(folder, pins)


def test_checksum_settings_parse_lists_and_sha256sum_manifests(tmp_path: Path) -> None:
    a, b = "a" * 64, "B" * 64
    assert parse_pins(f"x.jsonl={a}, Hidden Emotions.jsonl = {b}") == {"x.jsonl": a, "Hidden Emotions.jsonl": b.lower()}
    for bad, why in [("x.jsonl", "expected 'file name=sha256'"), (f"x.jsonl={a},x.jsonl={a}", "given twice"),
                     ("x.jsonl=123", "64 hex digits"), (",", "no 'file name=sha256'")]:
        with pytest.raises(TomConfigError, match=why):
            parse_pins(bad)
    manifest = tmp_path / "SHA256SUMS"
    manifest.write_text(f"# ToMBench mirror\n{a}  data/False Belief Task.jsonl\n{b} *Hidden Emotions.jsonl\n\n")
    assert read_pins(manifest) == {"False Belief Task.jsonl": a, "Hidden Emotions.jsonl": b.lower()}
    manifest.write_text(f"{a}  one.jsonl\nnot a checksum line\n")
    with pytest.raises(TomDataError, match="SHA256SUMS, record line 2: expected '<sha256>  <file name>'"):
        read_pins(manifest)
    with pytest.raises(TomDataError, match="cannot read the checksum manifest"):
        read_pins(tmp_path / "absent")
