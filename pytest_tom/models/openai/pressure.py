"""Adaptive concurrency for HTTP backends: a fixed number floods a CPU server (a retry storm) or wastes a hosted API.
`Pressure` (pure) adjusts the limit as TCP its window (AIMD) plus a Vegas-style latency signal, since a queueing server
answers late long before it fails (README, *Adaptive concurrency*); `Slots` is the asyncio gate that enforces it.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from dataclasses import dataclass

FAST_RATIO = 2.0  # an answer this close to the fastest seen was not queued: the limit may grow
NEAR_TIMEOUT = 0.5  # slower than this share of its timeout: requests queued behind it would time out
OVERLOAD_STATUS = frozenset({429, 503, 504})  # rate limited, overloaded, a gateway that gave up waiting


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

    @property
    def limit(self) -> int:
        """Requests that may be in flight now."""
        return max(1, min(self.ceiling, math.floor(self.window)))

    def ticket(self) -> Ticket:
        """Taken when a request is sent; handed back with its outcome."""
        return Ticket(self.epoch, self.fastest is not None)

    def answered(self, ticket: Ticket, latency: float, timeout: float) -> None:
        """An answer came back after `latency` seconds of an attempt allowed `timeout`: grow, hold, or back off."""
        latency = max(latency, 0.0)
        if latency > NEAR_TIMEOUT * timeout:
            self.overloaded(ticket)
            return
        self.fastest = latency if self.fastest is None else min(self.fastest, latency)
        fast = latency <= FAST_RATIO * max(self.fastest, 1e-3)
        if not (fast and ticket.informed and ticket.epoch == self.epoch):
            return
        step = 1.0 if self.slow_start else 1.0 / self.limit
        self.window = min(float(self.ceiling), self.window + step)

    def overloaded(self, ticket: Ticket) -> bool:
        """A timeout, an overload status or an answer near its timeout: halve once per epoch. True if it halved."""
        if ticket.epoch != self.epoch:
            return False
        self.window = max(1.0, math.floor(self.window) / 2)
        self.epoch += 1
        self.slow_start = False
        self.decreases += 1
        return True


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
