"""ToMATO metrics and checks on the fixture: replayed answers give the numbers computed here by hand."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pytest_tom.derived import evaluate
from pytest_tom.evals.tomato import ToMATO
from pytest_tom.evals.tomato.derived import FB_GAP, PERSONALITY
from pytest_tom.evals.tomato.metrics import SHOW, aggregate
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.gaps import gap_interval
from pytest_tom.framework.metric import from_tree
from pytest_tom.gates.metrics import gate_metrics
from pytest_tom.output.render import terminal_lines, to_json
from pytest_tom.record import Outcome, Record, Verdict
from pytest_tom.request import Response

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"

# Per conversation, questions u_id 0..3: 0 and 2 first order, 1 and 3 second order (1 is false belief everywhere,
# 3 only for belief). c = right, w = wrong, g = no [A]-[D] in the answer.
TABLE = {"belief": "cwcg", "intention": "cwwc", "desire": "cccc", "emotion": "wwcc", "knowledge": "cgcw"}


def answer(s: Any, what: str) -> str:
    wrong = "ABCD"[("ABCD".index(s.gold) + 1) % 4]
    return {"c": f"The answer is [{s.gold}].", "w": f"[{wrong}]", "g": "I am not sure."}[what]


def run(bench: ToMATO, samples: list[Any], plan: list[dict[str, str]]) -> list[Record]:
    """Drive every sample's program with run k answering from plan[k]."""
    out = []
    for s in samples:
        prog = bench.program(s)
        reqs = next(prog)
        texts = [answer(s, plan[k][s.extra.mental_state][int(s.extra.u_id)]) for k in range(len(reqs))]
        with pytest.raises(StopIteration) as stop:
            prog.send([Response(text=t) for t in texts])
        out.append(stop.value.value)
    return out


def suite(**settings: Any) -> tuple[ToMATO, list[Any]]:
    bench = ToMATO({"partial": True, **settings})
    return bench, bench.load(DataSource(FIXTURES, False, FIXTURES / "none"))


def approx(x: float) -> Any:
    return pytest.approx(x, abs=1e-12)


def test_one_run_reproduces_the_hand_computed_tables() -> None:
    bench, samples = suite()
    m = to_json(bench.metrics(run(bench, samples, [TABLE])))
    assert m["runs"] == 1 and m["n"] == 20 and m["errors"] == 0
    # ALL: 12 of the 20 questions (first 8 of 10, second 4 of 10); the 6 FB questions are among the second 10
    assert (m["all"]["correct"], m["all"]["accuracy"], m["all"]["unparseable"]) == (12, approx(0.6), 2)
    o = m["orders"]
    assert {g: (c["n"], c["correct"]) for g, c in o.items()} == {
        "first": (10, 8), "second": (10, 4), "fb": (6, 1), "second_non_fb": (4, 3)}
    assert o["fb"]["accuracy"] == approx(1 / 6) and m["all"]["std"] == 0.0
    cells = {st: tuple(c[g]["accuracy"] for g in ("first", "second", "fb")) for st, c in m["cells"].items()}
    assert cells == {"belief": (1.0, 0.0, 0.0), "intention": (0.5, 0.5, 0.0), "desire": (1.0, 1.0, 1.0),
                     "emotion": (0.5, 0.5, 0.0), "knowledge": (1.0, 0.0, 0.0)}
    assert {g: v["accuracy"] for g, v in m["macro"].items()} == {
        "first": approx((1 + 0.5 + 1 + 0.5 + 1) / 5), "second": approx((0 + 0.5 + 1 + 0.5 + 0) / 5),
        "fb": approx(1 / 5)}
    assert m["fb_gap"] == approx(3 / 4 - 1 / 6)
    # Neuroticism: first-order speakers N high in desire, knowledge (4/4 right); low in belief, intention, emotion
    # (4/6). Second-order speakers N high in belief, desire (2/4); low in intention, emotion, knowledge (2/6).
    n = m["personality"]["neuroticism"]
    assert {lvl: {p: n[lvl][p]["accuracy"] for p in ("first", "second", "all")} for lvl in ("high", "low")} == {
        "high": {"first": 1.0, "second": 0.5, "all": approx(6 / 8)},
        "low": {"first": approx(4 / 6), "second": approx(2 / 6), "all": 0.5}}
    assert n["gap"] == {"all": approx(0.25), "first": approx(1 / 3), "second": approx(0.5 - 1 / 3)}
    # Openness: first high 5/6, low 3/4; second high 1/4, low 3/6; both 6 of 10 overall.
    op = m["personality"]["openness"]
    assert (op["high"]["first"]["accuracy"], op["low"]["first"]["accuracy"]) == (approx(5 / 6), approx(3 / 4))
    assert (op["high"]["second"]["accuracy"], op["low"]["second"]["accuracy"]) == (approx(1 / 4), approx(1 / 2))
    assert op["gap"]["all"] == approx(0.0)


