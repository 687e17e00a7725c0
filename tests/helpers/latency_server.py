"""A minimal asyncio OpenAI-compatible server that answers every request after a fixed latency.

For throughput measurements: unlike `fault_server` (a thread per connection,
convenient for injecting faults) it costs the server almost no CPU per request,
so a benchmark measures the client, not the server. It speaks just enough
HTTP/1.1 (keep-alive, Content-Length bodies) for the `openai` client's
`/chat/completions` and `/completions` calls.

Run it as `python -m helpers.latency_server LATENCY` (from tests/): it prints its
port, then serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
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


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
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
            await asyncio.sleep(latency)
            body = _body(path, json.loads(raw))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve(latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: _handle(r, w, latency), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    server.close()


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.1))
