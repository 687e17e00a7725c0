"""A gate's verdict in words: one line a person can read, the same in the terminal and in the Markdown summary. `-33.3
pts, interval -87.5 to +20.9; p=1.000 Holm` leaves the reader to guess what the interval is of and which way the test
points. These lines say the value now and in the baseline, the change with its interval, the adjusted p and over how
many metrics, and whether that is a significant drop; a metric too small for the test to ever show a drop is "not
testable (n=...)". Only words: every number and decision comes from `stats` and `compare`.
"""

from __future__ import annotations

import math

from pytest_tom.gates.result import GateResult
from pytest_tom.stats import Comparison

DEFAULT_ALPHA = 0.05


def untestable(result: GateResult) -> str | None:
    """`n=3` when the comparison cannot show a regression whatever the data, else None. Fewer than two clusters (the t
    test has no degree of freedom), an interval that is not finite, or too few pairs for exact McNemar to reach alpha
    even if every unit got worse (0.5**n > alpha: n <= 4 at 0.05). Such a metric never fails.
    """
    c = result.comparison
    if c is None:
        return None
    alpha = float(result.details.get("alpha", DEFAULT_ALPHA))
    d = c.diff
    if d.clusters < 2 or not (math.isfinite(d.low) and math.isfinite(d.high)) or 0.5 ** c.n_pairs > alpha:
        return f"n={c.n_pairs}"
    return None


def _p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}" if p < 0.01 else f"p={p:.2f}"


def points(x: float) -> str:
    return f"{round(x * 100, 1) + 0.0:+.1f}"  # + 0.0: no "-0.0"


def change_words(result: GateResult, c: Comparison) -> str:
    """`-33.3 points; 95% interval of the change -87.5 to +20.9, p=1.00 after Holm over 52 metrics: not a significant drop`."""
    higher = bool(result.details.get("higher_is_better", True))
    direction = "drop" if higher else "rise"
    margin = f" beyond the tolerated {c.margin * 100:.3g} points" if c.margin else ""
    holm = result.details.get("holm_over")
    over = f" over {holm} metric{'s' if holm != 1 else ''}" if isinstance(holm, int) else ""
    d = c.diff
    if d.low == d.high:
        unit = str(result.details.get("unit", "question"))
        interval = f"no interval: every one of the {c.n_pairs} {unit}{'' if c.n_pairs == 1 else 's'} changed alike"
    else:
        interval = f"{d.level:.0%} interval of the change {points(d.low)} to {points(d.high)}"
    verdict = f"a significant {direction}{margin}" if c.regressed else f"not a significant {direction}{margin}"
    return f"{points(d.point)} points; {interval}, {_p(c.p_adjusted)} after Holm{over}: {verdict}"


def flip_words(result: GateResult, c: Comparison) -> str:
    """`2 questions went right->wrong, 0 wrong->right` (for a lower-is-better metric: got worse / better)."""
    unit = str(result.details.get("unit", "question"))
    units = f"{unit}s" if c.right_to_wrong != 1 else unit
    if result.details.get("higher_is_better", True):
        return f"{c.right_to_wrong} {units} went right->wrong, {c.wrong_to_right} wrong->right"
    return f"{c.right_to_wrong} {units} got worse, {c.wrong_to_right} better"


def baseline_words(result: GateResult, c: Comparison) -> str:
    """The comparison `c` of `result` with the baseline in words (the gate line without its name)."""
    values = f"{c.new:.1%} now vs {c.base:.1%} in the baseline"
    small = untestable(result)
    if small is not None:
        alpha = float(result.details.get("alpha", DEFAULT_ALPHA))
        direction = "drop" if result.details.get("higher_is_better", True) else "rise"
        unit = str(result.details.get("unit", "question"))
        return (f"not testable ({small}): {values} ({points(c.diff.point)} points), too few {unit}s to show a "
                f"{direction} at alpha {alpha:g}; {flip_words(result, c)}")
    return f"{values} ({change_words(result, c)}); {flip_words(result, c)}"


_OPS = {">=": (">=", "below"), "<=": ("<=", "above")}


def threshold_words(result: GateResult) -> str:
    """`28.6% [8.3%-63.7%] n=21 in 7 clusters; the upper bound 63.7% is >= 25.0% as required`."""
    est = result.estimate
    if est is None or result.threshold is None:
        return result.message.splitlines()[0]
    where = f"n={est.n}" + (f" in {est.clusters} clusters" if est.clusters != est.n else "")
    got = {"point": est.point, "lower": est.low, "upper": est.high}.get(result.bound, est.point)
    what = "the value" if result.bound == "point" else f"the {result.bound} bound"
    op, other = _OPS.get(result.op, (result.op, "not " + result.op))
    if result.passed:
        verdict = f"{what} {got:.1%} is {op} {result.threshold:.1%} as required"
    else:
        verdict = f"{what} {got:.1%} is {other} {result.threshold:.1%}, but must be {op} {result.threshold:.1%}"
    return f"{est.point:.1%} [{est.low:.1%}-{est.high:.1%}] {where}; {verdict}"


def coverage_words(result: GateResult) -> str:
    """`; compared on 40 of 42 questions` when the baseline lacked some of this run's units, else nothing."""
    coverage = result.details.get("coverage") or {}
    paired, only_run = coverage.get("paired"), coverage.get("only_in_run")
    if not isinstance(paired, int) or not isinstance(only_run, int) or only_run <= 0:
        return ""
    unit = str(result.details.get("unit", "question"))
    return f"; compared on {paired:,} of {paired + only_run:,} {unit}s"


def line(result: GateResult) -> str:
    """`PASS <gate>: <in words>`, the terminal's line for one gate."""
    c = result.comparison
    words = threshold_words(result) if c is None else baseline_words(result, c) + coverage_words(result)
    if result.details.get("updated"):
        words += " [--tom-baseline-update: not failing]"
    return f"{'PASS' if result.passed else 'FAIL'} {result.name}: {words}"


def verdict(result: GateResult) -> str:
    """The verdict alone, for a table cell: `pass`, `pass: not testable (n=3)`, `significant drop`, `fail`."""
    small = untestable(result)
    if result.passed:
        return f"pass: not testable ({small})" if small else "pass"
    c = result.comparison
    if c is not None and c.regressed:
        return "significant drop" if result.details.get("higher_is_better", True) else "significant rise"
    return "fail"
