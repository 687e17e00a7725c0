"""FANToM's robustness: its question templates, the asked character as text, and the `other_character` counterfactual.

`other_character` asks a yes/no question about a character on the other side of the set's who-knows list, which
flips the gold; only where the original gold agrees with the list (so the flip is the release's, not ours).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_tom.robustness.base import Perturbable, Perturbation, StrategySpec, reason
from pytest_tom.sample import Sample


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


OTHER_CHARACTER = StrategySpec("other_character", "counterfactual", ("question", "gold", "extra", "facets"), ("fantom",),
                               reason(other_character, AttributeError), other_character,
                               "FANToM yes/no: ask about a character with the opposite access (the set's list decides)")

PERTURBABLE = Perturbable(
    rephrasings=(
        (re.compile(r"^Does (.+?) know this information\?$"), r"Is \1 aware of this information?"),
        (re.compile(r"^List all the characters who know this information\.$"),
         "List every character who knows this information."),
    ),
    text_facets=("character",),
    strategies={"other_character": "pytest_tom.evals.fantom.strategies:OTHER_CHARACTER"},
)
