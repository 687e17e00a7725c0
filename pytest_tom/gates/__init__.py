"""Regression gates: thresholds on a run's metrics and paired comparisons with a stored baseline, read from the typed
records of a run, never the terminal summary. Each gate's decision is a `GateResult`, a pure value that the pytest layer
reports as a `tom_gate` item and that the Markdown and JSON writers print.
"""

from __future__ import annotations

from pytest_tom.gates.metrics import MetricData, gate_metrics, match
from pytest_tom.gates.result import GateResult
from pytest_tom.gates.thresholds import Threshold, check_threshold, parse_threshold

__all__ = ["GateResult", "MetricData", "Threshold", "check_threshold", "gate_metrics", "match", "parse_threshold"]
