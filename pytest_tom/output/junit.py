"""A gate's numbers as junitxml properties: what CI dashboards read without parsing the terminal. Gate items are
reported through pytest's ordinary hooks, so `--junitxml` writes each entry of their `user_properties`; this is the one
place that decides those entries.
"""

from __future__ import annotations

from pytest_tom.gates.result import GateResult

GATE_PROPERTY = "tom_gate"
"""user_properties key of a gate's result (junitxml writes it, and the numbers below, as properties)."""


def gate_properties(result: GateResult) -> list[tuple[str, object]]:
    """The gate's whole result, then its value, interval, n, threshold and baseline comparison as flat numbers."""
    props: list[tuple[str, object]] = [(GATE_PROPERTY, result.to_dict())]
    if result.estimate is not None:
        props += [("tom_gate_value", round(result.estimate.point, 6)), ("tom_gate_low", round(result.estimate.low, 6)),
                  ("tom_gate_high", round(result.estimate.high, 6)), ("tom_gate_n", result.estimate.n)]
    if result.threshold is not None:
        props.append(("tom_gate_threshold", f"{result.bound} {result.op} {result.threshold:g}"))
    if result.comparison is not None:
        c = result.comparison
        props += [("tom_gate_baseline", round(c.base, 6)), ("tom_gate_diff", round(c.diff.point, 6)),
                  ("tom_gate_p_adjusted", round(c.p_adjusted, 6))]
    return props
