"""Whether the terminal summary prints a metric cell, wherever the renderer wrapped its table."""

from __future__ import annotations

import re


def missing(text: str, *cells: str) -> list[str]:
    """The cells (`label value`, a whole cell or its start) that `text` does not print as a cell of its own."""
    return [c for c in cells if not re.search(r"(?:^|\s)" + re.escape(c) + r"(?=\s|$|\||\[|\()", text, re.MULTILINE)]
