"""ToMATO's robustness: its question asks "When X says ..., what does X think?" both ways round."""

from __future__ import annotations

import re

from pytest_tom.robustness.base import Perturbable

_WHEN = re.compile(r'^When ([^"]+?) says "(.*)", (how|what) (does|do) (he|she|they|[A-Z][\w.\'-]*) (.+)\?$', re.S)


def _when_last(m: re.Match[str]) -> str:
    """ToMATO asks both 'When X says "...", what does X think...?' and 'What does X think... when he says "..."?'."""
    speaker, utterance, wh, aux, who, rest = m.groups()
    pronoun = who in ("he", "she", "they")
    return f'{wh.capitalize()} {aux} {speaker} {rest} when {who if pronoun else speaker} says "{utterance}"?'


PERTURBABLE = Perturbable(rephrasings=((_WHEN, _when_last),))
