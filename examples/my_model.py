"""Stand-in for a model repo's own inference code.

`overlap_baseline` is a real (if weak) baseline: for a ToMBench prompt it picks the
option sharing most words with the story and question. Replace it with a call
into your model; the signature is what pytest-tom expects from a batched callable.
"""

from __future__ import annotations

import re
from typing import Any

_OPTION = re.compile(r"^([A-D])\. (.+)$", re.M)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def overlap_baseline(batch: list[list[dict[str, str]]], settings: dict[str, Any]) -> list[str]:
    """Answer a batch of chat conversations; `settings` holds max_new_tokens, temperature, seed."""
    answers = []
    for conversation in batch:
        prompt = conversation[-1]["content"]
        context = _words(prompt.split("\n\n[")[0] + prompt.split("\n\n[")[1] if "\n\n[" in prompt else prompt)
        options = _OPTION.findall(prompt)
        if not options:
            answers.append("I cannot tell.")
            continue
        best = max(options, key=lambda o: (len(_words(o[1]) & context), -ord(o[0])))
        answers.append(f"[[{best[0]}]]")
    return answers
