"""Pure scorers shared by benchmarks: choice labels, yes/no, lists as sets, text overlap, embeddings, votes.

Every function here is a pure function of an answer's text (or vectors) and the
item's labels, so it is unit-tested on its own and reused by every benchmark with
the same answer contract. A reader that cannot find an answer says so (None, -1,
`readable=False`); callers report that as "unparseable", never as "wrong".
"""

from __future__ import annotations

from pytest_tom.scoring.choice import (
    EXTRACTION_MODES,
    bracketed_label,
    bracketed_official,
    letter_official_correct,
    letters_picked,
)
from pytest_tom.scoring.embedding import cosine, nearer
from pytest_tom.scoring.lists import ListJudgement, judge_list, mentions
from pytest_tom.scoring.text import token_f1, weighted_f1
from pytest_tom.scoring.vote import majority
from pytest_tom.scoring.yesno import binary_official, binary_strict

__all__ = [
    "EXTRACTION_MODES",
    "ListJudgement",
    "binary_official",
    "binary_strict",
    "bracketed_label",
    "bracketed_official",
    "cosine",
    "judge_list",
    "letter_official_correct",
    "letters_picked",
    "majority",
    "mentions",
    "nearer",
    "token_f1",
    "weighted_f1",
]
