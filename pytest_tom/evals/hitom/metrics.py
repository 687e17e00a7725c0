"""Hi-ToM's standard and joint accuracy as the authors' notebooks compute them (spec §6), and its checks (§8).

Accuracy counts an unreadable answer as not right; model errors leave every denominator. A chain
(one style's 5 questions of a story) is jointly right at order k when its orders 0..k are all right;
a chain asked at k without all of 0..k scored has no value there: it is counted, never guessed.
Intervals resample whole stories. The soft checks fail only beyond `max_gap` with 95% confidence.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from pytest_tom.derived import Derived, Judgement, Rule
from pytest_tom.evals.hitom.data import HiToMSample
from pytest_tom.framework.metric import Metric
from pytest_tom.record import Outcome, Record
from pytest_tom.stats import estimate_rate, wilson

INVARIANTS, DECLINE, DECEPTION = "joint_invariants", "order_decline", "deception_gap"
CELLS = "Figures: length x order per deception x style"
MARGINS = "Margins: order, length, deception, style"


def chains(records: Sequence[Record]) -> dict[str, dict[int, Record]]:
    """Records by chain (`<style>/<story>`) and order."""
    out: dict[str, dict[int, Record]] = defaultdict(dict)
    for r in records:
        out[r.facets["chain"]][int(r.facets["order"])] = r
    return out


def joint(records: Sequence[Record], k: int) -> tuple[list[tuple[bool, str]], int]:
    """(jointly right, story) of each chain asked at order k with 0..k all scored, and how many chains lack one."""
    judged, left = [], 0
    for c in chains(records).values():
        rows = [c[o] for o in range(k + 1) if o in c and c[o].scored]
        if k in c and len(rows) == k + 1:
            judged.append((all(r.passed for r in rows), c[k].facets["story"]))
        left += k in c and len(rows) < k + 1
    return judged, left


def _rate(key: tuple[str, ...], label: str, table: str, units: Sequence[tuple[bool, str]]) -> Metric:
    est = estimate_rate([float(v) for v, _ in units], [s for _, s in units])
    return Metric(key, est.point, label, "rate", table, (est.low, est.high), len(units), "story")


def _items(records: Iterable[Record]) -> list[tuple[bool, str]]:
    return [(r.passed, r.facets["story"]) for r in records if r.scored]


def slice_metrics(prefix: tuple[str, ...], name: str, table: str, records: Sequence[Record]) -> list[Metric]:
    """Standard accuracy of `records`, then each order's standard and joint accuracy (and chains left out)."""
    out = [_rate((*prefix, "accuracy"), f"{name} accuracy", table, _items(records))] if _items(records) else []
    for k in range(5):
        mine, (judged, left) = _items(r for r in records if r.facets["order"] == str(k)), joint(records, k)
        key, what = (*prefix, "order", str(k)), f"{name} order {k}"
        out += [_rate((*key, "accuracy"), f"{what} accuracy", table, mine)] if mine else []
        out += [_rate((*key, "joint"), f"{what} joint accuracy", table, judged)] if judged else []
        out += [Metric((*key, "joint_left_out"), left, f"{what}: chains lacking one of orders 0..{k}", "count",
                       table)] if left else []
    return out


def aggregate(records: Sequence[Record], gold: str) -> list[Metric]:
    """Every Hi-ToM metric of one suite's records; `gold` (the setting) says which answer key scored them."""
    scored = [r for r in records if r.scored]
    out = [Metric(("gold",), gold, "gold key (MC and CoT data files disagree on 138 questions)", "text", MARGINS),
           Metric(("n",), len(scored), "items scored", "count", MARGINS),
           Metric(("unparseable",), sum(r.outcome is Outcome.UNPARSEABLE for r in scored),
                  "answers with no '<L>. <container>' first line (not correct)", "count", MARGINS),
           *slice_metrics(("overall",), "all", MARGINS, records)]
    for facet in ("deception", "style", "length"):
        for value in sorted({r.facets[facet] for r in records}):
            out += slice_metrics((facet, value), f"{facet} {value}", MARGINS,
                                 [r for r in records if r.facets[facet] == value])
    cells: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for r in records:
        cells[(r.facets["deception"], r.facets["style"], r.facets["length"])].append(r)
    for (tell, style, length), mine in sorted(cells.items()):
        out += slice_metrics(("cells", tell, style, f"length_{length}"), f"{tell} {style} length {length}", CELLS, mine)
    return out


