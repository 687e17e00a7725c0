"""A minimal asyncio OpenAI-compatible server that answers every request after a fixed latency.

With `slots=K` it works on at most K requests at once and queues the rest, the
way a CPU inference server (`transformers serve`, llama.cpp with one slot)
does, and it finishes a request whose client gave up waiting (it only notices
when it writes the answer): so a client that times out and sends again makes
the queue longer, not shorter. `SlowServer` runs it in a thread of the test
process and counts the requests it received.

For throughput measurements: unlike `fault_server` (a thread per connection,
convenient for injecting faults) it costs the server almost no CPU per request,
so a benchmark measures the client, not the server. It speaks just enough
HTTP/1.1 (keep-alive, Content-Length bodies) for the `openai` client's
`/chat/completions` and `/completions` calls.

Run it as `python -m helpers.latency_server LATENCY [SLOTS]` (from tests/): it
prints its port, then serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time


def _body(path: str, payload: dict[str, object]) -> bytes:
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    if path.endswith("/chat/completions"):
        out = {"id": "c", "object": "chat.completion", "created": int(time.time()), "model": payload.get("model", "m"),
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "[[A]]"}, "finish_reason": "stop"}],
               "usage": usage}
    else:
        out = {"id": "c", "object": "text_completion", "created": int(time.time()), "model": payload.get("model", "m"),
               "choices": [{"index": 0, "text": "[[A]]", "finish_reason": "stop", "logprobs": None}], "usage": usage}
    return json.dumps(out).encode()


class Counter:
    """Requests received, and the most worked on at once (both read from other threads)."""

    def __init__(self) -> None:
        self.received = 0
        self.working = 0
        self.max_working = 0


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float,
                  slots: asyncio.Semaphore | None = None, counter: Counter | None = None) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            raw = await reader.readexactly(length) if length else b"{}"
            if counter is not None:
                counter.received += 1
            async with slots or _FREE:
                if counter is not None:
                    counter.working += 1
                    counter.max_working = max(counter.max_working, counter.working)
                await asyncio.sleep(latency)
                if counter is not None:
                    counter.working -= 1
            body = _body(path, json.loads(raw))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


class _Free:
    """No limit: an async context manager that does nothing."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_FREE = _Free()


async def serve(latency: float, slots: int = 0) -> None:
    gate = asyncio.Semaphore(slots) if slots else None
    server = await asyncio.start_server(lambda r, w: _handle(r, w, latency, gate), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    server.close()


class SlowServer:
    """`with SlowServer(latency, slots=K) as server:` a server on `server.base_url`, counting `server.received`."""

    def __init__(self, latency: float, *, slots: int = 0) -> None:
        self.latency, self.slots = latency, slots
        self.counter = Counter()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), name="slow-server", daemon=True)
        self.port = 0

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        gate = asyncio.Semaphore(self.slots) if self.slots else None
        server = await asyncio.start_server(lambda r, w: _handle(r, w, self.latency, gate, self.counter),
                                            "127.0.0.1", 0, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def received(self) -> int:
        return self.counter.received

    def __enter__(self) -> SlowServer:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the slow server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.1, int(sys.argv[2]) if len(sys.argv) > 2 else 0))