def test_sampled_runs_give_mean_and_population_std() -> None:
    bench, samples = suite(runs="3", temperature="0.6", top_p="0.9")
    every = {st: "cccc" for st in TABLE}
    none = {st: "wwww" for st in TABLE}
    records = run(bench, samples, [TABLE, every, none])
    m = to_json(bench.metrics(records))
    assert m["runs"] == 3 and m["all"]["runs"] == [approx(0.6), 1.0, 0.0]
    assert m["all"]["accuracy"] == approx(1.6 / 3)
    assert m["all"]["std"] == approx(math.sqrt(114 / 675))  # deviations 1/15, 7/15, -8/15
    assert m["orders"]["fb"]["runs"] == [approx(1 / 6), 1.0, 0.0]
    assert m["macro"]["fb"]["runs"] == [approx(0.2), 1.0, 0.0]
    # an item's verdict is the majority of its runs; a question right in runs 1 and 2 passes
    verdicts = {r.sample_id: r.outcome for r in records}
    assert verdicts["1st-order-belief_K3Q7A_0"] is Outcome.CORRECT
    assert verdicts["2nd-order-belief-about-belief_K3Q7A_1"] is Outcome.INCORRECT  # [D], [C], [D]: gold C
    # unreadable, right, wrong: the readable votes tie, and the earlier run decides
    assert verdicts["2nd-order-belief-about-belief_K3Q7A_3"] is Outcome.CORRECT
    text = "\n".join(terminal_lines(bench.metrics(records)))
    assert "tomato (% right; mean±std over runs):" in text
    assert "asked with subset all, vanilla, system prompt system, generate, first extraction, T=0.6 top_p=0.9" in text
    assert "runs 3" in text and "counted once) 53.3±41.1 (n=20)" in text


def test_the_printed_metrics_name_how_each_number_is_computed() -> None:
    bench, samples = suite()
    text = "\n".join(terminal_lines(bench.metrics(run(bench, samples, [TABLE]))))
    assert "ALL (micro over every question; FB questions are second-order ones, counted once) 60.0 (n=20)" in text
    assert "tomato micro per order: first 80.0 (n=10) | second 40.0 (n=10) | fb 16.7 (n=6) | second_non_fb 75.0 (n=4)" in text
    assert "tomato macro (Table 10: unweighted mean over the mental states present): first 80.0 | second 40.0 | fb 20.0" in text
    assert "belief first 100.0 (n=" in text and "belief second 0.0 (n=" in text and "belief fb 0.0 (n=" in text
    assert "false-belief gap 2nd non-FB - FB (the paper's LLMs: +9.5 to +16.2) +58.3 pp" in text
    for cell in ("neuroticism high first 100.0", "neuroticism low first 66.7", "neuroticism high second 50.0",
                 "neuroticism low second 33.3", "neuroticism gap high - low +25.0 pp"):
        assert cell in text, cell
    assert "no readable [A]-[D] answer (counted as not correct) 2" in text
    assert terminal_lines(from_tree(aggregate([]), SHOW)) == ["  tomato (% right; mean±std over runs): runs 0"]


def test_errors_leave_every_denominator() -> None:
    bench, samples = suite()
    records = run(bench, samples, [TABLE])
    records[0] = Record(benchmark="tomato", sample_id=records[0].sample_id, outcome=Outcome.ERROR,
                        facets=records[0].facets, message="timeout")
    m = to_json(bench.metrics(records))
    assert m["n"] == 19 and m["errors"] == 1 and m["all"]["correct"] == 11
    assert m["cells"]["belief"]["first"]["n"] == 1


