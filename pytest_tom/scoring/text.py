"""Free-text overlap scores: token F1 (SQuAD-style, unnormalised) and weighted F1 over labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def token_f1(ground_truth: str, response: str) -> float:
    """Upstream's `compute_f1`: whitespace tokens, multiset overlap, no normalisation."""
    gt = ground_truth.split()
    resp = response.split()
    common = Counter(gt) & Counter(resp)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(resp)
    recall = same / len(gt)
    return 2 * precision * recall / (precision + recall)


def weighted_f1(predictions: Sequence[int], references: Sequence[int]) -> float | None:
    """scikit-learn's `f1_score(average="weighted")` (what upstream's `evaluate.load("f1")` calls).

    Per label in the union of both lists: F1 = 2TP / (2TP + FP + FN), weighted by the
    label's support among the references; an unreadable answer (-1) is a label of
    its own that only ever costs recall.
    """
    if not references:
        return None
    labels = sorted(set(predictions) | set(references))
    support = Counter(references)
    total = 0.0
    for label in labels:
        tp = sum(1 for p, r in zip(predictions, references, strict=False) if p == label and r == label)
        fp = sum(1 for p, r in zip(predictions, references, strict=False) if p == label and r != label)
        fn = sum(1 for p, r in zip(predictions, references, strict=False) if p != label and r == label)
        denom = 2 * tp + fp + fn
        total += (2 * tp / denom if denom else 0.0) * support[label]
    return total / len(references)
