"""ToMBench's robustness: its stories are narrative, so sentences about nobody may go between theirs."""

from pytest_tom.robustness.base import Perturbable

PERTURBABLE = Perturbable(narrative=True)
