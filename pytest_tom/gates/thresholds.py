"""Fixed thresholds on a metric: `tombench.accuracy>=0.45`, `fantom.all_star:lower>=20%`, `errors<=1%`. A threshold on
the point estimate fails a model truly at the bar half the time; one on the lower bound of the clustered interval
(`:lower`) fails only when the data show the model below it.

A threshold can also be a published row (`framework.reference`): `tombench.languages.en.task_avg>=ref:gpt-4o`, with an
optional margin, relative (`ref:gpt-4o-5%`: 95% of the paper's value) or in points (`ref:gpt-4o-3pts`). It names the
benchmark's reported metric (the report's `metrics` key, as the rows name it), not a gate metric: the paper printed that
number, never a per-question rate of ours. Such a rule is checked before the run (`reference_problem`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_tom.errors import TomConfigError
from pytest_tom.framework.metric import Metric
from pytest_tom.framework.reference import ReferenceRow, missing, select, shipped
from pytest_tom.gates.metrics import match
from pytest_tom.gates.result import GateResult
from pytest_tom.record import MetricData
from pytest_tom.stats import estimate_rate

if TYPE_CHECKING:
    from pytest_tom.gates.metrics import SuiteView

_HEAD = r"^\s*(?P<metric>[A-Za-z0-9_.*?\-\[\]/:]+?)(?::(?P<bound>point|lower|upper))?\s*(?P<op>>=|<=)\s*"
_RULE = re.compile(_HEAD + r"(?P<value>\d+(?:\.\d+)?|\.\d+)\s*(?P<pct>%?)\s*$")
_REF = re.compile(_HEAD + r"ref:\s*(?P<model>.+?)(?P<margin>\s*[-+]\s*(?:\d+(?:\.\d+)?|\.\d+)\s*(?:%|pts))?\s*$",
                  re.IGNORECASE)
"""A margin needs its unit: a bare `-4` could end a model's name (`GPT-4`)."""


@dataclass(frozen=True)
class Threshold:
    """One rule as written: a metric pattern, a comparison and a value in [0, 1]."""

    pattern: str
    op: str
    value: float
    bound: str = "point"
    text: str = ""
    reference: str = ""
    """The published model a `ref:` rule compares with (its value then is unused); empty for a fixed value."""
    margin: str = ""
    """A `ref:` rule's margin as written (`-5%`, `+3pts`), empty for none."""

    def bar(self, published: float, unit: str) -> float:
        """The value a `ref:` rule requires: the published one moved by the margin, a `%` margin relative to it, a `pts`
        one in points of the metric's scale (percentage points for a rate).
        """
        m = re.fullmatch(r"([-+])(\d+(?:\.\d+)?|\.\d+)(%|pts)", self.margin.replace(" ", "").lower())
        if m is None:
            return published
        sign, number = (-1.0 if m.group(1) == "-" else 1.0), float(m.group(2))
        if m.group(3) == "%":
            return published * (1 + sign * number / 100)
        return published + sign * number / (100.0 if unit == "rate" else 1.0)


def parse_threshold(text: str, *, where: str = "--tom-threshold") -> Threshold:
    """Read `METRIC[:point|lower|upper] >= VALUE[%]` (or `<=`); VALUE is a rate in [0, 1] or a percentage, or
    `ref:MODEL[-N%|-Npts]`, a published row.
    """
    ref = _REF.match(text)
    if ref is not None:
        margin = (ref.group("margin") or "").replace(" ", "")
        return Threshold(ref.group("metric"), ref.group("op"), 0.0, ref.group("bound") or "point", text.strip(),
                         ref.group("model").strip(), margin)
    m = _RULE.match(text)
    if m is None:
        raise TomConfigError(f"{where} {text!r}: expected METRIC[:lower|upper|point]>=VALUE or <=VALUE, e.g. "
                             "'tombench.accuracy:lower>=0.3', 'fantom.all_star>=5%', 'tombench.errors<=0', or a "
                             "published row, 'tombench.languages.en.task_avg>=ref:gpt-4o-5%'")
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
    refs, rules = [r for r in rules if r.reference], [r for r in rules if not r.reference]
    matched_any: dict[str, bool] = {r.text: False for r in rules}
    for view in views:
        metrics = view.metrics()
        names = {view.label(m): m for m in metrics}
        available.extend(names)
        own = [parse_threshold(t, where=f"suite {view.sid} gates") for t in view.info.get("gates") or ()]
        results += reference_results(view, refs, [r for r in own if r.reference])
        own = [r for r in own if not r.reference]
        for rule, table in [(r, names) for r in rules] + [(r, {m: m for m in metrics}) for r in own]:
            for name in match(rule.pattern, table):
                matched_any[rule.text] = True
                metric = table[name]
                results.append(check_threshold(rule, metrics[metric], view.label(metric)))
            if rule in own and not match(rule.pattern, table):
                results.append(_no_match(rule, f"suite {view.sid}", sorted(metrics)))
    results += [_no_match(rule, "--tom-threshold", sorted(set(available))) for rule in rules if not matched_any[rule.text]]
    return results + [_no_row(rule, "--tom-threshold") for rule in refs
                      if not any(applicable(rule, v.name, v.benchmark.name, v.settings()) for v in views)]