def test_derived_checks_and_their_gate_metrics() -> None:
    bench, samples = suite()
    derived = bench.derived(samples)
    assert [(d.kind, d.id, len(d.members)) for d in derived] == [
        (FB_GAP, "all", 10), (FB_GAP, "intention", 2), (FB_GAP, "desire", 2), (FB_GAP, "emotion", 2),
        (FB_GAP, "knowledge", 2), (PERSONALITY, "first_order", 10), (PERSONALITY, "second_order", 10)]
    assert all(set(d.marks) <= set(ToMATO.mark_docs) for d in derived)
    records = run(bench, samples, [TABLE])
    by_id = {r.sample_id: r for r in records}
    results = [evaluate(d, by_id, bench.rule(d.kind)) for d in derived]
    gap = results[0]
    # 3 of 4 non-FB right vs 1 of 6 FB: a large gap, but on ten questions its interval reaches below 5 points
    assert gap.value == approx(3 / 4 - 1 / 6) and gap.verdict is Verdict.PASSED
    low, high = gap.details["ci95"]
    assert low < 0.05 < gap.value < high
    pers = results[5]
    # first order, agreeableness: high in belief, desire, emotion, knowledge (7 of 8 right), low in intention (1 of 2)
    assert pers.details["largest"] == "agreeableness" and pers.value == approx(7 / 8 - 1 / 2)
    assert pers.verdict is Verdict.PASSED  # ten questions: no interval lies beyond 5 points
    gm = gate_metrics(records, results, facets=bench.gate_facets, cluster=bench.cluster)
    assert {FB_GAP, PERSONALITY, "neuroticism.high", "false_belief.true", "order.first"} <= set(gm)
    assert gm["false_belief.true"].rate() == approx(1 / 6)
    assert len(set(gm["accuracy"].clusters)) == 5  # questions of one conversation are one cluster


def _records(spec: list[tuple[str, str, int, int]]) -> list[Record]:
    """Synthetic records: (facet, value, right, total) blocks, 4 questions per conversation."""
    out = []
    for facet, value, right, total in spec:
        for i in range(total):
            out.append(Record(benchmark="tomato", sample_id=f"{facet}-{value}-{i}",
                              outcome=Outcome.CORRECT if i < right else Outcome.INCORRECT,
                              facets={facet: value, "order": "second", "conversation": f"{value}-{i // 4}"},
                              score=1.0 if i < right else 0.0))
    return out


def test_false_belief_gap_fails_beyond_the_tolerance_with_confidence() -> None:
    bench, _ = suite()
    rule = bench.rule(FB_GAP)
    from pytest_tom.derived import Derived

    recs = _records([("false_belief", "false", 300, 400), ("false_belief", "true", 200, 400)])
    d = Derived(benchmark="tomato", id="all", kind=FB_GAP, members=tuple(r.sample_id for r in recs),
                params={"max_gap": 0.05})
    j = rule(d, recs)
    assert not j.passed and j.value == approx(0.25)
    assert "right on +25.0 points more of the 400 non-false-belief questions than of the 400 false-belief" in j.message
    assert "over 200 conversations" in j.message
    close = _records([("false_belief", "false", 210, 400), ("false_belief", "true", 200, 400)])
    assert rule(Derived(benchmark="tomato", id="all", kind=FB_GAP, members=(), params={"max_gap": 0.05}), close).passed


def test_personality_rule_names_each_factor_beyond_the_tolerance() -> None:
    bench, _ = suite()
    from pytest_tom.derived import Derived

    recs = _records([("neuroticism", "high", 100, 400), ("neuroticism", "low", 300, 400)])
    d = Derived(benchmark="tomato", id="second_order", kind=PERSONALITY, members=(), facets={"order": "second"},
                params={"max_gap": 0.05, "factors": ["neuroticism", "openness"]})
    j = bench.rule(PERSONALITY)(d, recs)
    assert not j.passed and j.value == approx(0.5) and j.details["largest"] == "neuroticism"
    assert "neuroticism: high - low -50.0 points" in j.message and "openness" not in j.details["factors"]


def test_gap_interval_is_deterministic_and_at_least_newcombe() -> None:
    a, b = [1.0] * 8 + [0.0] * 2, [1.0] * 3 + [0.0] * 7
    ca, cb = [f"c{i // 2}" for i in range(10)], [f"c{i // 2}" for i in range(10)]
    g1, g2 = gap_interval(a, ca, b, cb), gap_interval(a, ca, b, cb)
    assert g1 == g2 and g1.point == approx(0.5) and g1.clusters == 5
    newcombe = gap_interval(a, [str(i) for i in range(10)], b, [f"x{i}" for i in range(10)], resamples=0)
    assert g1.low <= newcombe.low and g1.high >= newcombe.high
    # Wilson 8/10 = [0.4902, 0.9433], 3/10 = [0.1078, 0.6032]: 0.5 - sqrt(0.3098^2 + 0.3032^2), 0.5 + sqrt(...)
    assert newcombe.low == pytest.approx(0.0665, abs=1e-3) and newcombe.high == pytest.approx(0.7397, abs=1e-3)
    same = gap_interval([1.0] * 5, list("abcde"), [1.0] * 5, list("fghij"))
    assert same.point == 0.0 and same.low < 0 < same.high
