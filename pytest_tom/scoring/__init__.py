"""Pure scorers shared by benchmarks: choice labels, yes/no, lists as sets, text overlap, embeddings, votes. Every function
here is a pure function of an answer's text (or vectors) and the item's labels, so it is unit-tested on its own and
reused by every benchmark with the same answer contract. A reader that cannot find an answer says so (None, -1,
`readable=False`); callers report that as "unparseable", never as "wrong". The choice readers (ToMBench's and FANToM's
letter rules) live in `choice`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_tom.scoring.choice import bracketed_label, letter_official_correct, letters_picked

__all__ = ["ListJudgement", "binary_official", "binary_strict", "bracketed_label", "cosine", "judge_list",
           "letter_official_correct", "letters_picked", "majority", "mentions", "nearer", "token_f1", "weighted_f1"]

# --- yes/no answers: the FANToM evaluator's binarisation, and a negation-aware strict reading ---
def binary_official(answer: str) -> int:
    """Upstream's `map_binary_answer_to_int`: 1 yes, 0 no, -1 irrelevant. Space-padded patterns, yes first: " knows "
    counts as yes but "knows" at the start does not, "no" inside "know"/"not" never matches, and a leading space or a
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
    """Yes/no with word boundaries and a documented precedence; 1 yes, 0 no, -1 unreadable:

    1. A leading yes/true or no/false decides ("No, he knows nothing" is no).
    2. Otherwise negative phrases ("does not know", "doesn't know", "unaware", "no", "false") are found and removed
       first, so their "know" is never read as "knows"; then positive cues ("yes", "true", "knows", "does know").
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


# --- set-valued answers ("who knows?"): which names an answer mentions, judged as an exact set ---
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


# --- free-text overlap scores: token F1 (SQuAD-style, unnormalised) and weighted F1 over labels ---
def token_f1(ground_truth: str, response: str) -> float:
    """Upstream's `compute_f1`: whitespace tokens, multiset overlap, no normalisation."""
    gt, resp = ground_truth.split(), response.split()
    same = sum((Counter(gt) & Counter(resp)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(resp), same / len(gt)
    return 2 * precision * recall / (precision + recall)


def weighted_f1(predictions: Sequence[int], references: Sequence[int]) -> float | None:
    """scikit-learn's `f1_score(average="weighted")` (what upstream's `evaluate.load("f1")` calls). Per label in the union
    of both lists: F1 = 2TP / (2TP + FP + FN), weighted by the label's support among the references; an unreadable
    answer (-1) is a label of its own that only ever costs recall.
    """
    if not references:
        return None
    pairs = list(zip(predictions, references, strict=False))
    predicted, actual, support = Counter(p for p, _ in pairs), Counter(r for _, r in pairs), Counter(references)
    total = 0.0
    for label in sorted(set(predictions) | set(references)):
        tp = sum(p == r == label for p, r in pairs)
        denom = predicted[label] + actual[label]  # 2TP + FP + FN
        total += (2 * tp / denom if denom else 0.0) * support[label]
    return total / len(references)


# --- embedding similarity: the vectors come from the engine (planned, batched, cached like any answer) ---
def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    """Cosine similarity; 0 for a zero vector, as scikit-learn's `cosine_similarity` gives."""
    dot = math.fsum(a * b for a, b in zip(u, v, strict=False))
    nu = math.sqrt(math.fsum(a * a for a in u))
    nv = math.sqrt(math.fsum(b * b for b in v))
    if nu == 0.0 or nv == 0.0:
        return 0.0
    return dot / (nu * nv)


def nearer(answer: Sequence[float], target: Sequence[float], other: Sequence[float]) -> tuple[bool, float, float]:
    """(strictly nearer `target` than `other`, similarity to target, similarity to other); a tie is not nearer."""
    sim_target, sim_other = cosine(answer, target), cosine(answer, other)
    return sim_target > sim_other, sim_target, sim_other


# --- combining several tries of one question into one answer ---
def majority(votes: Sequence[str]) -> str:
    """Most frequent vote; ties go to the vote recorded first (ToMBench upstream's sequential runner)."""
    counts = Counter(votes)
    best = max(counts.values())
    return next(v for v in votes if counts[v] == best)
