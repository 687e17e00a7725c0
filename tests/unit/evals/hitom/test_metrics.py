"""Hi-ToM's metrics and consistency checks against a hand computation on the fixture's 20 items.

The plan below answers each of the 4 chains (style x story) at orders 0-4: R right, W wrong,
U unreadable. Every expected number is counted by hand from it in the comments.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tom.derived import Derived, evaluate
from pytest_tom.evals.hitom import DECEPTION, DECLINE, INVARIANTS, HiToM, joint, score
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.metric import Metric
from pytest_tom.record import Outcome, Record, Verdict, index
from pytest_tom.stats import wilson

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
PLAN = {("no_tell", "cot"): "RRWRR", ("no_tell", "vanilla"): "RWRRR", ("tell", "cot"): "RRRRW",
        ("tell", "vanilla"): "URRRR"}


def records(plan: dict[tuple[str, str], str] = PLAN) -> tuple[HiToM, list, list[Record]]:
    bench = HiToM({"partial": True})
    samples = bench.load(DataSource(FIXTURES, False, FIXTURES))
    out = []
    for s in samples:
        what = plan[(s.facets["deception"], s.facets["style"])][s.extra.order]
        right = s.choice(s.gold_label)
        wrong = next(c for c in s.choices if c.label != s.gold_label)
        text = {"R": f"{right.label}. {right.text}", "W": f"{wrong.label}. {wrong.text}", "U": "Hmm."}[what]
        out.append(score(s, text, "cot"))
    return bench, samples, out


def values(metrics: list[Metric]) -> dict[str, object]:
    return {m.name: m.value for m in metrics}


def test_standard_and_joint_accuracy_equal_the_hand_counts() -> None:
    bench, _, recs = records()
    metrics = bench.metrics(recs)
    m = values(metrics)
    assert (m["gold"], m["n"], m["unparseable"]) == ("cot", 20, 1)
    assert m["overall.accuracy"] == 16 / 20  # 4 right in each chain
    # per order, down the four chains: 0: R R R U, 1: R W R R, 2: W R R R, 3: R R R R, 4: R R W R
    assert [m[f"overall.order.{k}.accuracy"] for k in range(5)] == [3 / 4, 3 / 4, 3 / 4, 1, 3 / 4]
    # chains jointly right up to k: no_tell cot to 1, no_tell vanilla to 0, tell cot to 3, tell vanilla never
    assert [m[f"overall.order.{k}.joint"] for k in range(5)] == [3 / 4, 2 / 4, 1 / 4, 1 / 4, 0]
    assert m["deception.tell.accuracy"] == m["deception.no_tell.accuracy"] == 8 / 10
    assert m["deception.tell.order.3.joint"] == 1 / 2 and m["deception.no_tell.order.1.joint"] == 1 / 2
    assert m["style.cot.order.1.joint"] == 1 and m["style.vanilla.order.0.accuracy"] == 1 / 2
    assert m["length.1.accuracy"] == 16 / 20
    assert m["cells.tell.vanilla.length_1.order.0.accuracy"] == 0  # the unreadable answer counts as not right
    assert m["cells.tell.cot.length_1.order.3.joint"] == 1 and m["cells.tell.cot.length_1.order.4.joint"] == 0
    assert not any(k.endswith("joint_left_out") for k in m)
    by = {x.name: x for x in metrics}
    acc = by["overall.accuracy"]
    assert (acc.unit, acc.n, acc.cluster, acc.table) == ("rate", 20, "story", "Margins: order, length, deception, style")
    assert acc.interval is not None and acc.interval[0] <= 0.8 <= acc.interval[1]
    assert by["overall.order.2.joint"].n == 4 and by["cells.tell.cot.length_1.accuracy"].table.startswith("Figures")
    assert len({x.key for x in metrics}) == len(metrics)
    leaves = {x.key for x in metrics}  # a key is never the prefix of another: the report nests them as objects
    assert not any(k[:i] in leaves for k in leaves for i in range(1, len(k)))


def test_chains_missing_a_lower_order_leave_the_joint_denominator_and_are_counted() -> None:
    bench, _, recs = records()
    gone = "No_Tell-CoT-length_1-sample_1-order_2"
    errored = next(r for r in recs if r.sample_id == "Tell-CoT-length_1-sample_1-order_0")
    kept = [r.replace(outcome=Outcome.ERROR) if r is errored else r for r in recs if r.sample_id != gone]
    m = values(bench.metrics(kept))
    # order 0: the errored tell cot item leaves; no_tell cot, no_tell vanilla right, tell vanilla unreadable
    assert m["overall.order.0.joint"] == 2 / 3 and m["overall.order.0.joint_left_out"] == 1
    # order 2: no_tell cot is not asked at 2 (no value, not counted), tell cot lacks a scored order 0 (left out);
    # no_tell vanilla (R W R) and tell vanilla (U R R) are judged, neither jointly right
    assert m["overall.order.2.joint"] == 0 and m["overall.order.2.joint_left_out"] == 1
    assert m["overall.order.3.joint"] == 0 and m["overall.order.3.joint_left_out"] == 2  # no_tell cot lacks 2
    assert m["n"] == 18 and m["overall.accuracy"] == 15 / 18  # the removed item was wrong, the errored one right
    only = [r for r in recs if r.facets["order"] == "3"]  # -m order3: no chain reaches order 3 whole
    assert joint(only, 3) == ([], 4) and joint(only, 2) == ([], 0)


def test_the_consistency_checks_pass_on_a_sound_run_and_say_why_they_fail() -> None:
    bench, samples, recs = records()
    checks = bench.derived(samples)
    assert [(d.kind, d.id) for d in checks] == [
        (INVARIANTS, "no_tell-cot-length_1"), (INVARIANTS, "no_tell-vanilla-length_1"),
        (INVARIANTS, "tell-cot-length_1"), (INVARIANTS, "tell-vanilla-length_1"),
        (DECLINE, "order_4_vs_0"), (DECEPTION, "orders_1_4")]
    assert checks[2].marks == ("hitom", INVARIANTS, "length1", "cot", "deception") and checks[2].params == {"chains": 1}
    ix = index(recs)
    judged = {d.id: evaluate(d, ix, bench.rule(d.kind)) for d in checks}
    assert all(j.verdict is Verdict.PASSED for j in judged.values())
    assert judged["tell-cot-length_1"].details == {"correct": [1, 1, 1, 1, 0], "joint_correct": [1, 1, 1, 1, 0],
                                                   "chains": 1}
    wrong = Derived("hitom", "x", INVARIANTS, checks[0].members, params={"chains": 2})
    assert "1 chains, expected 2" in evaluate(wrong, ix, bench.rule(INVARIANTS)).message
    # order 4 all right, order 0 all wrong: +100 points, beyond 5 with 95% confidence
    _, _, flipped = records({k: "WRRRR" for k in PLAN})
    failed = evaluate(checks[4], index(flipped), bench.rule(DECLINE))
    assert failed.verdict is Verdict.FAILED and "order-4 minus order-0 accuracy is +100.0 points" in failed.message
    # Tell right at orders 1-4, No_Tell wrong: Tell above No_Tell by 100 points
    _, _, told = records({("tell", "cot"): "RRRRR", ("tell", "vanilla"): "RRRRR", ("no_tell", "cot"): "RWWWW",
                          ("no_tell", "vanilla"): "RWWWW"})
    failed = evaluate(checks[5], index(told), bench.rule(DECEPTION))
    assert failed.verdict is Verdict.FAILED and "No_Tell minus Tell accuracy is -100.0 points" in failed.message
    assert evaluate(checks[5], index(told[:-1]), bench.rule(DECEPTION)).verdict is Verdict.SKIPPED


def test_the_gap_interval_is_newcombes_with_one_story() -> None:
    bench, _, recs = records({k: "WRRRR" for k in PLAN})
    story = [r for r in recs if r.facets["deception"] == "tell" and r.facets["order"] in ("0", "4")]
    (la, _), (_, ub) = wilson(1.0, 2), wilson(0.0, 2)
    judged = evaluate(Derived("hitom", "x", DECLINE, tuple(r.sample_id for r in story)), index(story), bench.rule(DECLINE))
    (low, high), d = judged.details["ci95"], judged.details["gap"]
    assert (d, high) == (1.0, 1.0) and low == pytest.approx(1 - ((1 - la) ** 2 + ub ** 2) ** 0.5)
