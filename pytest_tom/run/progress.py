"""The run's live terminal output: answers received/total, retries, errors, rate, elapsed and ETA; one-time work. The
engine calls `Progress(answered, total, errors=, retries=)` as each response arrives (`ProgressCallback`). The bar
counts answers; failed requests and a backend's retries show beside the count, so a server being stormed shows as
retries climbing while answers do not. Backends say what one-time work they do through `pytest_tom.notice`, whose sink
is `Progress.say`. Both happen inside a test, where pytest captures output, so every write suspends the capture and goes
through pytest's terminal writer on a line of its own: the test file's prefix (`examples/test_tom.py ....`) is ended
first and written again after, so pytest's dots carry on as if nothing had been drawn.

Modes (`--tom-progress`): ``auto`` (default) draws, on a terminal, a bar redrawn in place at most every 0.1 s and at
least every second (a timer thread, so a burst is never shown a batch late), ended by one closing line; elsewhere (CI
logs) the one-time-work lines, a plain line every 5 minutes and the closing line. ``on``: the bar always (what the tests
use). ``off``: nothing.

Under pytest-xdist, workers show nothing (their output would garble the controller's); the controller shows xdist's own
per-test progress.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_tom import notice
from pytest_tom.notice import format_seconds
from pytest_tom.run.xdist import worker_of

REDRAW_S = 0.1
"""Least time between two redraws of the bar: a fast backend answers thousands a second."""
TICK_S = 1.0
"""Most time between two redraws while the bar is up: the elapsed time moves even while a slow batch runs."""
PLAIN_EVERY_S = 300.0
"""Not on a terminal: a plain line this often during a long pass, so a CI log shows the run alive."""
_BAR = 20


def _rate(done: int, elapsed: float) -> float:
    return done / elapsed if done and elapsed > 0 else 0.0


def _rate_text(rate: float) -> str:
    return "-/s" if rate <= 0 else f"{rate:.2f}/s" if rate < 10 else f"{rate:.0f}/s"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def status_text(done: int, total: int, elapsed: float, errors: int = 0, retries: int = 0) -> str:
    """`45/90 answers, 0.62/s, elapsed 1:12, ETA 1:13` (ETA `?` until the first answer). Once a request was retried or
    failed: `45/90 answers · 2 retries · 0 errors, 0.62/s, ...`.
    """
    rate = _rate(done, elapsed)
    eta = format_seconds((total - done - errors) / rate) if rate > 0 else "?"
    trouble = f" · {_count(retries, 'retry', 'retries')} · {_count(errors, 'error', 'errors')}" if retries or errors else ""
    return f"{done}/{total} answers{trouble}, {_rate_text(rate)}, elapsed {format_seconds(elapsed)}, ETA {eta}"


def bar_line(done: int, total: int, elapsed: float, width: int = 80, errors: int = 0, retries: int = 0) -> str:
    """The bar as drawn on a terminal `width` columns wide (the bar itself goes first when space runs out)."""
    text = status_text(done, total, elapsed, errors, retries)
    bar = min(_BAR, width - 1 - len(f"pytest-tom: [] {text}"))
    if bar < 5:
        return f"pytest-tom: {text}"[: max(width - 1, 0)]
    filled = bar * done // total if total else bar
    return f"pytest-tom: [{'#' * filled}{'.' * (bar - filled)}] {text}"


def final_line(done: int, total: int, elapsed: float, errors: int = 0, retries: int = 0) -> str:
    """The line a pass leaves behind: `pytest-tom: 90/90 model requests answered in 2:31 (0.60/s)`. Errors and retries,
    when there were any, follow: `...; 3 retries, 2 errors`.
    """
    line = f"pytest-tom: {done}/{total} model requests answered in {format_seconds(elapsed)} " \
           f"({_rate_text(_rate(done, elapsed))})"
    extra = [text for n, text in ((retries, _count(retries, "retry", "retries")),
                                  (errors, _count(errors, "error", "errors"))) if n]
    return line + ("; " + ", ".join(extra) if extra else "")


def _prefix_text(prefix: object, startpath: Path) -> str:
    """What pytest had written at the start of the current line: a test file's path, or -v's node id."""
    if isinstance(prefix, Path):
        return os.path.relpath(prefix, startpath) + " "
    return prefix if isinstance(prefix, str) else ""


def _write_over_bar(tw: Any, line: str) -> None:
    tw.write("\r" + line.ljust(tw.fullwidth - 1) + "\n")


def _restore(sink: notice.Sink | None) -> None:
    notice.set_sink(sink)


_never_fails = functools.partial(contextlib.suppress, Exception)
"""Drawing must never fail a test or the engine (a closed terminal, a broken pipe): its errors are dropped."""


class Progress:
    """The `ProgressCallback` of the run's engine and the sink of `pytest_tom.notice`."""

    def __init__(self, config: pytest.Config, mode: str = "auto") -> None:
        self.config = config
        self.mode = mode
        self._lock = threading.RLock()
        self._active = False
        self._done = self._total = self._errors = self._retries = 0
        self._start = self._drawn_at = self._plain_at = 0.0
        self._drawn_done = -1
        self._stop: threading.Event | None = None
        self._prefix: object = None
        previous = notice.set_sink(self.say)
        config.add_cleanup(lambda: _restore(previous))
        config.pluginmanager.register(self)

    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def style(self) -> str | None:
        """"bar", "plain" or None (nothing shown: off, an xdist worker, no terminal reporter)."""
        if self.mode == "off" or worker_of(self.config) is not None:
            return None
        reporter = self._reporter()
        if reporter is None:
            return None
        return "bar" if self.mode == "on" or getattr(reporter, "isatty", False) else "plain"

    def __call__(self, done: int, total: int, *, errors: int = 0, retries: int = 0) -> None:
        style = self.style()
        if style is None:
            return
        with self._lock, _never_fails():
            now = time.monotonic()
            if not self._active:
                self._begin(now, style)
            self._done, self._total, self._errors, self._retries = done, total, errors, retries
            if done + errors >= total:
                self._end()
            elif style == "bar" and now - self._drawn_at >= REDRAW_S:
                self._draw()
            elif style == "plain" and now - self._plain_at >= PLAIN_EVERY_S:
                self._plain_at = now
                self._lines(f"pytest-tom: {status_text(done, total, now - self._start, errors, retries)}")

    def say(self, line: str) -> None:
        """A one-time-work line, above the bar if one is drawn."""
        style = self.style()
        if style is None:
            return
        with self._lock, _never_fails():
            if self._active and style == "bar":
                with self._terminal() as (_, tw):
                    _write_over_bar(tw, line)
                if self._done + self._errors == 0:
                    self._start = time.monotonic()  # the rate and ETA count the answering, not the loading
                self._draw()
            else:
                self._lines(line)
                if self._active and self._done + self._errors == 0:
                    self._start = time.monotonic()

    def abandon(self) -> None:
        """End a bar whose pass never finished (Ctrl-C), so pytest's next line starts on its own line."""
        with self._lock, _never_fails():
            if self._active:
                self._active = False
                if self._stop is not None:
                    self._stop.set()
                with self._terminal() as (_, tw):
                    tw.line()

    pytest_keyboard_interrupt = pytest_unconfigure = abandon
    """pytest hooks: never leave a half-drawn bar behind."""

    # -- drawing (under the lock) --------------------------------------------------------------------
    @contextlib.contextmanager
    def _terminal(self) -> Iterator[tuple[Any, Any]]:
        """The terminal writer and reporter of pytest, past the output capture."""
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            tw = self.config.get_terminal_writer()
            yield self._reporter(), tw
            tw.flush()

    def _open(self, reporter: Any, tw: Any, *, erase: bool = False) -> None:
        """Start our own line: end pytest's (`file.py ...`), remember its prefix; pytest starts anew if interrupted.
        With `erase` (the bar, which redraws in place anyway), a line holding only the prefix is blanked instead of left
        behind, since `_close` writes it again.
        """
        self._prefix = reporter.currentfspath
        width = tw.width_of_current_line
        if erase and width and width == len(_prefix_text(self._prefix, Path(reporter.startpath))):
            tw.write("\r" + " " * width + "\r")
        elif width:
            tw.line()
        reporter.currentfspath = -2  # pytest's own "mid-line" mark: its next line (Ctrl-C, an error) starts fresh

    def _close(self, reporter: Any, tw: Any) -> None:
        """Hand the line back to pytest as it was: write the test file's prefix again, so its dots carry on."""
        text = _prefix_text(self._prefix, Path(reporter.startpath))
        tw.write(text)
        reporter.currentfspath = self._prefix if text else None

    def _lines(self, *lines: str) -> None:
        with self._terminal() as (reporter, tw):
            self._open(reporter, tw, erase=self.style() == "bar")  # a terminal: write over a bare prefix
            for line in lines:
                tw.line(line)
            self._close(reporter, tw)

    def _begin(self, now: float, style: str) -> None:
        self._active = True
        self._start = self._plain_at = now
        self._drawn_at, self._drawn_done = 0.0, -1
        if style == "bar":
            with self._terminal() as (reporter, tw):
                self._open(reporter, tw, erase=True)
            self._stop = threading.Event()
            threading.Thread(target=self._tick, args=(self._stop,), name="pytest-tom-progress", daemon=True).start()

    def _end(self) -> None:
        self._active = False
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        line = final_line(self._done, self._total, time.monotonic() - self._start, self._errors, self._retries)
        with self._terminal() as (reporter, tw):
            if self.style() == "bar":
                _write_over_bar(tw, line)
            else:
                self._open(reporter, tw)
                tw.line(line)
            self._close(reporter, tw)

    def _draw(self) -> None:
        now = time.monotonic()
        self._drawn_at, self._drawn_done = now, self._done + self._errors
        with self._terminal() as (_, tw):
            line = bar_line(self._done, self._total, now - self._start, tw.fullwidth, self._errors, self._retries)
            tw.write("\r" + line.ljust(tw.fullwidth - 1))

    def _tick(self, stop: threading.Event) -> None:
        """Redraw the latest count a moment after a burst of answers, and the elapsed time every second."""
        while not stop.wait(REDRAW_S):
            with self._lock, _never_fails():
                if stop.is_set() or not self._active or not threading.main_thread().is_alive():
                    return
                now = time.monotonic()
                if self._done + self._errors != self._drawn_done or now - self._drawn_at >= TICK_S:
                    self._draw()
