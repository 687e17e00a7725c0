"""Regression gates: thresholds on a run's metrics and paired comparisons with a stored baseline, read from the typed
records of a run, never the terminal summary. Each gate's decision is a `GateResult`, a pure value that the pytest layer
reports as a `tom_gate` item and that the Markdown and JSON writers print.
"""

from __future__ import annotations

from pytest_tom.gates.metrics import gate_metrics
from pytest_tom.gates.result import GateResult

__all__ = ["GateResult", "gate_metrics"]
