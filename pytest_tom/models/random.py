"""`random[:seed]`: a seeded chance baseline that needs no model at all. Each answer is one of the request's labels,
chosen by a hash of the seed and the request, so a run is reproducible and sits at chance level: the harness's own smoke
test (a chance baseline far from chance means shuffling, mapping or scoring is wired wrong).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pytest_tom.errors import TomConfigError
from pytest_tom.models.base import Model
from pytest_tom.request import Request, Response


class RandomModel(Model):
    batch_size = 1024

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.uri = f"random:{seed}"

    def fingerprint(self) -> str:
        return f"random:v1:{self.seed}"

    def _draw(self, request: Request, n: int) -> int:
        digest = hashlib.sha256(f"{self.seed}:{request.key}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % n

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            if r.kind == "loglikelihood":
                k = self._draw(r, len(r.choices)) if r.choices else 0
                out.append(Response(logprobs=tuple(0.0 if i == k else -1.0 for i in range(len(r.choices)))))
            elif r.answer_labels:
                label = r.answer_labels[self._draw(r, len(r.answer_labels))]
                out.append(Response(text=r.answer_format.format(label)))
            else:
                words = r.prompt_text().split() or ["..."]
                start = self._draw(r, len(words))
                out.append(Response(text=" ".join(words[start : start + 8])))
        return out


def make(spec: str) -> RandomModel:
    """Build from the part after `random:` (empty, or an integer seed)."""
    try:
        return RandomModel(int(spec or 0))
    except ValueError:
        raise TomConfigError(f"--tom-model random:{spec}: the seed must be an integer, e.g. random:42") from None
