"""From generated token ids to answers: end at EOS, apply the stop strings, count the tokens spent.

A row that a stop string ended is padded with the pad id, which is not part of the answer;
excluded stops are cut with what follows, answer-contract stops are kept (`cut_at_stops`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_tom.models._common import cut_at_stops
from pytest_tom.request import GenerationSettings


def truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    """Cut at the earliest stop string, excluded (OpenAI semantics)."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return text[: min(cuts)] if cuts else text


def decode_rows(tokenizer: Any, rows: Sequence[Sequence[int]], s: GenerationSettings, *, eos: set[int],
                pad_id: int) -> list[tuple[str, int]]:
    """(answer text, completion tokens) of each row of new tokens."""
    out = []
    for tokens in rows:
        cut = next((k for k, t in enumerate(tokens) if t in eos), None)
        kept = list(tokens[:cut] if cut is not None else tokens)
        if cut is None and (s.stop or s.stop_after):
            while kept and kept[-1] == pad_id:
                kept.pop()
        used = cut + 1 if cut is not None else len(kept)
        text = tokenizer.decode(kept, skip_special_tokens=True)
        text = cut_at_stops(text, s.stop, s.stop_after) if s.stop_after else truncate_at_stop(text, s.stop)
        out.append((text, used))
    return out
