"""Choice answers: which option label a response picks. Two families of official rules live here, both parameterised by
the labels an item offers, so later benchmarks with the same answer contract reuse them:

* bracketed letters (ToMBench's `[[A]]` contract): the official priority order (`[[X]]`, then `[X]`, by label, then the
  last capital label anywhere), a lenient reading that reports "unparseable" where upstream silently answers "A", and a
  strict reading that accepts only the last `[[X]]`;
* option letters in running text (FANToM's "(a)"/"a)"/"a." patterns), the official acceptance test per gold label and a
  strict single-letter reading.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def most_likely(logprobs: Sequence[float] | None, choices: Sequence[str], labels: str, normalise: str = "none") -> str | None:
    """The label of the choice with the highest (optionally byte-normalised) log-probability, ties to the earlier.

    None unless there is one score per choice: a log-likelihood answer that picks nothing is unreadable.
    """
    if not logprobs or len(logprobs) != len(choices):
        return None
    scores = [lp / max(1, len(c.encode())) if normalise == "bytes" else lp for lp, c in zip(logprobs, choices, strict=True)]
    return labels[max(range(len(scores)), key=lambda i: (scores[i], -i))]


def bracketed_official(text: str, labels: str = "ABCD") -> tuple[str, bool]:
    """ToMBench upstream's `extract_answer`: priority by label, then the last capital label anywhere, else the first label.
    Returns the label and whether anything matched (False means upstream's silent default).
    """
    for pattern in ("[[{}]]", "[{}]"):
        for letter in labels:
            if pattern.format(letter) in text:
                return letter, True
    for ch in reversed(text):
        if ch in labels:
            return ch, True
    return labels[0], False


def bracketed_stops(mode: str, labels: str = "ABCD") -> tuple[str, ...]:
    """Answer-contract stops for `bracketed_label`: strings after which no continuation changes its reading. `official` and
    `lenient` try ``[[X]]`` for each label in label order before anything else, so a text containing ``[[A]]`` (the
    first label) reads A whatever follows. No other string settles it: after ``[[B]]`` a later ``[[A]]`` still wins,
    after ``[A]`` a later ``[[B]]`` does, and the last-capital fallback reads the end of the text. `strict` takes the
    last ``[[X]]``, which any continuation can change, so it has none. (Upstream's rule is priority by label, not "the
    first match": stopping at the first ``[[X]]`` would be unsafe.)
    """
    return (f"[[{labels[0]}]]",) if mode in ("official", "lenient") else ()


def bracketed_label(text: str | None, mode: str, n_options: int, labels: str = "ABCD") -> str | None:
    """The displayed label a response chose, or None when it cannot be read. `official` reproduces upstream exactly (never
    None; labels beyond `n_options` are returned, as upstream does, and count as a wrong vote); `lenient` is upstream
    without the default; `strict` accepts only the last ``[[X]]`` with X valid for the item.
    """
    text = text or ""
    if mode == "strict":
        found = re.findall(r"\[\[([" + re.escape(labels) + r"])\]\]", text)
        if not found or labels.index(found[-1]) >= n_options:
            return None
        return str(found[-1])
    letter, matched = bracketed_official(text, labels)
    if mode == "official":
        return letter
    return letter if matched else None


def letter_official_correct(answer: str, letter: str) -> bool:
    """FANToM upstream's `evaluate_mc_belief_q` for the gold `letter` (lower case)."""
    r = answer.lower()
    return r.startswith(tuple(f"{letter}{end}" for end in ").:,")) or f"({letter})" in r or letter == r


def letters_picked(answer: str, mode: str, options: Sequence[str], labels: str = "ab") -> tuple[str, ...]:
    """The option letters an answer picks. Official: every letter the official patterns accept (both letters when the
    answer mentions "(a)" and "(b)", which upstream counts as correct whatever the gold). Strict: a leading letter
    decides; otherwise the "(x)" mentions, or an answer that repeats one option's text; more than one candidate is
    unreadable.
    """
    if mode == "official":
        return tuple(x for x in labels if letter_official_correct(answer, x))
    cls = "[" + re.escape(labels) + "]"
    a = answer.strip().lower()
    m = re.match(r"^[\s\"'*_`\[]*(?:\((" + cls + r")\)|(" + cls + r")(?:[).:,]|$))", a)
    if m:
        return (m.group(1) or m.group(2),)
    found = tuple(dict.fromkeys(re.findall(r"\((" + cls + r")\)", a)))
    if found:
        return found
    norm = " ".join(a.split()).rstrip(".")
    texts = [" ".join(o.lower().split()).rstrip(".") for o in options]
    return tuple(x for x, t in zip(labels, texts, strict=False) if t and t == norm)
