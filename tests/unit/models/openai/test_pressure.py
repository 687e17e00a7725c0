"""The adaptive in-flight limit of HTTP backends: a pure controller (no server, no clock) and its asyncio gate."""

from __future__ import annotations

import asyncio

import pytest

from pytest_tom.models.openai.pressure import Pressure, Slots

TIMEOUT = 600.0


def answer(p: Pressure, latency: float, n: int = 1, timeout: float = TIMEOUT) -> None:
    """`n` answers of `latency` seconds, each sent at the limit of that moment."""
    for _ in range(n):
        p.answered(p.ticket(), latency, timeout)


def test_it_starts_low_and_never_exceeds_the_ceiling() -> None:
    assert Pressure(start=4, ceiling=32).limit == 4
    assert Pressure(start=4, ceiling=2).limit == 2
    with pytest.raises(ValueError):
        Pressure(start=0, ceiling=4)


def test_a_server_that_answers_as_fast_under_load_is_used_up_to_the_ceiling_within_a_few_dozen_answers() -> None:
    p = Pressure(start=4, ceiling=32)
    answer(p, 1.0, 29)  # the first one blind, then slow start: one more per fast answer (doubling per round trip)
    assert p.limit == 32
    answer(p, 1.0, 100)
    assert p.limit == 32


def test_the_first_burst_cannot_vouch_for_itself() -> None:
    p = Pressure(start=4, ceiling=32)
    blind = [p.ticket() for _ in range(4)]  # sent before any answer: nothing to compare their latency with
    for t in blind:
        p.answered(t, 1.0, TIMEOUT)
    assert p.limit == 4
    answer(p, 1.0)
    assert p.limit == 5


def test_answers_queued_by_the_server_stop_the_growth() -> None:
    # A server working on one request at a time: the k-th request in flight waits k service times.
    p = Pressure(start=4, ceiling=32)
    answer(p, 90.0)
    assert p.limit == 4  # the first answer was sent blind
    answer(p, 90.0)
    assert p.limit == 5
    for _ in range(50):
        answer(p, 90.0 * p.limit, timeout=1e6)  # every later request queues behind the others
    assert p.limit == 5
    # With a real timeout, answers getting close to it bring the queue down before any request times out.
    for _ in range(50):
        answer(p, 90.0 * p.limit)
        assert 90.0 * p.limit <= TIMEOUT / 2 or p.decreases == 0
    assert 90.0 * p.limit <= TIMEOUT / 2 and p.decreases == 1


def test_a_timeout_halves_the_limit_once_for_everything_sent_before_it() -> None:
    p = Pressure(start=4, ceiling=32)
    answer(p, 1.0, 13)
    assert p.limit == 16
    in_flight = [p.ticket() for _ in range(16)]
    assert p.overloaded(in_flight[0]) and p.limit == 8
    # The other requests of the same burst time out too: the same congestion, not a new one.
    assert not any(p.overloaded(t) for t in in_flight[1:]) and p.limit == 8
    assert p.overloaded(p.ticket()) and p.limit == 4
    for _ in range(5):
        p.overloaded(p.ticket())
    assert p.limit == 1  # never below one


def test_after_a_decrease_it_grows_back_by_one_per_round_trip() -> None:
    p = Pressure(start=8, ceiling=32)
    answer(p, 1.0)
    p.overloaded(p.ticket())
    assert p.limit == 4
    answer(p, 1.0, 4)  # a round trip at 4 in flight: one more
    assert p.limit == 5
    answer(p, 1.0, 5)
    assert p.limit == 6
    late = p.ticket()
    p.overloaded(p.ticket())
    p.answered(late, 1.0, TIMEOUT)  # sent at the old, higher limit: does not count for growth
    assert p.limit == 3


def test_an_answer_slower_than_half_its_timeout_halves_the_limit_before_anything_times_out() -> None:
    p = Pressure(start=4, ceiling=32)
    answer(p, 100.0, 2)
    assert p.limit == 5
    p.answered(p.ticket(), 301.0, TIMEOUT)
    assert p.limit == 2 and p.decreases == 1


def test_slots_hold_requests_back_to_the_limit_and_let_them_through_as_it_changes() -> None:
    async def scenario() -> None:
        p = Pressure(start=2, ceiling=8)
        slots = Slots(p)
        first = [await slots.acquire() for _ in range(2)]
        waiting = [asyncio.ensure_future(slots.acquire()) for _ in range(3)]
        retry = asyncio.ensure_future(slots.acquire(first=True))
        await asyncio.sleep(0)
        assert slots.in_flight == 2 and not any(w.done() for w in [*waiting, retry])
        p.overloaded(first[0])  # the limit drops to 1: one release lets nobody through
        slots.release()
        await asyncio.sleep(0)
        assert slots.in_flight == 1 and not any(w.done() for w in [*waiting, retry])
        slots.release()
        await asyncio.sleep(0)
        assert retry.done() and not any(w.done() for w in waiting)  # a retry goes before the queue
        waiting[0].cancel()  # a cancelled waiter gives up its place, never a slot
        await asyncio.sleep(0)
        for _ in range(3):
            slots.release()
            await asyncio.sleep(0)
            if all(w.done() for w in waiting):
                break
        assert waiting[1].done() and waiting[2].done() and waiting[0].cancelled()
        assert slots.in_flight == 1 and not slots._waiters

    asyncio.run(scenario())
