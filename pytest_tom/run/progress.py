"""A one-line progress bar for model requests, on the real terminal even while pytest captures output."""

from __future__ import annotations

import sys
import time

import pytest


class Progress:
    """A one-line progress bar on the real terminal, even while pytest captures output."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.start = time.monotonic()
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done not in (0, total) and now - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = now
        rate = done / (now - self.start) if now > self.start else 0.0
        width = 30
        filled = int(width * done / total) if total else width
        line = f"tom: [{'#' * filled}{'.' * (width - filled)}] {done}/{total} model requests ({rate:.1f}/s)"
        capman = self.config.pluginmanager.getplugin("capturemanager")
        ctx = capman.global_and_fixture_disabled() if capman else None
        if ctx:
            ctx.__enter__()
        try:
            if self.tty:
                sys.stderr.write("\r" + line + ("\n" if done == total else ""))
            else:
                sys.stderr.write(line + "\n")
            sys.stderr.flush()
        finally:
            if ctx:
                ctx.__exit__(None, None, None)

