"""Embedding similarity: is a free-text answer nearer one reference than another?

The vectors come from the engine (`Request(kind="embed")`), so they are planned,
batched and cached like any other model answer; this module only compares them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


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
    sim_target = cosine(answer, target)
    sim_other = cosine(answer, other)
    return sim_target > sim_other, sim_target, sim_other
