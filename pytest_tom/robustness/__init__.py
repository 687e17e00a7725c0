"""Robustness: hypothesis strategies that perturb benchmark samples, the search over them, and what the results add up to.

* `base`: what a perturbation is (`Perturbation`), a named strategy (`StrategySpec`), what a
  benchmark tells the strategies (`Perturbable`, offered through its `robustness` attribute)
  and the lazy registry the names resolve through (`resolve`, `register`);
* `invariance`: the generic meaning-preserving strategies (`renamings`, `choice_permutations`,
  `irrelevant_sentences`, `whitespace_noise`, `rephrasings`); a benchmark's own counterfactuals
  live in its folder (`pytest_tom.evals.simpletom.strategies.witness`);
* `search`: hypothesis run over one question's perturbations, without pytest;
* `results`: the derived records' flip rates and robust accuracies (summary, report, gates).

Use the strategies in your own property tests::

    from hypothesis import given
    from pytest_tom.robustness.invariance import renamings

    @given(renamings(sample, names="female"))
    def test_my_model_ignores_names(p):
        assert answer(p.sample) == answer(sample)

or let the plugin run them per item with `--tom-robustness=rename,permute` and `-m tom_robustness`.
This module imports neither hypothesis nor a strategy: the plugin loads it at start-up.
"""

from __future__ import annotations

from pytest_tom.robustness.base import Perturbable, Perturbation, StrategySpec, register, resolve
from pytest_tom.robustness.results import KIND, MARK, judged, register_profiles, summarize, summary_lines, units

__all__ = ["KIND", "MARK", "Perturbable", "Perturbation", "StrategySpec", "judged", "register", "register_profiles",
           "resolve", "summarize", "summary_lines", "units"]
