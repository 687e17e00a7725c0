"""The paper's SimpleToM metrics: accuracy per type and their average, the chain analysis over complete stories
(spec 5 A, B; per scenario and severity too), letter balance (5 K), and 5 C's arithmetic self-checks, whose
violations are reported loudly, never dropped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.evals.simpletom import derived
from pytest_tom.evals.simpletom.data import QUESTION_TYPES, SCENARIOS
from pytest_tom.framework.metric import Show
from pytest_tom.metrics import group_by, mean, tally
from pytest_tom.record import Outcome, Record

_TYPES = "simpletom (% of the type's questions right, Wilson 95% interval; unparseable counts as wrong)"
_CHAINS = "simpletom chains (stories with all three answered; first broken link and conditionals, % of stories)"
_BALANCE = "simpletom letter balance (answers and gold per letter; the gold content never varies)"
SHOW = (
    Show(("intervention",), "intervention", _TYPES, "text"),
    Show(("types", "*", "accuracy"), "{0}", _TYPES),
    Show(("types", "*", "unparseable"), "{0} unparseable", _TYPES, "count"),
    Show(("types", "*", "picked_*"), "{0} {1}", _TYPES, "count"),  # picked_either / picked_neither: extra_options only
    Show(("types", "*", "na_frac"), "{0} na_frac (unparseable or an extra option, as upstream)", _TYPES),
    Show(("average",), "average (the paper's: unweighted mean of the three; under an intervention with the baseline MS)",
         _TYPES),
    Show(("chains", "stories"), "stories", _CHAINS, "count"),
    Show(("chains", "bucket_rates", "*"), "{0}", _CHAINS),
    Show(("chains", "counts", "mental_state"), "MS right", _CHAINS, "count"),
    Show(("chains", "p_behavior_given_ms"), "P(behavior right | MS right)", _CHAINS),
    Show(("chains", "counts", "ms_behavior"), "MS and behavior right", _CHAINS, "count"),
    Show(("chains", "p_judgment_given_ms_behavior"), "P(judgment right | MS and behavior right)", _CHAINS),
    Show(("chains", "reverse_inconsistency_rate"), "reverse inconsistency P(behavior wrong, judgment right)", _CHAINS),
    Show(("chains", "behavior_x_judgment", "*"), "{0}", "simpletom behavior x judgment (stories; b1j0: behavior right, "
         "judgment wrong)", "count"),
    Show(("balance", "*", "answers", "*"), "{0} answered {1}", _BALANCE, "count"),
    Show(("balance", "*", "golds", "*"), "{0} gold {1}", _BALANCE, "count"),
    Show(("balance", "*", "top_letter"), "{0} most answered", _BALANCE, "text"),
    Show(("balance", "*", "constant"), "{0} constant answerer", _BALANCE, "text"),
    Show(("scenarios", "*", "types", "*", "accuracy"), "{0} {1}", "simpletom by scenario (% right)"),
    Show(("scenarios", "*", "chains", "bucket_rates", "all_correct"), "{0} chains all correct",
         "simpletom by scenario (% right)"),
    Show(("severities", "*", "types", "*", "accuracy"), "{0} {1}", "simpletom by severity (% right)"),
    Show(("severities", "*", "chains", "bucket_rates", "all_correct"), "{0} chains all correct",
         "simpletom by severity (% right)"),
    Show(("self_check_violations",), "SELF-CHECK FAILED (spec 5 C; a bug in the records or the metrics, not the model)",
         "!!! simpletom", "list"),
)
"""What the terminal and Markdown print; the report keeps every number."""
SHOW_ALL_COT = tuple(Show(s.pattern, "average (unweighted mean of the three, all asked with CoT as the authors' released "
                          "CoT run; the paper's averages use the baseline MS)", s.table)
                     if s.pattern == ("average",) else s for s in SHOW)
"""SHOW when the mental-state questions were asked with CoT too (`cot_mental_state`): the average is not the paper's."""


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _types(records: Sequence[Record], extra_options: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Each type's tally; the `extra_options` shown add their picks and `na_frac` (absent otherwise: keys unchanged)."""
    by_type = group_by(records, "question_type")
    return {t: tally(by_type[t]).to_dict() | (_extra_picks(by_type[t], extra_options) if extra_options else {})
            for t in QUESTION_TYPES if by_type.get(t)}


def _complete(records: Sequence[Record]) -> dict[str, dict[str, Record]]:
    """Stories whose three questions were all answered (no errors), by story id."""
    by_story: dict[str, dict[str, Record]] = defaultdict(dict)
    for r in records:
        by_story[r.facets.get("story", "")][r.facets.get("question_type", "")] = r
    return {sid: qs for sid, qs in by_story.items()
            if sid and all(t in qs and qs[t].outcome is not Outcome.ERROR for t in QUESTION_TYPES)}


def chain_stats(stories: Mapping[str, Mapping[str, Record]]) -> dict[str, Any]:
    """Counts and rates of the chain analysis over complete stories (spec 5 A and B)."""
    n = len(stories)
    c: dict[str, int] = dict.fromkeys(("mental_state", "behavior", "judgment", "ms_behavior", "b1j1", "b1j0", "b0j1", "b0j0"), 0)
    buckets = dict.fromkeys(derived.BUCKETS, 0)
    for qs in stories.values():
        ms, b, j = (qs[t].outcome is Outcome.CORRECT for t in QUESTION_TYPES)
        for key, ok in (("mental_state", ms), ("behavior", b), ("judgment", j), ("ms_behavior", ms and b)):
            c[key] += ok
        c[f"b{int(b)}j{int(j)}"] += 1
        buckets[derived.bucket(ms, b, j)] += 1
    return {"stories": n, "counts": c, "buckets": buckets, "bucket_rates": {k: _rate(v, n) for k, v in buckets.items()},
            "accuracy": {t: _rate(c[t], n) for t in QUESTION_TYPES},
            "p_behavior_given_ms": _rate(c["ms_behavior"], c["mental_state"]),
            "p_judgment_given_ms_behavior": _rate(buckets["all_correct"], c["ms_behavior"]),
            "inconsistency_rate": _rate(buckets["fail_behavior"] + buckets["fail_judgment"], n),
            "reverse_inconsistency_rate": _rate(c["b0j1"], n),
            "behavior_x_judgment": {k: c[k] for k in ("b1j1", "b1j0", "b0j1", "b0j0")}}


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
        answers, golds = derived.letter_counts(rs)
        count, top = derived.top_letter(answers)
        share = count / len(rs)
        gold_share = golds.get(top, 0) / len(rs)
        by_gold = {g: tally(r for r in rs if r.gold == g).accuracy for g in sorted(golds)}
        out[t] = {"n": len(rs), "answers": dict(sorted(answers.items())), "golds": dict(sorted(golds.items())),
                  "top_letter": top, "same_answer_rate": share, "gold_share_of_top": gold_share,
                  "constant": len(rs) >= derived.MIN_BALANCE_ANSWERS and share >= derived.SAME_LETTER_THRESHOLD
                  and gold_share < derived.SAME_LETTER_THRESHOLD, "accuracy_by_gold": by_gold}
    return out


def _group(records: Sequence[Record], facet: str, order: Sequence[str]) -> dict[str, dict[str, Any]]:
    groups = group_by(records, facet)
    keys = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
    out = {}
    for k in keys:
        stats = chain_stats(_complete(groups[k]))
        out[k] = {"types": _types(groups[k]), "chains": {key: stats[key] for key in (
            "stories", "buckets", "bucket_rates", "p_behavior_given_ms", "p_judgment_given_ms_behavior",
            "reverse_inconsistency_rate")}}
    return out


def _extra_picks(records: Sequence[Record], extra_options: Sequence[str]) -> dict[str, Any]:
    """Per extra option, how often it was picked (always wrong), and upstream's `na_frac`: answers outside (A)/(B)."""
    answered = [r for r in records if r.outcome is not Outcome.ERROR]
    picks = {f"picked_{name}": sum(r.details.get("extra_option") == name for r in answered) for name in extra_options}
    outside = sum(picks.values()) + sum(r.outcome is Outcome.UNPARSEABLE for r in answered)
    return {**picks, "na_frac": _rate(outside, len(answered))}


def aggregate(records: Sequence[Record], intervention: str = "none", mental_state_asked_with: str | None = None,
              extra_options: Sequence[str] = ()) -> dict[str, Any]:
    """Every SimpleToM metric of one suite's records (JSON-serialisable); `intervention` labels the run.

    `mental_state_asked_with`, given under `cot` only, says whether its mental-state questions took CoT ("cot") or not
    ("none"); the `extra_options` shown add their picks and `na_frac` to each type. Both are absent otherwise, so the
    other conditions' reports keep their keys.
    """
    types = _types(records, extra_options)
    accs = {t: v["accuracy"] for t, v in types.items()}
    average = mean(a for a in accs.values() if a is not None) if len(types) == len(QUESTION_TYPES) else None
    stats = chain_stats(_complete(records))
    violations = self_checks(stats)
    ms = accs.get("mental_state")
    asked = {"mental_state_asked_with": mental_state_asked_with} if mental_state_asked_with else {}
    return {"intervention": intervention, **asked, "n": sum(v["n"] for v in types.values()), "types": types,
            "average": average,
            "gaps": {t: (ms - a) if ms is not None and a is not None else None for t, a in accs.items()
                     if t != "mental_state"},
            "chains": stats, "scenarios": _group(records, "scenario", list(SCENARIOS)),
            "severities": _group(records, "severity", ["sev1", "sev2", "sev3"]), "balance": balance(records),
            "self_check_violations": violations}
