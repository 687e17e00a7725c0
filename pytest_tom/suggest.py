"""Typos answered with the nearest right word: "did you mean ...?" for model ids, `-m` marks and benchmark settings. Pure
functions over strings (difflib does the matching), shared by the model check at session start (`models._hub`) and the `-m`
hint after collection (`run.setup`), so both suggest the same way.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_KWARGS = re.compile(r"\(\s*\w+\s*=[^()]*\)")
"""`mark(key=value, ...)` in a `-m` expression (pytest >= 8.2): the arguments name no mark."""

_IDENT = re.compile(r"[\w:+\-.\[\]\\/]+")
"""An identifier of pytest's match expressions (`_pytest.mark.expression`)."""

_OPERATORS = frozenset({"and", "or", "not"})


def closest_hint(word: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest known word (case counts), or nothing when none is close."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def nearest(word: str, candidates: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The up to `n` candidates closest to `word`, best first, compared without regard to case."""
    by_folded: dict[str, str] = {}
    for c in candidates:
        by_folded.setdefault(c.casefold(), c)
    return [by_folded[m] for m in difflib.get_close_matches(word.casefold(), list(by_folded), n=n, cutoff=cutoff)]


def did_you_mean(options: Iterable[str]) -> str:
    """`did you mean a?` or `did you mean a, b or c?`; empty when there is nothing to offer."""
    found = list(options)
    if not found:
        return ""
    listed = found[0] if len(found) == 1 else f"{', '.join(found[:-1])} or {found[-1]}"
    return f"did you mean {listed}?"


def expression_words(expression: str) -> list[str]:
    """The mark names a `-m` expression tests, in order, once each (operators, parentheses and arguments dropped)."""
    words: list[str] = []
    for word in _IDENT.findall(_KWARGS.sub(" ", expression)):
        if word not in _OPERATORS and word not in words:
            words.append(word)
    return words


def mark_name(ini_line: str) -> str:
    """The mark a `markers` ini line registers: `slow(reason): doc` -> `slow`."""
    return ini_line.split(":", 1)[0].split("(", 1)[0].strip()


def unknown_marks_line(expression: str, known: Iterable[str]) -> str | None:
    """One line saying which words of `-m expression` are no mark, with the nearest marks; None when all are marks."""
    marks = set(known)
    unknown = [w for w in expression_words(expression) if w not in marks]
    if not unknown:
        return None
    parts = []
    for word in unknown:
        hint = did_you_mean(nearest(word, marks))
        parts.append(f"{word!r} is not a mark; {hint}" if hint else f"{word!r} is not a mark (see pytest --markers)")
    return f"pytest-tom: -m {expression!r} selects no item: {'; '.join(parts)}"
