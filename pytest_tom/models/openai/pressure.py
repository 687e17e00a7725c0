"""Adaptive concurrency for HTTP backends: a fixed number floods a CPU server (a retry storm) or wastes a hosted API.
`Pressure` (pure) adjusts the limit as TCP its window (AIMD) plus a Vegas-style latency signal, since a queueing server
answers late long before it fails (README, *Adaptive concurrency*); `Slots` is the asyncio gate that enforces it.
A batching engine (vLLM, llama.cpp's `--parallel` slots) answers later under load *and* faster in total, so once latency
has risen the limit climbs the measured throughput instead: doubling while each doubling pays, then one step at a
time, each kept only while it pays. Throughput counts generated tokens (`work`), so short and long answers weigh fairly.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from dataclasses import dataclass

FAST_RATIO = 2.0  # an answer this close to the fastest seen was not queued: the limit may grow
NEAR_TIMEOUT = 0.5  # slower than this share of its timeout: requests queued behind it would time out
OVERLOAD_STATUS = frozenset({429, 503, 504})  # rate limited, overloaded, a gateway that gave up waiting
ROUND_ANSWERS = 8  # answers (at least, and the limit) a limit serves before its throughput is judged: fewer is noise
GAIN = 1.05  # one more request in flight must raise throughput by this factor to be kept, else latency rises for nothing


@dataclass(frozen=True, slots=True)
class Ticket:
    """What a request carried when it was sent: the epoch (decreases so far) and whether the fastest latency was known."""

    epoch: int
    informed: bool


class Pressure:
    """The in-flight limit of one run: starts at `start`, grows to at most `ceiling`, halves on overload."""

    def __init__(self, start: int, ceiling: int) -> None:
        if ceiling < 1 or start < 1:
            raise ValueError("start and ceiling must be at least 1")
        self.ceiling = ceiling
        self.window = float(min(start, ceiling))
        self.epoch = 0
        self.slow_start = True
        self.fastest: float | None = None
        self.decreases = 0
        self.rates: dict[int, float] = {}
        """Work per second measured at each limit (the last full round there): what the throughput climb compares."""
        self.doubling = True  # the climb doubles the limit until a doubling does not pay (or the server pushes back)
        self._round: tuple[int, float, int, float] | None = None  # (limit, when its round began, answers, work since)

    @property
    def limit(self) -> int:
        """Requests that may be in flight now."""
        return max(1, min(self.ceiling, math.floor(self.window)))

    def ticket(self) -> Ticket:
        """Taken when a request is sent; handed back with its outcome."""
        return Ticket(self.epoch, self.fastest is not None)

    def answered(self, ticket: Ticket, latency: float, timeout: float, *, now: float | None = None,
                 work: float = 1.0) -> None:
        """An answer came back after `latency` seconds of an attempt allowed `timeout`: grow, hold, or back off.
        With `now` (a monotonic clock) answers also measure throughput (`work` per second: the answer's generated
        tokens), which may grow the limit past rising latency.
        """
        latency = max(latency, 0.0)
        if latency > NEAR_TIMEOUT * timeout:
            self.overloaded(ticket)
            return
        self.fastest = latency if self.fastest is None else min(self.fastest, latency)
        fast = latency <= FAST_RATIO * max(self.fastest, 1e-3)
        verdict = None if now is None else self._measure(now, max(work, 0.0))
        if not (ticket.informed and ticket.epoch == self.epoch):
            return
        if fast:
            step = 1.0 if self.slow_start else 1.0 / self.limit
            self.window = min(float(self.ceiling), self.window + step)
        elif verdict is not None:
            self.window = float(verdict)

    def _measure(self, now: float, work: float) -> int | None:
        """Count an answer towards the current limit's round; at a round's end, the limit throughput asks for."""
        limit = self.limit
        if self._round is None or self._round[0] != limit:
            self._round = (limit, now, -limit, 0.0)  # a new limit: the next `limit` answers were sent before it: skipped
            return None
        _, began, answers, done = self._round
        answers += 1
        if answers <= 0:
            self._round = (limit, now, answers, 0.0)
            return None
        done += work
        if answers < max(ROUND_ANSWERS, limit) or now <= began:
            self._round = (limit, began, answers, done)
            return None
        self._round = (limit, now, 0, 0.0)
        self.rates[limit] = done / (now - began)
        step = limit if self.doubling else 1
        verdict = climb(self.rates, limit, self.ceiling, step)
        if verdict <= limit:
            self.doubling = False
        return verdict

    def overloaded(self, ticket: Ticket) -> bool:
        """A timeout, an overload status or an answer near its timeout: halve once per epoch. True if it halved."""
        if ticket.epoch != self.epoch:
            return False
        self.window = max(1.0, math.floor(self.window) / 2)
        self.epoch += 1
        self.slow_start = False
        self.doubling = False
        self.decreases += 1
        return True


def climb(rates: dict[int, float], limit: int, ceiling: int, step: int = 1) -> int:
    """The next limit of a hill climb on measured throughput (`rates`, work/s per limit; `limit`'s just measured):
    `step` more while it beat every lower limit by `GAIN` and that one is not known to be worse; one less while the
    one above is worse and nothing lower was tried (latency alone may have grown the limit past the peak); else the best.
    """
    rate = rates[limit]
    lower = [r for k, r in rates.items() if k < limit]
    target = min(ceiling, limit + max(1, step))
    above = rates.get(target)
    if limit < ceiling and (not lower or rate >= GAIN * max(lower)) and (above is None or above > rate):
        return target
    if not lower and limit > 1 and (above is not None or limit == ceiling):
        return limit - 1
    return max((k for k in rates if k <= limit), key=lambda k: (rates[k], -k))


class Slots:
    """An asyncio gate of `pressure.limit` slots (a number that changes while requests wait); FIFO, retries first."""

    def __init__(self, pressure: Pressure) -> None:
        self.pressure = pressure
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self, *, first: bool = False) -> Ticket:
        if self.in_flight < self.pressure.limit and not self._waiters:
            self.in_flight += 1
            return self.pressure.ticket()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        (self._waiters.appendleft if first else self._waiters.append)(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over just as we were cancelled
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise
        return self.pressure.ticket()

    def release(self) -> None:
        """Free a slot and let waiting requests through while the limit allows (it may have grown meanwhile)."""
        self.in_flight -= 1
        while self._waiters and self.in_flight < self.pressure.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)
