"""--tom-download fetches the official files at a pinned revision, sha256-checked, from a local server."""

from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_tom.benchmarks import tombench


@pytest.fixture
def serve() -> Iterator:
    servers = []

    def start(root: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(root))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    requests_seen: list[str] = []

    def log_message(self, *args: object) -> None:
        _QuietHandler.requests_seen.append(self.path)


def _pin_fixture_hashes(monkeypatch: pytest.MonkeyPatch, data: Path) -> None:
    pins = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in data.glob("*.jsonl")}
    monkeypatch.setattr(tombench, "OFFICIAL_SHA256", pins)


def test_download_then_reuse_without_network(pytester: pytest.Pytester, fixtures_dir: Path, serve, monkeypatch, tmp_path: Path) -> None:
    _pin_fixture_hashes(monkeypatch, fixtures_dir / "tombench" / "data")
    url = serve(fixtures_dir / "tombench")
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    args = ["--tom-benchmark=tombench", f"--tom-data-dir={empty}", f"--tom-cache-dir={tmp_path / 'cache'}", "--collect-only", "-q"]
    result = pytester.runpytest(*args, "--tom-download", f"--tom-tombench-source-url={url}")
    result.stdout.fnmatch_lines(["*52 tests collected*"])
    cached = tmp_path / "cache" / "data" / "tombench" / tombench.OFFICIAL_REVISION / "data"
    assert sorted(p.name for p in cached.glob("*.jsonl")) == sorted(tombench.OFFICIAL_SHA256)
    # Later runs find the verified copy in the cache without --tom-download.
    _QuietHandler.requests_seen.clear()
    again = pytester.runpytest(*args)
    again.stdout.fnmatch_lines(["*52 tests collected*"])
    assert _QuietHandler.requests_seen == []


def test_a_tampered_file_is_refused(pytester: pytest.Pytester, fixtures_dir: Path, serve, monkeypatch, tmp_path: Path) -> None:
    _pin_fixture_hashes(monkeypatch, fixtures_dir / "tombench" / "data")
    mirror = tmp_path / "mirror"
    shutil.copytree(fixtures_dir / "tombench", mirror)
    victim = mirror / "data" / "Hidden Emotions.jsonl"
    victim.write_text(victim.read_text(encoding="utf-8").replace('"B"', '"C"'), encoding="utf-8")
    url = serve(mirror)
    result = pytester.runpytest(
        "--tom-benchmark=tombench", f"--tom-data-dir={tmp_path}", f"--tom-cache-dir={tmp_path / 'cache'}",
        "--tom-download", f"--tom-tombench-source-url={url}", "--collect-only",
    )
    result.stdout.fnmatch_lines(["*Hidden%20Emotions.jsonl: expected sha256*refusing to use data that differs from the pinned release*"])
    assert not list((tmp_path / "cache").rglob("Hidden Emotions.jsonl"))


def test_an_unreachable_source_is_a_clear_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = pytester.runpytest(
        "--tom-benchmark=tombench", f"--tom-data-dir={tmp_path}", f"--tom-cache-dir={tmp_path / 'cache'}",
        "--tom-download", "--tom-tombench-source-url=http://127.0.0.1:9/", "--collect-only",
    )
    result.stdout.fnmatch_lines(["*download of http://127.0.0.1:9/data/*failed*"])


def test_the_real_release_matches_the_pinned_checksums(pytester: pytest.Pytester, real_data_dir: Path, serve, tmp_path: Path) -> None:
    url = serve(real_data_dir / "tombench")
    result = pytester.runpytest(
        "--tom-benchmark=tombench", f"--tom-data-dir={tmp_path}", f"--tom-cache-dir={tmp_path / 'cache'}",
        "--tom-download", f"--tom-tombench-source-url={url}", "--collect-only", "-q",
    )
    result.stdout.fnmatch_lines([f"*{2 * 2860 + 2 * 934} tests collected*"])
