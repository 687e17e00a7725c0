"""SimpleToM's robustness: its question templates, narrative stories, and the `witness` counterfactual.

`witness` makes the (always unaware) person aware of the key information the mental-state question quotes: the
release then says the answers, "Yes" and the aware action (`answer_incorrect`). Judgments are left alone: their
gold under awareness depends on the severity, which the release does not decide.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_tom.robustness.base import Perturbable, Perturbation, StrategySpec, reason
from pytest_tom.sample import Sample, Story

_AWARE_Q = re.compile(r'aware that "(.+)"\?\s*$', re.S)
_COMMON_OPENERS = {"the", "a", "an", "his", "her", "their", "its", "this", "that", "these", "those", "some", "there",
                   "it", "one", "several", "many", "inside", "under", "behind"}


def _lcfirst(text: str) -> str:
    """Lower-case a sentence's first word for use after "that", unless it may be a name ("Tom's lunchbox")."""
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first.lower() in _COMMON_OPENERS else text


def witness(sample: Sample[Any]) -> st.SearchStrategy[Perturbation]:
    """SimpleToM: the person is made aware of the key information; mental state and behavior golds flip."""
    if sample.benchmark != "simpletom":
        raise InvalidArgument("witness applies to SimpleToM samples")
    x = sample.extra
    if x.question_type not in ("mental_state", "behavior"):
        raise InvalidArgument(f"{sample.id}: a judgment's gold under awareness depends on the severity; not changed")
    m = _AWARE_Q.search(x.ms_question or "")
    if not m or not sample.characters or not isinstance(sample.context, Story):
        raise InvalidArgument(f"{sample.id}: no key information quoted by its mental-state question")
    key = m.group(1).strip()
    story = sample.context.text
    if not story.startswith(key):
        raise InvalidArgument(f"{sample.id}: the story does not open with the key information")
    person = sample.characters[0]
    aware = f"{person} is fully aware that {_lcfirst(key)}"
    if not aware.endswith((".", "!", "?")):
        aware += "."
    new_story = Story(f"{key} {aware} {story[len(key):].strip()}".strip())
    labels = [c.label for c in sample.choices]
    if len(labels) != 2 or sample.gold not in labels:
        raise InvalidArgument(f"{sample.id}: expected two options with a gold label")
    if x.question_type == "mental_state":
        yes = [c.label for c in sample.choices if c.text.strip().lower() == "yes"]
        if not yes or yes[0] == sample.gold:
            raise InvalidArgument(f"{sample.id}: no 'Yes' option other than the gold")
        gold = yes[0]
    else:
        gold = labels[1] if labels[0] == sample.gold else labels[0]
    out = dataclasses.replace(sample, context=new_story, gold=gold)
    change = f"story states {aware!r}; gold {sample.gold} -> {gold} ({sample.choice(gold).text!r})"
    return st.just(Perturbation("witness", "counterfactual", out, change, 1))


WITNESS = StrategySpec("witness", "counterfactual", ("context", "gold"), ("simpletom",), reason(witness, AttributeError),
                       witness, "SimpleToM: the person is made aware of the key information (mental state and behavior "
                       "flip)")

PERTURBABLE = Perturbable(
    rephrasings=(
        (re.compile(r"^Is (.+?) likely to be aware that "), r"Would \1 likely be aware that "),
        (re.compile(r"^What will (.+?) likely do next\?"), r"What is \1 likely to do next?"),
        (re.compile(r"The behavior of (.+?) can be best described as: $"), r"The best description of the behavior of "
                                                                             r"\1 is: "),
    ),
    narrative=True,
    strategies={"witness": "pytest_tom.evals.simpletom.strategies:WITNESS"},
)
