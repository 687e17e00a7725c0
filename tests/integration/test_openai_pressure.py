"""`openai:` against a real slow server on 127.0.0.1 that works on one request at a time: no retry storm.

The server (`helpers.latency_server.SlowServer`) queues what it cannot work on
and finishes requests whose client gave up, like a CPU inference server. With
the old fixed 16 requests in flight, the 9th to 16th waited past the client's
timeout, were sent again behind the abandoned ones, and so on: most requests
the server received were repeats. The adaptive limit starts at 4, stops growing
when answers queue, and halves before anything times out.
"""

from __future__ import annotations

import pytest

pytest.importorskip("openai")

from helpers.latency_server import SlowServer  # noqa: E402

from pytest_tom.engine import Engine  # noqa: E402
from pytest_tom.models import make_model  # noqa: E402
from pytest_tom.record import Outcome, Record  # noqa: E402
from pytest_tom.request import GenerationSettings, Message, Request  # noqa: E402
from pytest_tom.sample import Sample, Story  # noqa: E402

SERVICE_S = 0.15
"""Seconds the server works on one request; 16 queued ones take 2.4 s, twice the client's timeout."""
TIMEOUT_S = 1.2
NEEDED = 24


def ask(sample: Sample[None]):  # type: ignore[no-untyped-def]
    responses = yield [Request(messages=(Message("user", sample.question),), settings=GenerationSettings(max_new_tokens=4))]
    return Record("t", sample.id, Outcome.CORRECT, {}, parsed=responses[0].text)


def test_a_server_that_answers_one_request_at_a_time_gets_each_request_about_once() -> None:
    samples: list[Sample[None]] = [Sample("t", f"q{i}", Story(""), f"question {i}", (), "", (), {}, (), None)
                                   for i in range(NEEDED)]
    with SlowServer(SERVICE_S, slots=1) as server:
        # Default concurrency (ceiling 32, start 4); only the timeout is short, to keep the test short.
        model = make_model(f"openai:slow-cpu-model?base_url={server.base_url}&timeout={TIMEOUT_S}&backoff=0.05")
        seen: list[tuple[int, int, int, int]] = []
        engine = Engine(model, None, progress=lambda d, t, errors=0, retries=0: seen.append((d, t, errors, retries)))
        records = engine.run({s.id: (s, ask(s)) for s in samples})
        received = server.received
        assert server.counter.max_working == 1
    assert [r.parsed for r in records.values()] == ["[[A]]"] * NEEDED, [r.message for r in records.values()]
    assert engine.stats.errors == 0 and model.stats["errors"] == 0
    assert received <= 1.2 * NEEDED, f"the server received {received} requests for {NEEDED} needed: {model.stats}"
    # The bar counted the answers, one by one, to the last.
    assert [d for d, *_ in seen] == list(range(NEEDED + 1)) and seen[-1][2] == 0
