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

from pytest_tom.errors import TomConfigError
from pytest_tom.strategies.base import REGISTRY, Perturbation, StrategySpec, register
from pytest_tom.strategies.counterfactual import other_character, witness
from pytest_tom.strategies.invariance import (
    choice_permutations,
    irrelevant_sentences,
    renamings,
    rephrasings,
    whitespace_noise,
)


def resolve(names: str | list[str] | tuple[str, ...]) -> list[StrategySpec]:
    """Specs for a comma-separated list (or "all"); an unknown name is a configuration error listing the known ones.

    The built-in strategies are in `REGISTRY` by then: this package imports their modules, which register them.
    """
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    if wanted == ["all"]:
        return list(REGISTRY.values())
    unknown = [n for n in wanted if n not in REGISTRY]
    if unknown:
        raise TomConfigError(f"unknown robustness strategy {unknown[0]!r}; known: {', '.join(REGISTRY)} (or all)")
    return [REGISTRY[n] for n in dict.fromkeys(wanted)]


__all__ = [
    "REGISTRY", "Perturbation", "StrategySpec", "choice_permutations", "irrelevant_sentences", "other_character",
    "register", "renamings", "rephrasings", "resolve", "whitespace_noise", "witness",
]
