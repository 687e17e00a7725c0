"""Throughput of the `openai:` backend against a local server with a fixed latency.

Usage: python benchmarks/bench_openai.py [--requests 500] [--concurrency 32] [--latency 0.1]

The server (tests/helpers/latency_server.py, asyncio, in its own process) answers each request after `latency` seconds
at almost no CPU, so the client is what is measured. The ideal wall time is requests x latency / concurrency; the target
is within 2x of it, both for the backend (`model.stream(requests)` drained) and for the engine with an on-disk cache
(storing every answer as it arrives included).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

@contextlib.contextmanager
def server_process(latency: float):  # type: ignore[no-untyped-def]
    """The asyncio latency server in its own process, so it never competes with the client for the GIL."""
    proc = subprocess.Popen([sys.executable, "-m", "helpers.latency_server", str(latency)], cwd=REPO / "tests",
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--same-process", action="store_true",
                        help="use the threaded fault server in this process instead (shares the GIL; slower)")
    args = parser.parse_args()

    from helpers.fault_server import FaultServer

    from pytest_tom.engine import Engine, ResponseCache
    from pytest_tom.framework.base import Program
    from pytest_tom.models import make_model
    from pytest_tom.record import Outcome, Record
    from pytest_tom.request import GenerationSettings, Message, Request
    from pytest_tom.sample import Sample, Story

    def request(i: int, tag: str) -> Request:
        return Request(messages=(Message("user", f"{tag} question {i}"),), settings=GenerationSettings(max_new_tokens=8))

    ideal = args.requests * args.latency / args.concurrency
    server = FaultServer(delay=args.latency) if args.same_process else None
    with (server if server is not None else contextlib.nullcontext()), \
            (contextlib.nullcontext(server.base_url) if server is not None else server_process(args.latency)) as base_url:
        uri = f"openai:bench?base_url={base_url}&concurrency={args.concurrency}&timeout=30"
        model = make_model(uri)
        list(model.stream([request(i, "warm-up") for i in range(args.concurrency)]))  # connections, imports

        reqs = [request(i, "backend") for i in range(args.requests)]
        start = time.perf_counter()
        answers = list(model.stream(reqs))
        backend = time.perf_counter() - start
        assert len(answers) == args.requests and all(r.ok for _, r in answers)
        peak = server.max_in_flight if server is not None else "n/a"

        def program(r: Request) -> Program:
            responses = yield [r]
            return Record("bench", r.key[:12], Outcome.CORRECT if responses[0].ok else Outcome.ERROR, {})

        with tempfile.TemporaryDirectory() as tmp:
            cache = ResponseCache(Path(tmp))
            engine = Engine(make_model(uri), cache)
            blank = Sample("bench", "", Story(""), "", (), "", (), {}, (), None)
            programs = {f"q{i}": (blank, program(request(i, "engine"))) for i in range(args.requests)}
            start = time.perf_counter()
            results = engine.run(programs)
            through_engine = time.perf_counter() - start
            stored = len(cache)
            cache.close()
        assert all(r.outcome is Outcome.CORRECT for r in results.values()) and stored == args.requests

    where = "in this process" if args.same_process else "in its own process"
    print(f"{args.requests} requests, concurrency {args.concurrency}, server latency {1000 * args.latency:.0f} ms ({where}); "
          f"ideal {ideal:.2f} s; peak in flight at the server {peak}")
    print(f"backend stream: {backend:.2f} s ({args.requests / backend:.0f} req/s)")
    print(f"engine + cache: {through_engine:.2f} s ({stored} answers stored)")
    print(f"RATIO backend / ideal (target <= 2.0): {backend / ideal:.2f}")
    print(f"RATIO engine / ideal (target <= 2.0): {through_engine / ideal:.2f}")


if __name__ == "__main__":
    main()
