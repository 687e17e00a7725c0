"""MMToM-QA's accuracies as the paper's results table reports them (spec §3.8), its diagnostics (§5.2) and its check.

Accuracy per question type, per family (belief over 1.1-1.3, goal over 2.1-2.4) and over all questions: micro
averages, which equal the paper's macro ones on the whole release (equal n within a family). Unparseable answers are
not right and stay in every denominator, so the numbers are the official script's; model errors leave them.
Intervals resample whole episodes (the 134 videos a question's clip comes from).
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_tom.derived import Derived
from pytest_tom.evals.mmtomqa.data import TYPES, MMToMSample
from pytest_tom.framework.gaps import gap_rule, split_gap
from pytest_tom.framework.metric import Metric, clustered_rate
from pytest_tom.record import Record

TABLE = "Text-only results: accuracy per question type"
DIAGNOSTICS = "Answers read by the official first-character rule"
GAP = "true_false_belief_gap"


def _rate(key: tuple[str, ...], label: str, records: Sequence[Record]) -> list[Metric]:
    """The accuracy of `records` with an episode-clustered interval."""
    return clustered_rate(key, label, TABLE, [float(r.passed) for r in records], [r.facets["episode"] for r in records],
                          "episode")


def aggregate(records: Sequence[Record]) -> list[Metric]:
    """Every MMToM-QA metric of one suite's records."""
    scored = [r for r in records if r.scored]
    out: list[Metric] = []
    for qtype, (_, mark, _) in TYPES.items():
        out += _rate(("types", qtype.replace(".", "_"), "accuracy"), f"type {qtype} ({mark.replace('_', ' ')}) accuracy",
                     [r for r in scored if r.facets["type"] == qtype])
    for family in ("belief", "goal"):
        out += _rate((family, "accuracy"), f"{family} accuracy", [r for r in scored if r.facets["family"] == family])
    out += _rate(("all", "accuracy"), "all accuracy", scored)
    letters = [r.details.get("letter") for r in scored]
    out += [Metric(("n",), len(scored), "questions answered", "count", DIAGNOSTICS),
            Metric(("unparseable",), sum(r.parsed is None for r in scored),
                   "unreadable: the official first character is not a or b (scored not right)", "count", DIAGNOSTICS),
            Metric(("word_letter",), sum(bool(r.details.get("word_letter")) for r in scored),
                   "a or b read off the first letter of a word ('Based ...', 'Answer: b'), scored as that letter",
                   "count", DIAGNOSTICS)]
    out += [Metric(("letters", x), letters.count(x) / len(scored), f"share of answers read as {x}", "rate", DIAGNOSTICS,
                   n=len(scored)) for x in ("a", "b") if scored]
    if (g := split_gap(scored, "type", "1.1", "1.2", "episode")) is not None:
        out.append(Metric((GAP,), g.point, "type 1.1 minus type 1.2 accuracy (true- vs false-belief gap)", "points",
                          DIAGNOSTICS, (g.low, g.high), g.n_a + g.n_b, "episode"))
    return out


def checks(samples: Sequence[MMToMSample], max_gap: float) -> list[Derived]:
    """The true-versus-false-belief gap check (spec §5.2.1), when both types are loaded."""
    both = [s for s in samples if s.extra.qtype in ("1.1", "1.2")]
    return [Derived("mmtomqa", "types_1_1_vs_1_2", GAP, tuple(s.id for s in both), ("mmtomqa", GAP, "belief"),
                    params={"max_gap": max_gap})] if {s.extra.qtype for s in both} == {"1.1", "1.2"} else []


RULES = {GAP: gap_rule("type", "1.1", "1.2", "episode", lambda d, g, tol: (
    f"MMToM-QA {GAP}: type 1.1 (true belief) minus type 1.2 (false belief) accuracy is {100 * g.point:+.1f} points "
    f"(95% interval [{100 * g.low:+.1f}, {100 * g.high:+.1f}], {g.n_a} vs {g.n_b} items), beyond the tolerance of "
    f"{100 * tol:.1f} points: the model reports where the object is, not what the person thinks"))}
"""The gap fails only when its episode-clustered interval lies wholly above max_gap."""
