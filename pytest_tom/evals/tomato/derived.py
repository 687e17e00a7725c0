"""ToMATO's aggregate assertions: the false-belief gap and robustness to the speaker's personality.

`false_belief_gap`: second-order non-FB minus FB accuracy, overall and per mental state (spec 4.3: the paper's
LLMs show 9.5 to 16.2 points); `personality_robustness`: per order, each Big-Five factor's high-minus-low gap
(Tables 5, 11). Both fail only when the 95% interval (a conversation bootstrap united with Newcombe's) lies
wholly beyond the tolerance; each needs both of its groups in the suite.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_tom.derived import Derived, Judgement, Rule
from pytest_tom.evals.tomato.data import BENCHMARK, FACTOR_KEYS, MENTAL_STATES, ORDERS, ToMATOSample
from pytest_tom.framework.gaps import Gap, gap_rule, split_gap
from pytest_tom.record import Record

FB_GAP = "false_belief_gap"
PERSONALITY = "personality_robustness"


def false_belief_gaps(samples: Sequence[ToMATOSample], max_gap: float, benchmark: str = BENCHMARK) -> list[Derived]:
    """One gap over all second-order questions, and one per mental state, where both groups have questions."""
    second = [s for s in samples if s.extra.order == 2]
    scopes = {scope: [s for s in second if scope in ("all", s.extra.mental_state)] for scope in ("all", *MENTAL_STATES)}
    return [Derived(benchmark=benchmark, id=scope, kind=FB_GAP, members=tuple(s.id for s in mine),
                    marks=(benchmark, FB_GAP, "second_order", *(() if scope == "all" else (scope,))),
                    facets={"order": "second", **({} if scope == "all" else {"mental_state": scope})},
                    params={"max_gap": max_gap})
            for scope, mine in scopes.items() if len({s.extra.false_belief for s in mine}) == 2]  # both groups


def personality_checks(samples: Sequence[ToMATOSample], max_gap: float, benchmark: str = BENCHMARK) -> list[Derived]:
    """One check per order, over the factors whose high and low halves both have questions."""
    by_order = {name: [s for s in samples if s.extra.order == order] for order, name in ORDERS.items()}
    split = {name: [f for f in FACTOR_KEYS if {s.extra.big_five[f] for s in mine} == {"high", "low"}]
             for name, mine in by_order.items()}
    return [Derived(benchmark=benchmark, id=f"{name}_order", kind=PERSONALITY, members=tuple(s.id for s in mine),
                    marks=(benchmark, PERSONALITY, f"{name}_order"), facets={"order": name},
                    params={"max_gap": max_gap, "factors": split[name]})
            for name, mine in by_order.items() if split[name]]


def _pts(v: float) -> str:
    return f"{100 * v:+.1f}"


def _fb_gap(derived: Derived, g: Gap, tol: float) -> str:
    scope = derived.facets.get("mental_state", "all mental states")
    return (f"ToMATO false-belief gap ({scope}, second order): the model is right on {_pts(g.point)} points more of "
            f"the {g.n_a} non-false-belief questions than of the {g.n_b} false-belief ones (95% interval "
            f"[{_pts(g.low)}, {_pts(g.high)}] over {g.clusters} conversations), beyond the tolerance of "
            f"{100 * tol:.1f} points: it tracks what the listener thinks less well when the listener is wrong.")


fb_gap_rule = gap_rule("false_belief", "false", "true", "conversation", _fb_gap, items="questions")
"""Fails when non-FB second-order accuracy exceeds FB accuracy by more than max_gap, interval and all."""


def personality_rule(derived: Derived, members: Sequence[Record]) -> Judgement:
    """Fails when some factor's high-low gap lies wholly outside [-max_gap, max_gap]; the value is the largest |gap|."""
    tol = float(derived.params.get("max_gap", 0.05))
    factors = derived.params.get("factors", FACTOR_KEYS)
    gaps = {f: g for f in factors if (g := split_gap(members, f, "high", "low", "conversation"))}
    if not gaps:
        return Judgement(True, "no factor has both a high and a low half")
    worst = max(gaps, key=lambda f: abs(gaps[f].point))
    details = {"factors": {f: g.to_dict() for f, g in gaps.items()}, "largest": worst, "max_gap": tol}
    value = abs(gaps[worst].point)
    beyond = [f for f, g in gaps.items() if g.low > tol or g.high < -tol]
    if not beyond:
        return Judgement(True, value=value, details=details)
    rows = [f"  {f}: high - low {_pts(gaps[f].point)} points, 95% interval [{_pts(gaps[f].low)}, {_pts(gaps[f].high)}]"
            f" ({gaps[f].n_a} high / {gaps[f].n_b} low questions)" for f in beyond]
    msg = (f"ToMATO personality robustness ({derived.facets.get('order', '')} order): accuracy depends on the asked "
           f"speaker's Big Five beyond the tolerance of {100 * tol:.1f} points:\n" + "\n".join(rows)
           + "\n  (the halves are not matched on anything else; the lexical-overlap baseline shows gaps too)")
    return Judgement(False, msg, value=value, details=details)


RULES: dict[str, Rule] = {FB_GAP: fb_gap_rule, PERSONALITY: personality_rule}
