"""A local OpenAI-compatible HTTP server that misbehaves on demand.

It speaks enough of `/v1/chat/completions` and `/v1/completions` for the
official `openai` client, and a policy decides per request what happens:
a normal answer, an answer with a chosen finish_reason (an empty or null
content, as a content filter sends), an HTTP error with headers such as
Retry-After, a dropped connection, malformed JSON, any raw body with any
content type (a proxy's HTML login page), or a hold: the request waits, in flight, until the
test calls `release()` (or the server stops). Holds replace sleeps: a test
decides when an answer comes, so nothing depends on how fast the machine is.
Every request is recorded in arrival order (body, headers, attempt number) so
tests can check what the client sent; its back-off waits are asserted through
the backend's injectable clock, not measured here.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Action:
    """What the server does with one request."""

    kind: str = "ok"
    """ok | finish | status | raw | drop | malformed."""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    text: str | None = None
    """For ok: the answer text (default: the server's `answer` function); for finish: the content, None sends null."""
    finish_reason: str = "stop"
    content_type: str = "application/json"
    """For status and raw: the Content-Type of `body`."""
    hold: bool = False
    """Keep the request in flight until `FaultServer.release()`, then act."""


OK = Action()
HOLD = Action(hold=True)
"""Answer normally, but only once the test releases the server's holds."""


def status(
    code: int, *, retry_after: str | None = None, body: str | None = None, headers: dict[str, str] | None = None
) -> Action:
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["Retry-After"] = retry_after
    return Action(kind="status", status=code, headers=all_headers, body=body)


def finish(text: str | None, reason: str = "stop") -> Action:
    """A 200 completion whose content is exactly `text` (None: JSON null) with this finish_reason."""
    return Action(kind="finish", text=text, finish_reason=reason)


def raw(body: str, *, content_type: str = "application/json", code: int = 200) -> Action:
    """Send `body` as it is, e.g. an HTML page where JSON was expected."""
    return Action(kind="raw", status=code, body=body, content_type=content_type)


DROP = Action(kind="drop")
MALFORMED = Action(kind="malformed")
CONTENT_FILTERED = finish(None, "content_filter")
"""What Azure OpenAI and others send when their content filter withholds an answer."""
LOGIN_PAGE = raw("<!DOCTYPE html>\n<html><head><title>Sign in - Corporate Proxy</title></head>"
                 "<body><form action='/login'>...</form></body></html>", content_type="text/html; charset=utf-8")
"""A proxy's login page served with 200 where the API's JSON was expected."""
NO_MESSAGE = raw('{"id": "x", "object": "chat.completion", "model": "fake", '
                 '"choices": [{"index": 0, "finish_reason": "stop"}]}')
"""Valid JSON whose only choice has no `message`."""

HOLD_LIMIT_S = 20.0
"""A held request that nobody releases answers after this long, so a broken test fails instead of hanging."""


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    attempt: int
    """How many earlier requests carried the same prompt (0 on the first try)."""

    @property
    def prompt(self) -> str:
        if "messages" in self.body:
            return "\n".join(str(m.get("content", "")) for m in self.body["messages"])
        prompt = self.body.get("prompt", "")
        return "\n".join(map(str, prompt)) if isinstance(prompt, list) else str(prompt)


Policy = Callable[[Received], Action]


def fake_logprob(ch: str) -> float:
    """The server's deterministic per-character log-probability (tests recompute it)."""
    return -0.25 * (1 + ord(ch) % 7)


class FaultServer:
    """Use as a context manager; `base_url` is what the openai client needs."""

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        answer: Callable[[str], str] | None = None,
        port: int = 0,
    ) -> None:
        self.policy = policy or (lambda r: OK)
        self.answer = answer or (lambda prompt: "[[A]]")
        self.port = port
        self.received: list[Received] = []
        self.answered = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.released = threading.Event()
        """Set by `release()`: held requests go on, and later ones are no longer held."""
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FaultServer:
        handler = self._handler_class()
        ThreadingHTTPServer.request_queue_size = 256
        ThreadingHTTPServer.allow_reuse_address = True
        server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def release(self) -> None:
        """Let every held request (and every later one) go on."""
        self.released.set()

    def stop(self) -> None:
        """Stop listening (idempotent, callable from any thread, even from inside a policy); releases holds."""
        self.release()
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- behaviour -------------------------------------------------------------------------------
    def _record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Received:
        with self._lock:
            probe = Received(path, body, headers, 0)
            key = f"{path}\n{probe.prompt}"
            probe.attempt = self._attempts.get(key, 0)
            self._attempts[key] = probe.attempt + 1
            self.received.append(probe)
            return probe

    def completion_body(self, req: Received, text: str | None, finish_reason: str = "stop") -> dict[str, Any]:
        prompt_tokens = len(req.prompt.split())
        completion_tokens = len((text or "").split())
        total = prompt_tokens + completion_tokens
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": total}
        model = req.body.get("model", "fake")
        if req.path.endswith("/chat/completions"):
            return {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
                "system_fingerprint": "fp_fault",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
                "usage": usage,
            }
        prompts = req.body.get("prompt", "")
        prompts = prompts if isinstance(prompts, list) else [prompts]
        choices = [self._completion_choice(i, str(p), text, req.body, finish_reason) for i, p in enumerate(prompts)]
        return {"id": "cmpl-fake", "object": "text_completion", "created": int(time.time()), "model": model,
                "choices": choices, "usage": usage}

    @staticmethod
    def _completion_choice(
        index: int, prompt: str, text: str | None, body: dict[str, Any], finish_reason: str = "stop"
    ) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": index, "text": text, "finish_reason": finish_reason, "logprobs": None}
        if body.get("echo") and body.get("logprobs") is not None:
            # One "token" per character, then one generated token; the first prompt token has no
            # log-probability, as real servers report.
            tokens = [*prompt, text]
            choice["text"] = prompt + (text or "")
            choice["logprobs"] = {
                "tokens": tokens,
                "token_logprobs": [None] + [fake_logprob(c) for c in prompt[1:]] + [-0.01],
                "text_offset": list(range(len(prompt) + 1)),
                "top_logprobs": None,
            }
        return choice

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(
                self, code: int, payload: bytes, headers: dict[str, str] | None = None, content_type: str = "application/json"
            ) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                req = outer._record(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                action = outer.policy(req)
                with outer._lock:
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    if action.hold:
                        outer.released.wait(timeout=HOLD_LIMIT_S)
                    if action.kind == "drop":
                        self.close_connection = True
                        try:
                            self.connection.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        return
                    if action.kind == "malformed":
                        self._send(200, b'{"id": "x", "choices": [ {"index": 0, "message": ')
                        return
                    if action.kind == "status":
                        payload = action.body if action.body is not None else json.dumps(
                            {"error": {"message": f"injected {action.status}", "type": "fault"}})
                        self._send(action.status, payload.encode(), action.headers, action.content_type)
                        return
                    if action.kind == "raw":
                        self._send(action.status, (action.body or "").encode(), action.headers, action.content_type)
                        return
                    if action.kind == "finish":
                        body = outer.completion_body(req, action.text, action.finish_reason)
                    else:
                        text = action.text if action.text is not None else outer.answer(req.prompt)
                        body = outer.completion_body(req, text)
                    self._send(200, json.dumps(body).encode(), action.headers)
                    with outer._lock:
                        outer.answered += 1
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

        return Handler
