"""Typos cost a second, not a minute (issue 19).

`--tom-model=hf:smolm2` used to spend ~50 s in hub retries on an offline machine,
then print a traceback with the retry log on every item; `-m belif` deselected
every item without a word. Here a misspelled model id is one usage error at
session start, with the nearest names, decided without the network when
HF_HUB_OFFLINE is set and with at most one request to the hub otherwise; and a
`-m` word that is no mark is named, with the nearest marks. No test touches the
internet: the "hub" is a local stub or a closed local port.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

RECORD_IMPORTS = """
import sys
from pathlib import Path

def pytest_unconfigure(config):
    Path("imported.json").write_text(__import__("json").dumps(sorted(m for m in ("torch", "transformers") if m in sys.modules)))
"""
"""Which heavy modules the run imported: none means no model was built or loaded."""


class HubStub:
    """A local stand-in for the hub's API: `/api/models/<id>` answers for `known` ids and 404 RepoNotFound otherwise."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.paths: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                stub.paths.append(self.path)
                repo_id = self.path.split("?")[0].removeprefix("/api/models/")
                found = repo_id in stub.known
                body = json.dumps({"id": repo_id, "sha": "a" * 40} if found else {"error": "Repository not found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                if not found:
                    self.send_header("X-Error-Code", "RepoNotFound")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HubStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _model_requests(hub: HubStub) -> list[str]:
    """The model lookups the hub received (huggingface_hub also fetches its agent registry once a day; not ours)."""
    return [p.split("?")[0] for p in hub.paths if p.startswith("/api/models/")]


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def newcomer(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A fresh home with an empty Hugging Face cache, neither offline variable set, and the import recorder."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", str(home / ".cache" / "huggingface"))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(RECORD_IMPORTS)
    return pytester


def _run(pytester: pytest.Pytester, tom_args: list[str], *args: str) -> tuple[pytest.RunResult, list[str]]:
    """A run in a fresh interpreter (so imports can be counted), and its non-empty output lines."""
    result = pytester.runpytest_subprocess(*tom_args, *args)
    lines = [line for line in result.outlines + result.errlines if line.strip()]
    return result, lines


def _fails_once_before_collection(result: pytest.RunResult, lines: list[str], pytester: pytest.Pytester) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = "\n".join(lines)
    assert len(lines) <= 3, text
    assert text.count("ERROR: pytest-tom: --tom-model hf:smolm2: 'smolm2' is no model folder") == 1, text
    assert "collected" not in text and "Traceback" not in text and "Retrying" not in text, text
    assert json.loads((pytester.path / "imported.json").read_text()) == [], "no model was built"
    return text


def test_a_misspelled_model_id_offline_fails_at_once_with_the_alias(newcomer: pytest.Pytester, tom_args: list[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with HubStub(set()) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result, lines = _run(newcomer, tom_args, "--tom-model=hf:smolm2")
    text = _fails_once_before_collection(result, lines, newcomer)
    assert "HF_HUB_OFFLINE is set, so the hub was not asked; did you mean hf:smollm2?" in text
    assert hub.paths == []


def test_a_misspelled_model_id_with_the_hub_unreachable_says_so(newcomer: pytest.Pytester, tom_args: list[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    result, lines = _run(newcomer, tom_args, "--tom-model=hf:smolm2")
    text = _fails_once_before_collection(result, lines, newcomer)
    assert f"the hub ({endpoint}) is unreachable (" in text
    assert text.endswith("did you mean hf:smollm2?"), text


def test_a_misspelled_model_id_the_hub_does_not_know_is_asked_once(newcomer: pytest.Pytester, tom_args: list[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with HubStub({"HuggingFaceTB/SmolLM2-135M-Instruct"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result, lines = _run(newcomer, tom_args, "--tom-model=hf:smolm2")
    text = _fails_once_before_collection(result, lines, newcomer)
    assert f"the hub ({hub.url}) has no model 'smolm2'" in text
    assert _model_requests(hub) == ["/api/models/smolm2"]


def test_a_model_id_the_hub_knows_passes_the_check(newcomer: pytest.Pytester, tom_args: list[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with HubStub({"org/model"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result, _ = _run(newcomer, tom_args, "--tom-model=hf:org/model", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert _model_requests(hub) == ["/api/models/org/model"]


# -- -m ---------------------------------------------------------------------------------------------------------


def test_a_mark_typo_that_selects_nothing_names_the_nearest_mark(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-model=random", "-m", "en and belif")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["pytest-tom: -m 'en and belif' selects no item: 'belif' is not a mark; did you mean belief or true_belief?",
                                 "*deselected in *"])


def test_a_valid_mark_expression_that_selects_nothing_gets_no_hint(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-model=random", "-m", "belief and fantom")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "not a mark" not in result.stdout.str() + result.stderr.str()


def test_a_mark_only_an_item_carries_is_a_mark(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    pytester.makepyfile(test_other="import pytest\n\n@pytest.mark.mine\ndef test_x():\n    pass\n")
    result = pytester.runpytest(*tom_args, "--tom-model=random", "-m", "mine")
    assert result.ret == pytest.ExitCode.OK
    assert "not a mark" not in result.stdout.str()
