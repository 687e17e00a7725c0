"""Set-valued answers ("who knows?"): which names an answer mentions, judged as an exact set."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


def mentions(name: str, answer: str, mode: str) -> bool:
    """Whether `answer` names `name`: upstream's case-insensitive substring, or whole words in strict mode."""
    if mode == "official":
        return name.lower() in answer.lower()
    return re.search(r"(?<![A-Za-z])" + re.escape(name.lower()) + r"(?![A-Za-z])", answer.lower()) is not None


_EMPTY_SET = re.compile(r"\b(?:nobody|no\s+one|none|no\s+character|no\s+body)\b", re.I)


@dataclass(frozen=True, slots=True)
class ListJudgement:
    correct: bool
    named: tuple[str, ...]
    """Characters (of the gold and distractor lists) the answer names."""
    excluded_aware: bool
    """A character who knows is missing (upstream's `excluded_aware_character`)."""
    included_unaware: bool
    """A character who does not know is named (upstream's `included_unaware_character`)."""
    readable: bool
    """The answer names at least one character or says explicitly that nobody knows."""


def judge_list(answer: str, correct: Sequence[str], wrong: Sequence[str], mode: str) -> ListJudgement:
    """Exact-set scoring: every aware character named and no unaware one (upstream's `evaluate_list_q`)."""
    named = tuple(n for n in (*correct, *wrong) if mentions(n, answer, mode))
    excluded = any(not mentions(n, answer, mode) for n in correct)
    included = any(mentions(n, answer, mode) for n in wrong)
    readable = bool(named) or bool(_EMPTY_SET.search(answer))
    return ListJudgement(not (excluded or included), named, excluded, included, readable)
