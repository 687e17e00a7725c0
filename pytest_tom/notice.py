"""One-time work said on screen: what the plugin is doing while nothing else moves. Converting the bundled GGUF or
loading a checkpoint takes seconds to minutes inside a test's setup, where pytest captures output: silent, the run looks
stuck. Backends wrap such work in `step`, which says what starts and how long it took and keeps the libraries' stderr
chatter (tqdm bars) out of the captured output. No pytest here: the run layer points `set_sink` at pytest's terminal
(`pytest_tom.run.progress`); without a sink lines go to stderr.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from collections.abc import Callable, Iterator

Sink = Callable[[str], None]
"""Shows one line to the user; the run layer's writes past pytest's output capture."""

_sink: Sink | None = None


def set_sink(sink: Sink | None) -> Sink | None:
    """Send lines to `sink` from now on (None: stderr); returns the previous sink, to restore it."""
    global _sink
    previous, _sink = _sink, sink
    return previous


def say(line: str) -> None:
    """Show `line` to the user now."""
    if _sink is not None:
        _sink(line)
    else:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def format_seconds(seconds: float) -> str:
    """`4.2 s` under a minute, then `2:05`, then `1:02:05`: short enough for a progress line."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@contextlib.contextmanager
def step(doing: str, done: str) -> Iterator[None]:
    """Say `pytest-tom: <doing>…` now and `pytest-tom: <done> in <time>` when the block ends. The block's stderr (tqdm
    bars, else dumped under the first failing test) is held back, and written out if the block raises, next to the error
    it may explain.
    """
    say(f"pytest-tom: {doing}…")
    start = time.perf_counter()
    chatter = io.StringIO()
    try:
        with contextlib.redirect_stderr(chatter):
            yield
    except BaseException:
        sys.stderr.write(chatter.getvalue())
        raise
    say(f"pytest-tom: {done} in {format_seconds(time.perf_counter() - start)}")
