"""The paper's SimpleToM metrics over typed records, with the spec's arithmetic self-checks, and summary lines.

Accuracy per question type (unparseable answers count as wrong, as the paper counts them;
errors are not answers), the paper's average (the unweighted mean of the three; mental-state
questions are asked without the intervention in every intervention run, so under an
intervention this is the paper's average with the baseline MS accuracy), and the chain
analysis over stories whose three questions were all answered: the first-failure buckets
(spec 5 A), P(behavior | MS), P(judgment | MS and behavior), the reverse inconsistency and the
behavior x judgment table (5 B), per scenario and per severity too. The bounds of spec 5 C
hold for any correct computation; they are checked on every call and a violation is reported
loudly in the summary, never dropped. Letter balance (5 K) and the always-same-answer rate
show a position-biased answerer, since the release's gold content never varies.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.evals.simpletom.data import QUESTION_TYPES, SCENARIOS, TYPE_NAMES
from pytest_tom.evals.simpletom.derived import BUCKETS, MIN_BALANCE_ANSWERS, SAME_LETTER_THRESHOLD, bucket, letter_counts
from pytest_tom.metrics import mean, tally
from pytest_tom.record import Outcome, Record


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _types(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    by_type: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_type[r.facets.get("question_type", "")].append(r)
    return {t: tally(by_type[t]).to_dict() for t in QUESTION_TYPES if by_type.get(t)}


def _complete(records: Sequence[Record]) -> dict[str, dict[str, Record]]:
    """Stories whose three questions were all answered (no errors), by story id."""
    by_story: dict[str, dict[str, Record]] = defaultdict(dict)
    for r in records:
        by_story[r.facets.get("story", "")][r.facets.get("question_type", "")] = r
    return {
        sid: qs for sid, qs in by_story.items()
        if sid and all(t in qs and qs[t].outcome is not Outcome.ERROR for t in QUESTION_TYPES)
    }


def chain_stats(stories: Mapping[str, Mapping[str, Record]]) -> dict[str, Any]:
    """Counts and rates of the chain analysis over complete stories (spec 5 A and B)."""
    n = len(stories)
    c: dict[str, int] = dict.fromkeys(("mental_state", "behavior", "judgment", "ms_behavior", "b1j1", "b1j0", "b0j1", "b0j0"), 0)
    buckets = dict.fromkeys(BUCKETS, 0)
    for qs in stories.values():
        ms, b, j = (qs[t].outcome is Outcome.CORRECT for t in QUESTION_TYPES)
        c["mental_state"] += ms
        c["behavior"] += b
        c["judgment"] += j
        c["ms_behavior"] += ms and b
        c[f"b{int(b)}j{int(j)}"] += 1
        buckets[bucket(ms, b, j)] += 1
    ms_judged = c["ms_behavior"]
    return {
        "stories": n,
        "counts": c,
        "buckets": buckets,
        "bucket_rates": {k: _rate(v, n) for k, v in buckets.items()},
        "accuracy": {t: _rate(c[t], n) for t in QUESTION_TYPES},
        "p_behavior_given_ms": _rate(c["ms_behavior"], c["mental_state"]),
        "p_judgment_given_ms_behavior": _rate(buckets["all_correct"], ms_judged),
        "inconsistency_rate": _rate(buckets["fail_behavior"] + buckets["fail_judgment"], n),
        "reverse_inconsistency_rate": _rate(c["b0j1"], n),
        "behavior_x_judgment": {k: c[k] for k in ("b1j1", "b1j0", "b0j1", "b0j0")},
    }


def self_checks(stats: Mapping[str, Any]) -> list[str]:
    """The arithmetic bounds of spec 5 C (and bucket and table totals), in exact integer counts: the violations."""
    n, c, b = stats["stories"], stats["counts"], stats["buckets"]
    checks = [
        (sum(b.values()) == n, f"the four first-failure buckets sum to {sum(b.values())}, not the {n} stories"),
        (sum(stats["behavior_x_judgment"].values()) == n, "the behavior x judgment table does not sum to the stories"),
        (b["fail_behavior"] * 1 >= c["mental_state"] - c["behavior"],
         f"P(fail_behavior) = {b['fail_behavior']}/{n} < Acc_MS - Acc_B = ({c['mental_state']} - {c['behavior']})/{n}"),
        (b["all_correct"] <= min(c["mental_state"], c["behavior"], c["judgment"]),
         f"P(all_correct) = {b['all_correct']}/{n} > min(Acc_MS, Acc_B, Acc_J) = "
         f"{min(c['mental_state'], c['behavior'], c['judgment'])}/{n}"),
        (c["ms_behavior"] >= c["mental_state"] + c["behavior"] - n,
         f"P(ms and behavior) = {c['ms_behavior']}/{n} < Acc_MS + Acc_B - 1 = ({c['mental_state']} + {c['behavior']} - {n})/{n}"),
        (b["fail_behavior"] + c["ms_behavior"] == c["mental_state"], "fail_behavior + (MS and behavior right) != MS right"),
    ]
    return [why for ok, why in checks if not ok]


def balance(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """Per question type: answer and gold letters, the always-same-answer share, and accuracy by gold letter (5 K)."""
    out: dict[str, dict[str, Any]] = {}
    for t in QUESTION_TYPES:
        rs = [r for r in records if r.facets.get("question_type") == t and r.outcome is not Outcome.ERROR]
        if not rs:
            continue
        answers, golds = letter_counts(rs)
        letters = [(v, k) for k, v in answers.items() if k != "unparseable"]
        count, top = max(letters) if letters else (0, "")
        share = count / len(rs)
        gold_share = golds.get(top, 0) / len(rs)
        by_gold = {g: tally(r for r in rs if r.gold == g).accuracy for g in sorted(golds)}
        out[t] = {
            "n": len(rs), "answers": dict(sorted(answers.items())), "golds": dict(sorted(golds.items())),
            "top_letter": top, "same_answer_rate": share, "gold_share_of_top": gold_share,
            "constant": len(rs) >= MIN_BALANCE_ANSWERS and share >= SAME_LETTER_THRESHOLD
                        and gold_share < SAME_LETTER_THRESHOLD,
            "accuracy_by_gold": by_gold,
        }
    return out


def _group(records: Sequence[Record], facet: str, order: Sequence[str]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        groups[r.facets.get(facet, "")].append(r)
    keys = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
    out = {}
    for k in keys:
        stats = chain_stats(_complete(groups[k]))
        out[k] = {"types": _types(groups[k]), "chains": {key: stats[key] for key in (
            "stories", "buckets", "bucket_rates", "p_behavior_given_ms", "p_judgment_given_ms_behavior",
            "reverse_inconsistency_rate")}}
    return out


def aggregate(records: Sequence[Record], intervention: str = "none") -> dict[str, Any]:
    """Every SimpleToM metric of one suite's records (JSON-serialisable); `intervention` labels the run."""
    types = _types(records)
    accs = {t: v["accuracy"] for t, v in types.items()}
    average = mean(a for a in accs.values() if a is not None) if len(types) == len(QUESTION_TYPES) else None
    stats = chain_stats(_complete(records))
    violations = self_checks(stats)
    ms = accs.get("mental_state")
    return {
        "intervention": intervention,
        "n": sum(v["n"] for v in types.values()),
        "types": types,
        "average": average,
        "gaps": {t: (ms - a) if ms is not None and a is not None else None
                 for t, a in accs.items() if t != "mental_state"},
        "chains": stats,
        "scenarios": _group(records, "scenario", list(SCENARIOS)),
        "severities": _group(records, "severity", ["sev1", "sev2", "sev3"]),
        "balance": balance(records),
        "self_check_violations": violations,
    }


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"