def gap(a: Sequence[Record], b: Sequence[Record], *, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """acc(a) - acc(b) and its 95% interval: Newcombe's, widened to a bootstrap's over whole stories."""
    import numpy as np

    pa, pb = sum(r.passed for r in a) / len(a), sum(r.passed for r in b) / len(b)
    (la, ua), (lb, ub) = wilson(pa, len(a)), wilson(pb, len(b))
    low, high = pa - pb - ((pa - la) ** 2 + (ub - pb) ** 2) ** 0.5, pa - pb + ((ua - pa) ** 2 + (pb - lb) ** 2) ** 0.5
    code = {s: i for i, s in enumerate(sorted({r.facets["story"] for r in (*a, *b)}))}
    sums = np.zeros((4, len(code)))
    for group, row in ((a, 0), (b, 2)):
        for r in group:
            sums[row:row + 2, code[r.facets["story"]]] += (r.passed, 1)
    tot = np.random.default_rng(seed).multinomial(len(code), np.full(len(code), 1 / len(code)), resamples) @ sums.T
    ok = (tot[:, 1] > 0) & (tot[:, 3] > 0)
    if len(code) > 1 and ok.any():
        diffs = tot[ok, 0] / tot[ok, 1] - tot[ok, 2] / tot[ok, 3]
        low, high = min(low, float(np.percentile(diffs, 2.5))), max(high, float(np.percentile(diffs, 97.5)))
    return pa - pb, max(-1.0, low), min(1.0, high)


def checks(samples: Sequence[HiToMSample], max_gap: float) -> list[Derived]:
    """The checks the loaded samples support: one invariants check per cell; each gap check needs both its groups."""
    cells: dict[tuple[str, str, str], list[HiToMSample]] = defaultdict(list)
    for s in samples:
        cells[(s.facets["deception"], s.facets["style"], s.facets["length"])].append(s)
    out = [Derived("hitom", f"{t}-{st}-length_{n}", INVARIANTS, tuple(s.id for s in mine),
                   ("hitom", INVARIANTS, f"length{n}", st, *(("deception",) if t == "tell" else ())),
                   {"deception": t, "style": st, "length": n}, {"chains": len({s.facets["chain"] for s in mine})})
           for (t, st, n), mine in sorted(cells.items())]
    ends, high = [s for s in samples if s.extra.order in (0, 4)], [s for s in samples if s.extra.order > 0]
    if {s.extra.order for s in ends} == {0, 4}:
        out.append(Derived("hitom", "order_4_vs_0", DECLINE, tuple(s.id for s in ends), ("hitom", DECLINE),
                           params={"max_gap": max_gap}))
    if {s.facets["deception"] for s in high} == {"tell", "no_tell"}:
        out.append(Derived("hitom", "orders_1_4", DECEPTION, tuple(s.id for s in high), ("hitom", DECEPTION),
                           params={"max_gap": max_gap}))
    return out


def invariants_rule(derived: Derived, members: Sequence[Record]) -> Judgement:
    by = chains(members)
    correct = [sum(c[k].passed for c in by.values() if k in c) for k in range(5)]
    jc = [sum(v for v, _ in joint(members, k)[0]) for k in range(5)]
    wrong = [f"chain {n} mixes deception, style or length" for n, c in by.items()
             if len({(r.facets["deception"], r.facets["style"], r.facets["length"]) for r in c.values()}) > 1]
    wrong += [f"joint(0) = {jc[0]} but correct(0) = {correct[0]}"] * (jc[0] != correct[0])
    wrong += [f"joint({k}) = {jc[k]} > correct({k}) = {correct[k]}" for k in range(1, 5) if jc[k] > correct[k]]
    wrong += [f"joint({k}) = {jc[k]} > joint({k - 1}) = {jc[k - 1]}" for k in range(1, 5) if jc[k] > jc[k - 1]]
    wrong += [f"{len(by)} chains, expected {derived.params['chains']}"] * (len(by) != derived.params["chains"])
    details = {"correct": correct, "joint_correct": jc, "chains": len(by)}
    return Judgement(not wrong, f"Hi-ToM joint accuracy invariants broken in {derived.id} (a harness bug): "
                     + "; ".join(wrong) if wrong else "", jc[4] / len(by) if by else None, details=details)


def _gap_rule(derived: Derived, a: Sequence[Record], b: Sequence[Record], what: str, above: bool) -> Judgement:
    tol = float(derived.params.get("max_gap", 0.05))
    d, low, high = gap(a, b)
    details = {"gap": d, "ci95": [low, high], "n": [len(a), len(b)], "max_gap": tol}
    if low > tol if above else high < -tol:
        return Judgement(False, f"Hi-ToM {derived.kind}: {what} is {100 * d:+.1f} points (95% interval "
                         f"[{100 * low:+.1f}, {100 * high:+.1f}], {len(a)} vs {len(b)} items), beyond the tolerance "
                         f"of {100 * tol:.1f} points", d, details=details)
    return Judgement(True, value=d, details=details)


def decline_rule(derived: Derived, members: Sequence[Record]) -> Judgement:
    """Fails when order-4 accuracy is above order-0 accuracy beyond max_gap, interval and all."""
    by = {k: [r for r in members if r.facets["order"] == k] for k in "04"}
    return _gap_rule(derived, by["4"], by["0"], "order-4 minus order-0 accuracy", True)


def deception_rule(derived: Derived, members: Sequence[Record]) -> Judgement:
    """Fails when Tell (deception) accuracy is above No_Tell accuracy at orders 1-4 beyond max_gap."""
    by = {t: [r for r in members if r.facets["deception"] == t] for t in ("no_tell", "tell")}
    return _gap_rule(derived, by["no_tell"], by["tell"], "No_Tell minus Tell accuracy", False)


RULES: dict[str, Rule] = {INVARIANTS: invariants_rule, DECLINE: decline_rule, DECEPTION: deception_rule}