def applicable(rule: Threshold, suite: str, benchmark: str, settings: Mapping[str, Any], *,
               own: bool = False) -> dict[str, ReferenceRow]:
    """The published rows a `ref:` rule compares with in one suite, by the metric name it matches: rows of its model
    under this suite's settings whose `<suite>.<metric>` (a suite's own rule: `<metric>`) the pattern matches.
    """
    rows = select(shipped(benchmark), rule.reference, settings)
    table = {(r.metric if own else f"{suite}.{r.metric}"): r for r in rows}
    return {name: table[name] for name in match(rule.pattern, table)}


def reference_problem(rule: Threshold, suites: Sequence[tuple[str, str, Mapping[str, Any]]], *, own: bool = False) -> str | None:
    """Why a `ref:` rule has no published row to compare with in these suites (name, benchmark, settings), or None: the
    model has no row there, only rows under other settings (`framework.reference.missing`), or none for the metrics the
    pattern names (then the metrics it has are listed).
    """
    why: list[str] = []
    for name, bench, settings in suites:
        if applicable(rule, name, bench, settings, own=own):
            return None
        rows = select(shipped(bench), rule.reference, settings)
        if not rows:
            why.append(missing(shipped(bench), rule.reference, bench, settings))
            continue
        keys = sorted(dict.fromkeys(r.metric if own else f"{name}.{r.metric}" for r in rows), key=lambda k: k.count("."))
        more = f" ... ({len(keys)} in all)" if len(keys) > 12 else ""
        why.append(f"{rows[0].model}'s rows for {name} name: {', '.join(keys[:12])}{more}")
    return (f"the gate {rule.text!r} names no published {rule.reference} row for {rule.pattern!r} under this run's "
            f"settings (a ref: threshold names a reported metric, the report's metrics key): " + "; ".join(why))


def reference_results(view: SuiteView, rules: Sequence[Threshold], own: Sequence[Threshold]) -> list[GateResult]:
    """The `ref:` rules (the command line's, then the suite's own) against this suite's reported metrics."""
    pairs = [(rule, applicable(rule, view.name, view.benchmark.name, view.settings(), own=is_own))
             for group, is_own in ((rules, False), (own, True)) for rule in group]
    if not any(rows for _, rows in pairs):
        return [_no_row(rule, f"suite {view.sid}") for rule in own]
    typed = view.reported()
    out = [check_reference(rule, typed.get(row.metric), row, view.label(row.metric))
           for rule, rows in pairs for row in rows.values()]
    return out + [_no_row(rule, f"suite {view.sid}") for rule, rows in pairs if rule in own and not rows]


def _shown(value: float, unit: str) -> str:
    return f"{100 * value:.1f}%" if unit == "rate" else f"{value:.1f}%" if unit == "percent" else f"{value:g}"


def check_reference(rule: Threshold, metric: Metric | None, row: ReferenceRow, full_name: str) -> GateResult:
    """Judge one reported metric against a published row (moved by the rule's margin). The gate's name, message and
    details name the row: model, value, settings and the table it was copied from.
    """
    unit = metric.unit if metric is not None else "rate"
    bar = rule.bar(row.value, unit)
    name = f"{full_name}:{rule.bound}{rule.op}ref:{row.model}{rule.margin}"
    settings = ", ".join(f"{k}={v}" for k, v in row.settings) or "any settings"
    moved = (f", {rule.margin} of it: {_shown(bar, unit)}" if rule.margin.endswith("%") else
             f" {rule.margin}: {_shown(bar, unit)}" if rule.margin else "")
    shown = f"{rule.op} {row.model}'s published {_shown(row.value, unit)}{moved} ({row.source}; {settings})"
    details: dict[str, Any] = {"reference": {"model": row.model, "value": row.value, "source": row.source,
                                             "settings": dict(row.settings), "metric": row.metric, "margin": rule.margin,
                                             "required": bar, "unit": unit}}
    value = metric.value if metric is not None else None
    if rule.bound != "point":
        value = None if metric is None or metric.interval is None else metric.interval[1 if rule.bound == "upper" else 0]
    if not isinstance(value, int | float) or isinstance(value, bool):
        why = ("this run has no such metric" if metric is None else f"it has no {rule.bound} bound"
               if rule.bound != "point" else "it has no value (nothing was scored)")
        return GateResult(name, "threshold", full_name, False, None, f"{full_name}: {why}, so nothing shows it is {shown}",
                          bar, rule.op, rule.bound, details=details)
    passed = value >= bar if rule.op == ">=" else value <= bar
    details["reference"]["got"] = value
    what = "" if rule.bound == "point" else f"the {rule.bound} bound of "
    message = (f"{what}{full_name} = {_shown(float(value), unit)} {'meets' if passed else 'misses'} the threshold {shown}")
    return GateResult(name, "threshold", full_name, passed, None, message, bar, rule.op, rule.bound, details=details)


def _no_row(rule: Threshold, where: str) -> GateResult:
    return GateResult(rule.text, "threshold", rule.pattern, False, None,
                      f"{where}: the gate {rule.text!r} names no published {rule.reference} row of this run's metrics "
                      "and settings", None, rule.op, rule.bound)


def _no_match(rule: Threshold, where: str, available: Sequence[str]) -> GateResult:
    shown = ", ".join(available[:40]) + (f" ... ({len(available)} in all)" if len(available) > 40 else "")
    return GateResult(rule.text, "threshold", rule.pattern, False, None,
                      f"{where}: the gate {rule.text!r} names no metric of this run; metrics: {shown or 'none (nothing ran)'}",
                      rule.value, rule.op, rule.bound)
