"""Fixed thresholds on a metric: `tombench.accuracy>=0.45`, `fantom.all_star:lower>=20%`, `errors<=1%`. A threshold on
the point estimate fails a model truly at the bar half the time; one on the lower bound of the clustered interval
(`:lower`) fails only when the data show the model below it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_tom.errors import TomConfigError
from pytest_tom.gates.metrics import match
from pytest_tom.gates.result import GateResult
from pytest_tom.record import MetricData
from pytest_tom.stats import estimate_rate

if TYPE_CHECKING:
    from pytest_tom.gates.metrics import SuiteView

_RULE = re.compile(
    r"^\s*(?P<metric>[A-Za-z0-9_.*?\-\[\]/:]+?)(?::(?P<bound>point|lower|upper))?\s*(?P<op>>=|<=)\s*"
    r"(?P<value>\d+(?:\.\d+)?|\.\d+)\s*(?P<pct>%?)\s*$"
)


@dataclass(frozen=True)
class Threshold:
    """One rule as written: a metric pattern, a comparison and a value in [0, 1]."""

    pattern: str
    op: str
    value: float
    bound: str = "point"
    text: str = ""


def parse_threshold(text: str, *, where: str = "--tom-threshold") -> Threshold:
    """Read `METRIC[:point|lower|upper] >= VALUE[%]` (or `<=`); VALUE is a rate in [0, 1] or a percentage."""
    m = _RULE.match(text)
    if m is None:
        raise TomConfigError(f"{where} {text!r}: expected METRIC[:lower|upper|point]>=VALUE or <=VALUE, e.g. "
                             "'tombench.accuracy:lower>=0.3', 'fantom.all_star>=5%', 'tombench.errors<=0'")
    value = float(m.group("value")) / (100.0 if m.group("pct") else 1.0)
    if not 0.0 <= value <= 1.0:
        raise TomConfigError(f"{where} {text!r}: the value must be a rate in [0, 1] (or a percentage up to 100%)")
    return Threshold(m.group("metric"), m.group("op"), value, m.group("bound") or "point", text.strip())


def check_threshold(rule: Threshold, metric: MetricData, full_name: str, *, level: float = 0.95, seed: int = 0) -> GateResult:
    """Judge one metric against one threshold; a metric with no units fails (nothing shows the model meets it)."""
    name = f"{full_name}:{rule.bound}{rule.op}{rule.value:g}"
    shown = f"{rule.bound} {rule.op} {rule.value:.1%}" if rule.bound != "point" else f"{rule.op} {rule.value:.1%}"
    if not metric.values:
        return GateResult(name, "threshold", full_name, False, None,
                          f"{full_name}: no units were scored, so nothing shows it is {shown}", rule.value, rule.op, rule.bound)
    est = estimate_rate(metric.values, metric.clusters, level=level, seed=seed)
    got = {"point": est.point, "lower": est.low, "upper": est.high}[rule.bound]
    passed = got >= rule.value if rule.op == ">=" else got <= rule.value
    bound = "" if rule.bound == "point" else f" (the {rule.bound} bound is {got:.1%})"
    message = (f"{full_name} = {est.point:.1%} ({est.level:.0%} interval {est.low:.1%}-{est.high:.1%}, n={est.n}, "
               f"{est.clusters} clusters; {est.method}) {'meets' if passed else 'misses'} the threshold {shown}{bound}")
    return GateResult(name, "threshold", full_name, passed, est, message, rule.value, rule.op, rule.bound)


def threshold_results(views: Sequence[SuiteView], rules: Sequence[Threshold]) -> list[GateResult]:
    """Every threshold against every metric it names; a rule that names no metric of any suite fails, listing them."""
    results: list[GateResult] = []
    available: list[str] = []
    matched_any: dict[str, bool] = {r.text: False for r in rules}
    for view in views:
        metrics = view.metrics()
        names = {view.label(m): m for m in metrics}
        available.extend(names)
        own = [parse_threshold(t, where=f"suite {view.sid} gates") for t in view.info.get("gates") or ()]
        for rule, table in [(r, names) for r in rules] + [(r, {m: m for m in metrics}) for r in own]:
            for name in match(rule.pattern, table):
                matched_any[rule.text] = True
                metric = table[name]
                results.append(check_threshold(rule, metrics[metric], view.label(metric)))
            if rule in own and not match(rule.pattern, table):
                results.append(_no_match(rule, f"suite {view.sid}", sorted(metrics)))
    return results + [_no_match(rule, "--tom-threshold", sorted(set(available))) for rule in rules if not matched_any[rule.text]]


def _no_match(rule: Threshold, where: str, available: Sequence[str]) -> GateResult:
    shown = ", ".join(available[:40]) + (f" ... ({len(available)} in all)" if len(available) > 40 else "")
    return GateResult(rule.text, "threshold", rule.pattern, False, None,
                      f"{where}: the gate {rule.text!r} names no metric of this run; metrics: {shown or 'none (nothing ran)'}",
                      rule.value, rule.op, rule.bound)