def metric_lines(m: Mapping[str, Any]) -> list[str]:
    """Terminal summary lines, each saying how its numbers are computed."""
    if not m.get("types"):
        return []
    lines = []
    cells = []
    for t, v in m["types"].items():
        lo, hi = v["ci95"]
        cells.append(f"{TYPE_NAMES[t]} {_pct(v['accuracy'])} [{_pct(lo)}, {_pct(hi)}] (n={v['n']}"
                     + (f", {v['unparseable']} unparseable" if v["unparseable"] else "") + ")")
    lines.append(f"simpletom (intervention {m['intervention']}): " + " | ".join(cells)
                 + " (% of the type's questions right, Wilson 95% interval; unparseable counts as wrong)")
    if m["average"] is not None:
        lines.append(f"  average {_pct(m['average'])} (the paper's: unweighted mean of the three type accuracies; "
                     "mental-state questions are asked without any intervention, so under one this uses the "
                     "baseline MS accuracy)")
    c = m["chains"]
    if c["stories"]:
        r = c["bucket_rates"]
        lines.append(
            f"  chains ({c['stories']} stories with all three answered; first broken link, % of stories): all correct "
            f"{_pct(r['all_correct'])} | fail_ms {_pct(r['fail_ms'])} | fail_behavior {_pct(r['fail_behavior'])} | "
            f"fail_judgment {_pct(r['fail_judgment'])}")
        n_ms, n_msb = c["counts"]["mental_state"], c["counts"]["ms_behavior"]
        lines.append(
            f"  P(behavior right | MS right) {_pct(c['p_behavior_given_ms'])} (of {n_ms} stories) | "
            f"P(judgment right | MS and behavior right) {_pct(c['p_judgment_given_ms_behavior'])} (of {n_msb}) | "
            f"reverse inconsistency P(behavior wrong, judgment right) {_pct(c['reverse_inconsistency_rate'])} "
            "(% of stories)")
        t = c["behavior_x_judgment"]
        lines.append(f"  behavior x judgment (stories): B right/J right {t['b1j1']}, B right/J wrong {t['b1j0']}, "
                     f"B wrong/J right {t['b0j1']}, B wrong/J wrong {t['b0j0']}")
    bal = []
    for t, v in m["balance"].items():
        answers = ", ".join(f"{k} {_pct(n / v['n'])}" for k, n in v["answers"].items())
        golds = ", ".join(f"{k} {_pct(n / v['n'])}" for k, n in v["golds"].items())
        flag = f" ALWAYS {v['top_letter']!r}: constant answerer?" if v["constant"] else ""
        bal.append(f"{TYPE_NAMES[t]} answers {answers} vs gold {golds}{flag}")
    if bal:
        lines.append("  letter balance (% of the type's answers per letter; the gold content never varies): "
                     + " | ".join(bal))
    for title, key in (("scenario", "scenarios"), ("severity", "severities")):
        rows = []
        for name, g in m[key].items():
            accs = "/".join(_pct(g["types"][t]["accuracy"]) if t in g["types"] else "-" for t in QUESTION_TYPES)
            rows.append(f"{name} {accs} ({_pct(g['chains']['bucket_rates'].get('all_correct'))})")
        if len(rows) > 1:
            lines.append(f"  by {title} (MS/behavior/judgment % right (% of chains all correct)): " + ", ".join(rows))
    for why in m["self_check_violations"]:
        lines.append(f"  !!! SELF-CHECK FAILED (spec 5 C; a bug in the records or the metrics, not the model): {why}")
    return lines
