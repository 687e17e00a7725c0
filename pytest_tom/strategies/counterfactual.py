"""Meaning-changing perturbations whose new gold follows from the benchmark's own structure.

A counterfactual is sound only when the release itself says what the answer becomes; these two do:

* `witness` (SimpleToM): the story states that the person is aware of the key information (the
  sentence the release's mental-state question quotes). SimpleToM builds every story so that the
  person is *unaware*; its mental-state options are "Yes"/"No" and its behavior options are the
  unaware action (gold) and the action the person would take if aware (the release's
  `answer_incorrect`). Made aware, the mental-state gold becomes "Yes" and the behavior gold the
  aware action. Judgment questions are left alone: whether knowingly doing the unaware action is
  reasonable depends on the severity (a dented lid vs mold), which the release does not decide.
* `other_character` (FANToM yes/no questions): ask about another character of the same
  conversation whose access to the information is the opposite. The release's list question for
  the same set and context names exactly who knows the answer ("List all the characters who
  know..."), and a yes/no question's gold is "yes" iff its character is on that list; asking about
  a character on the other side flips the gold. Applied only where the original gold agrees with
  the list (so the flip is the release's, not ours).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_tom.sample import Sample, Story
from pytest_tom.strategies.base import Perturbation, StrategySpec, register

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


def other_character(sample: Sample[Any]) -> st.SearchStrategy[Perturbation]:
    """FANToM yes/no: ask about a character on the other side of the release's who-knows list (shrinks to the first)."""
    if sample.benchmark != "fantom" or sample.extra.qtype not in ("answerability_yn", "info_accessibility_yn"):
        raise InvalidArgument("other_character applies to FANToM yes/no questions")
    x = sample.extra
    asked = x.binary_character
    knowers, others = tuple(x.list_correct), tuple(x.list_wrong)
    gold = str(sample.gold)
    if not asked or gold not in ("yes", "no") or not (knowers or others):
        raise InvalidArgument(f"{sample.id}: no who-knows list to flip against")
    if (asked in knowers) != (gold == "yes"):
        raise InvalidArgument(f"{sample.id}: its gold disagrees with the set's list; no sound flip")
    candidates = [c for c in (others if gold == "yes" else knowers) if c != asked]
    pattern = re.compile(rf"(?<!\w){re.escape(asked)}(?!\w)")
    if not candidates or not pattern.search(sample.question):
        raise InvalidArgument(f"{sample.id}: nobody on the other side of the list, or the question does not name "
                              f"{asked}")
    new_gold = "no" if gold == "yes" else "yes"

    def build(other: str) -> Perturbation:
        extra = dataclasses.replace(x, binary_character=other, binary_gold=new_gold)
        facets = {**sample.facets, "character": other.lower()}
        out = dataclasses.replace(sample, question=pattern.sub(other, sample.question), gold=new_gold, extra=extra,
                                  facets=facets)
        side = "does not know" if gold == "yes" else "knows"
        return Perturbation("other_character", "counterfactual", out,
                            f"asked about {other} (who {side}, per the set's list) instead of {asked}; gold {gold} -> "
                            f"{new_gold}", 1)

    return st.sampled_from(candidates).map(build)


def _reason(fn: Any) -> Any:
    def why_not(sample: Sample[Any]) -> str | None:
        try:
            fn(sample)
        except (InvalidArgument, AttributeError) as exc:
            return str(exc)
        return None
    return why_not


register(StrategySpec("witness", "counterfactual", ("context", "gold"), ("simpletom",), _reason(witness), witness,
                      "SimpleToM: the person is made aware of the key information (mental state and behavior flip)"))
register(StrategySpec("other_character", "counterfactual", ("question", "gold", "extra", "facets"), ("fantom",),
                      _reason(other_character), other_character,
                      "FANToM yes/no: ask about a character with the opposite access (the set's list decides)"))
