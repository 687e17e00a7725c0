"""Yes/no answers: the FANToM evaluator's binarisation, and a negation-aware strict reading."""

from __future__ import annotations

import re


def binary_official(answer: str) -> int:
    """Upstream's `map_binary_answer_to_int`: 1 yes, 0 no, -1 irrelevant.

    Space-padded patterns, yes first: " knows " counts as yes but "knows" at the
    start does not, "no" inside "know"/"not" never matches, and a leading space or a
    trailing "doesn't know." falls through to irrelevant.
    """
    a = answer.lower().strip("'").strip('"')
    if " yes," in a or " yes " in a or a.startswith("yes") or " yes." in a or " knows " in a or a.startswith("true"):
        return 1
    if (" no," in a or " no " in a or a.startswith("no") or " no." in a or " does not know " in a
            or " doesn't know " in a or a.startswith("false")):
        return 0
    return -1


_NEG_PHRASES = re.compile(
    r"\b(?:does|do|did)\s*(?:not|n't|n’t)\s+(?:know|have|hear|learn)\w*|\bnot\s+(?:know|aware)\w*|\bunaware\b"
    r"|\bnever\s+(?:heard|learned|knew)\b|\bno\b|\bfalse\b|\bnobody\b|\bno\s+one\b"
)


_POS_PHRASES = re.compile(r"\byes\b|\btrue\b|\bknows\b|\bdoes\s+know\b|\bis\s+aware\b|\bknew\b")


_FIRST_WORD = re.compile(r"^[\s\"'*_`(\[]*([a-z]+)")


def binary_strict(answer: str) -> int:
    """Yes/no with word boundaries and a documented precedence; 1 yes, 0 no, -1 unreadable.

    1. A leading yes/true or no/false decides ("No, he knows nothing" is no).
    2. Otherwise negative phrases ("does not know", "doesn't know", "unaware",
       "no", "false") are found and removed first, so their "know" is never read as
       "knows"; then positive cues ("yes", "true", "knows", "does know").
    3. Only negative cues -> no; only positive -> yes; both or neither -> unreadable.
    Word boundaries keep "know", "not", "nothing", "none" and "Noah" from reading as "no".
    """
    a = answer.strip().lower().replace("’", "'")
    m = _FIRST_WORD.match(a)
    if m:
        word = m.group(1)
        if word in ("yes", "true"):
            return 1
        if word in ("no", "false"):
            return 0
    negative = bool(_NEG_PHRASES.search(a))
    positive = bool(_POS_PHRASES.search(_NEG_PHRASES.sub(" ", a)))
    if negative and not positive:
        return 0
    if positive and not negative:
        return 1
    return -1
