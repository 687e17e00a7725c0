"""A line on the terminal every half minute while one test runs long, so the suite is never silent for minutes.

Some end-to-end tests run a real model or a whole pytest session in a subprocess
for a minute or more; under pytest's capture nothing reaches the terminal then,
and a person (or a CI log watcher) cannot tell a slow test from a hung one. The
heartbeat writes `... still running <node id> (60 s)` straight to a copy of the
terminal's stderr taken at configure time, when pytest's capture is suspended,
so it bypasses capture without touching pytest's private state. Under
pytest-xdist each worker's stderr is the controller's, so it works there too.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

EVERY_S = float(os.environ.get("TOM_TEST_HEARTBEAT_S", "30"))
"""Seconds between two lines (and before the first); 0 turns the heartbeat off."""


class Heartbeat:
    def __init__(self) -> None:
        self.fd: int | None = None

    def open(self) -> None:
        """Keep a private copy of stderr as it is now (the terminal, or CI's log)."""
        if EVERY_S > 0 and self.fd is None:
            with contextlib.suppress(OSError):
                self.fd = os.dup(2)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    @contextlib.contextmanager
    def around(self, nodeid: str) -> Iterator[None]:
        """Beat while the body runs: one line per `EVERY_S` seconds, none for a test that ends sooner."""
        if self.fd is None:
            yield
            return
        stop = threading.Event()
        start = time.monotonic()

        def beat() -> None:
            while not stop.wait(EVERY_S):
                line = f"\n... still running {nodeid} ({time.monotonic() - start:.0f} s)\n"
                with contextlib.suppress(OSError):
                    os.write(self.fd, line.encode())  # type: ignore[arg-type]

        thread = threading.Thread(target=beat, name="test-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
