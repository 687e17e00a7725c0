"""Hypothesis strategies that perturb benchmark samples: invariances and counterfactuals.

Every strategy takes a `Sample` and returns a hypothesis `SearchStrategy[Perturbation]`; it
validates its arguments when built (`InvalidArgument` for a sample it cannot change soundly)
and shrinks toward the smallest change. Use them in your own property tests::

    from hypothesis import given
    from pytest_tom.strategies import renamings

    @given(renamings(sample, names="female"))
    def test_my_model_ignores_names(p):
        assert answer(p.sample) == answer(sample)

or let the plugin run them per item with `--tom-robustness=rename,permute` and `-m tom_robustness`.
`REGISTRY` names each built-in strategy with what it changes and where it applies.
"""

from __future__ import annotations

from pytest_tom.strategies.base import REGISTRY, Perturbation, StrategySpec, register, resolve
from pytest_tom.strategies.counterfactual import other_character, witness
from pytest_tom.strategies.invariance import (
    choice_permutations,
    irrelevant_sentences,
    renamings,
    rephrasings,
    whitespace_noise,
)

__all__ = [
    "REGISTRY", "Perturbation", "StrategySpec", "choice_permutations", "irrelevant_sentences", "other_character",
    "register", "renamings", "rephrasings", "resolve", "whitespace_noise", "witness",
]
