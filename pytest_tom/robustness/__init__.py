"""Robustness: strategies that perturb samples (`base`, `invariance`, `text`), hypothesis' search over them (`search`),
and what the results add up to (`results`: flip rates, robust accuracies for summary, report, gates). A benchmark's own
templates and counterfactuals live in its folder (`evals/<bench>/strategies.py`), offered as a `Perturbable` through its
`robustness` attribute. This module imports neither hypothesis nor a strategy: the plugin loads it at start-up; use
`pytest_tom.robustness.invariance.renamings` & co in your own property tests.
"""

from __future__ import annotations

from pytest_tom.robustness.base import Perturbable, Perturbation, StrategySpec, register, resolve
from pytest_tom.robustness.results import KIND, MARK, judged, register_profiles, summarize, summary_lines, units

__all__ = ["KIND", "MARK", "Perturbable", "Perturbation", "StrategySpec", "judged", "register", "register_profiles",
           "resolve", "summarize", "summary_lines", "units"]
