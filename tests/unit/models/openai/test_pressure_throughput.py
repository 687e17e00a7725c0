"""The throughput climb of the adaptive limit: past the point where latency rises, one more request in flight is kept
only while it raises answers per second. Driven by a simulated batching server on a virtual clock (no wall clock)."""

from __future__ import annotations

import heapq
from collections.abc import Callable

from pytest_tom.models.openai.pressure import GAIN, Pressure, climb

TIMEOUT = 600.0


def run(p: Pressure, service: dict[int, float], answers: int, size: Callable[[int], float] = lambda i: 1.0) -> list[int]:
    """A server whose latency at `n` requests in flight is `service[n]` (the last entry beyond) times the size of the
    `i`-th request (its generated tokens): each request sent at the limit of that moment, answered when its latency has
    passed. Returns the limit after each answer."""
    now = 0.0
    flight: list[tuple[float, int]] = []  # (answer time, sequence)
    tickets = {}
    seq = 0
    limits = []
    for _ in range(answers):
        while len(flight) < p.limit:
            n = min(p.limit, max(service))  # steady state: every request shares the server with `limit` others
            heapq.heappush(flight, (now + service[n] * size(seq), seq))
            tickets[seq] = (p.ticket(), now)
            seq += 1
        now, done = heapq.heappop(flight)
        ticket, sent = tickets.pop(done)
        p.answered(ticket, now - sent, TIMEOUT, now=now, work=size(done))
        limits.append(p.limit)
    return limits


def batching(best: int) -> dict[int, float]:
    """Latency grows with every request in flight; throughput (n / latency) grows up to `best`, then falls."""
    return {n: 1.0 + 0.1 * (n - 1) if n <= best else (1.0 + 0.1 * (n - 1)) * (1 + 0.2 * (n - best)) for n in range(1, 33)}


def throughput(service: dict[int, float], n: int) -> float:
    return n / service[n]


def test_climb_grows_while_throughput_grows_and_returns_to_the_best_when_it_falls() -> None:
    assert climb({4: 10.0}, 4, 32) == 5  # nothing lower to compare with: try one more
    assert climb({4: 10.0, 5: 10.0 * GAIN}, 5, 32) == 6
    assert climb({4: 10.0, 5: 10.0}, 5, 32) == 4  # no gain: latency rose for nothing, back to the best
    assert climb({4: 10.0, 5: 12.0, 6: 11.0}, 6, 32) == 5
    assert climb({4: 10.0, 5: 12.0, 6: 11.0}, 5, 32) == 5  # the one above is known to be worse: hold
    assert climb({8: 10.0, 7: 5.0}, 8, 8) == 8  # never past the ceiling
    assert climb({22: 10.0, 23: 9.0}, 22, 32) == 21  # grown past the peak on latency alone: look below
    assert climb({4: 10.0}, 4, 32, step=4) == 8 and climb({4: 10.0, 8: 9.0}, 8, 32, step=8) == 4


def test_without_a_clock_only_latency_decides_as_before() -> None:
    p = Pressure(start=4, ceiling=32)
    for _ in range(200):
        p.answered(p.ticket(), 5.0 if p.fastest is not None else 1.0, TIMEOUT)
    assert p.limit == 4 and not p.rates


def test_a_batching_server_is_driven_to_its_best_throughput_although_latency_rises() -> None:
    for best in (12, 20):
        service = batching(best)
        assert service[best] > 2 * service[1]  # latency alone would stop the growth early
        p = Pressure(start=4, ceiling=32)
        limits = run(p, service, 1500)
        # Slow start overshoots on fast early answers; the climb brings the limit back down towards the peak.
        assert throughput(service, limits[-1]) >= 0.7 * throughput(service, best), (best, limits[-40:])
        assert throughput(service, limits[-1]) >= 1.5 * throughput(service, max(limits))
        assert p.decreases == 0



def test_longer_answers_later_in_the_run_do_not_read_as_lost_throughput() -> None:
    # Prefix order sends one benchmark's short answers, then another's answers 20 times longer: per answer, the rate
    # falls 20-fold; per generated token, it does not, and the limit stays where throughput is best.
    service = batching(12)
    p = Pressure(start=4, ceiling=32)
    limits = run(p, service, 1500, size=lambda i: 1.0 if i < 300 else 20.0)
    assert throughput(service, limits[-1]) >= 0.7 * throughput(service, 12), limits[-40:]
    assert min(limits[300:]) >= 6


def test_doubling_stops_at_the_first_doubling_that_does_not_pay() -> None:
    slots = 8  # beyond eight in flight, requests only queue: latency grows, throughput does not
    service = {n: 1.0 + 0.05 * (n - 1) if n <= slots else (1.0 + 0.05 * (slots - 1)) * n / slots for n in range(1, 65)}
    p = Pressure(start=2, ceiling=64)
    limits = run(p, service, 800)
    assert not p.doubling and limits[-1] < 64
    assert throughput(service, limits[-1]) >= 0.9 * throughput(service, slots)
