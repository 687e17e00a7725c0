"""SimpleToM metrics and derived rules: hand-computed chains, conditionals, balance and the spec 5 C self-checks."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_tom.derived import Derived
from pytest_tom.evals.simpletom import SimpleToM
from pytest_tom.evals.simpletom.derived import balance_rule, bucket, chain_rule
from pytest_tom.evals.simpletom.metrics import SHOW, aggregate, chain_stats, self_checks
from pytest_tom.framework.metric import from_tree
from pytest_tom.output.render import terminal_lines
from pytest_tom.record import Outcome, Record

TYPES = ("mental_state", "behavior", "judgment")
SUFFIX = {"mental_state": "ms", "behavior": "behavior", "judgment": "judgment"}


def rec(story: str, qtype: str, outcome: str, *, gold: str = "A", scenario: str = "food_item_in_grocery_store",
        severity: str = "sev1") -> Record:
    """A record whose answer is right (c), wrong (w), unreadable (g) or a model error (e)."""
    kind = {"c": Outcome.CORRECT, "w": Outcome.INCORRECT, "g": Outcome.UNPARSEABLE, "e": Outcome.ERROR}[outcome]
    parsed = gold if outcome == "c" else ("B" if gold == "A" else "A") if outcome == "w" else None
    return Record(benchmark="simpletom", sample_id=f"{story}-{SUFFIX[qtype]}", outcome=kind, parsed=parsed, gold=gold,
                  facets={"question_type": qtype, "scenario": scenario, "severity": severity, "story": story})


def story(sid: str, outcomes: str, **kw: Any) -> list[Record]:
    return [rec(sid, t, o, **kw) for t, o in zip(TYPES, outcomes, strict=True)]


def lines_of(m: dict[str, Any]) -> list[str]:
    return terminal_lines(from_tree(m, SHOW))


def approx(x: float) -> Any:
    return pytest.approx(x, abs=1e-12)


def test_buckets_name_the_first_broken_link() -> None:
    cases = [(False, True, True), (True, False, True), (True, True, False), (True, True, True), (False, False, False)]
    assert [bucket(*c) for c in cases] == [
        "fail_ms", "fail_behavior", "fail_judgment", "all_correct", "fail_ms"]


def test_hand_computed_metrics() -> None:
    records = [
        *story("s1", "ccc"), *story("s2", "cwc"), *story("s3", "cgw", severity="sev3"),
        *story("s4", "ccw", scenario="hidden_body_part_feature"), *story("s5", "wcc", gold="B"),
        *story("s6", "cec", severity="sev2"),  # a model error: not a complete story
    ]
    m = aggregate(records, "reminder")
    assert m["intervention"] == "reminder"
    t = m["types"]
    assert (t["mental_state"]["n"], t["mental_state"]["correct"]) == (6, 5)
    assert (t["behavior"]["n"], t["behavior"]["correct"], t["behavior"]["unparseable"], t["behavior"]["errors"]) == (5, 3, 1, 1)
    assert (t["judgment"]["n"], t["judgment"]["correct"]) == (6, 4)
    assert m["average"] == approx((5 / 6 + 3 / 5 + 4 / 6) / 3)
    c = m["chains"]
    assert c["stories"] == 5
    assert c["buckets"] == {"fail_ms": 1, "fail_behavior": 2, "fail_judgment": 1, "all_correct": 1}
    assert c["p_behavior_given_ms"] == approx(2 / 4)
    assert c["p_judgment_given_ms_behavior"] == approx(1 / 2)
    assert c["reverse_inconsistency_rate"] == approx(1 / 5)  # s2: behavior wrong, judgment right
    assert c["behavior_x_judgment"] == {"b1j1": 2, "b1j0": 1, "b0j1": 1, "b0j0": 1}
    assert m["self_check_violations"] == []
    assert list(m["severities"]) == ["sev1", "sev2", "sev3"]
    assert m["severities"]["sev2"]["chains"]["stories"] == 0
    assert list(m["scenarios"]) == ["food_item_in_grocery_store", "hidden_body_part_feature"]
    bal = m["balance"]["mental_state"]
    assert bal["answers"] == {"A": 6} and bal["same_answer_rate"] == 1.0
    assert not bal["constant"]  # too few answers (6 < 10) to call a model constant
    assert bal["accuracy_by_gold"] == {"A": 1.0, "B": 0.0}


def test_reverse_inconsistency_counts_wrong_behavior_with_right_judgment() -> None:
    c = chain_stats({s: {r.facets["question_type"]: r for r in story(s, o)}
                     for s, o in (("a", "cwc"), ("b", "wwc"), ("c", "ccw"), ("d", "cww"))})
    assert c["reverse_inconsistency_rate"] == approx(2 / 4)
    assert c["inconsistency_rate"] == approx(3 / 4)
    assert c["accuracy"] == {"mental_state": 0.75, "behavior": 0.25, "judgment": 0.5}


def test_the_spec_bounds_hold_and_a_violation_is_loud() -> None:
    records = [r for i, o in enumerate(("ccc", "cwc", "wcw", "ccw", "www")) for r in story(f"s{i}", o)]
    m = aggregate(records)
    assert m["self_check_violations"] == []
    broken = dict(m["chains"])
    broken["buckets"] = {**broken["buckets"], "fail_behavior": 0, "all_correct": 5}
    broken["counts"] = {**broken["counts"], "behavior": 1}
    found = self_checks(broken)
    assert any("P(fail_behavior)" in w for w in found) and any("P(all_correct)" in w for w in found)
    assert any("buckets sum to" in w for w in found)
    text = "\n".join(lines_of({**m, "self_check_violations": found}))
    assert "!!! simpletom:" in text and "SELF-CHECK FAILED (spec 5 C" in text and all(w in text for w in found)
    assert "SELF-CHECK" not in "\n".join(lines_of(m))


def test_the_printed_metrics_say_how_they_are_computed() -> None:
    records = [r for i, o in enumerate(("ccc", "cwc", "wcw", "ccw")) for r in story(f"s{i}", o)]
    text = "\n".join(lines_of(aggregate(records)))
    assert "simpletom (% of the type's questions right, Wilson 95% interval; unparseable counts as wrong)" in text
    assert "mental_state 75.0 [" in text
    assert "average (the paper's: unweighted mean of the three; under an intervention with the baseline MS) 66.7" in text
    assert "simpletom chains (stories with all three answered; first broken link and conditionals, % of stories): stories 4" \
        in text
    for cell in ("fail_ms 25.0", "fail_behavior 25.0", "fail_judgment 25.0", "all_correct 25.0", "MS right 3",
                 "P(behavior right | MS right) 66.7"):
        assert cell in text, cell


def test_balance_flags_an_always_same_letter_answerer() -> None:
    records = [rec(f"s{i}", "behavior", "c" if i % 2 == 0 else "w", gold="A" if i % 2 == 0 else "B") for i in range(20)]
    # every answer is "A": right when the gold is A, wrong when it is B
    m = aggregate(records)
    assert m["balance"]["behavior"]["same_answer_rate"] == 1.0 and m["balance"]["behavior"]["constant"]
    text = "\n".join(lines_of(m))
    assert "behavior most answered A" in text and "behavior constant answerer True" in text
    d = Derived("simpletom", "behavior", "letter_balance", tuple(r.sample_id for r in records),
                facets={"question_type": "behavior"}, params={"threshold": 0.95})
    j = balance_rule(d, records)
    assert not j.passed and j.value == 1.0
    assert "'A' on 20 of 20 (100.0%, threshold 95%) while the gold is 'A' on 10 (50.0%)" in j.message
    assert "golds:   A 10 (50.0%) / B 10 (50.0%)" in j.message
    # a model that is right everywhere answers with the gold's balance: it passes
    right = [rec(f"s{i}", "behavior", "c", gold="A" if i % 2 == 0 else "B") for i in range(20)]
    assert balance_rule(d, right).passed
    # golds that are themselves all one letter cannot tell a constant answerer apart: it passes
    same = [rec(f"s{i}", "behavior", "c", gold="A") for i in range(20)]
    assert balance_rule(d, same).passed


def test_the_chain_rule_message_names_the_first_broken_link_and_the_three_answers() -> None:
    d = Derived("simpletom", "s1", "chain", ("s1-ms", "s1-behavior", "s1-judgment"),
                facets={"scenario": "food_item_in_grocery_store", "severity": "sev2", "story": "s1"},
                params={"options": [["No", "Yes"], ["report the mold", "pay for the chips"], ["Reasonable", "Not reasonable"]]})
    members = [rec("s1", "mental_state", "c", gold="A"), rec("s1", "behavior", "w", gold="B"),
               rec("s1", "judgment", "g", gold="A")]
    j = chain_rule(d, members)
    assert not j.passed and j.details["bucket"] == "fail_behavior"
    assert j.message.splitlines() == [
        "SimpleToM chain s1 broken at fail_behavior: mental state (A) ok, behavior (A) WRONG (gold B), "
        "judgment unparseable WRONG (gold A)",
        "  the model inferred the mental state but did not apply it to predict the behavior "
        "(food_item_in_grocery_store, sev2)",
        '  mental state: ok    answered (A) "No", gold (A) "No"',
        '  behavior:     WRONG answered (A) "report the mold", gold (B) "pay for the chips"',
        '  judgment:     WRONG answered unparseable, gold (A) "Reasonable"',
    ]
    assert j.failed_members == ("s1-behavior", "s1-judgment")
    assert chain_rule(d, [rec("s1", t, "c") for t in TYPES]).passed


def test_the_benchmark_declares_its_gates_marks_and_clusters() -> None:
    b = SimpleToM()
    assert b.gate_facets == ("question_type", "scenario", "severity")
    assert b.strata == ("question_type", "scenario")
    assert b.cluster({"story": "s1"}, "s1-ms") == "s1" and b.cluster({}, "x") == "x"
    assert {"simpletom", "mental_state", "behavior", "judgment", "sev1", "sev2", "sev3", "chain", "letter_balance",
            "hidden_body_part_feature"} <= set(b.mark_docs)
    assert len(b.mark_docs) == 1 + 3 + 10 + 3 + 2
    assert set(b.rules) == {"chain", "letter_balance"}


def picked(sid: str, qtype: str, label: str, extra: str) -> Record:
    """A record that picked an extra option: offered, never the gold, so incorrect."""
    return Record(benchmark="simpletom", sample_id=f"{sid}-{SUFFIX[qtype]}", outcome=Outcome.INCORRECT, parsed=label,
                  gold="A", facets={"question_type": qtype, "scenario": "food_item_in_grocery_store", "severity": "sev1",
                                    "story": sid}, details={"extra_option": extra})


def test_extra_option_picks_are_wrong_and_counted_in_na_frac_as_upstreams_basic_stats() -> None:
    # behavior: s1 right, s2 unreadable, s3 picked either (C), s4 picked neither (D), s5 a model error
    records = [*story("s1", "ccc"), *story("s2", "cgc"), rec("s3", "mental_state", "c"),
               picked("s3", "behavior", "C", "either"), rec("s3", "judgment", "w"), rec("s4", "mental_state", "c"),
               picked("s4", "behavior", "D", "neither"), picked("s4", "judgment", "C", "either"), *story("s5", "cec")]
    m = aggregate(records, "none", "none", ("either", "neither"))
    b = m["types"]["behavior"]
    assert (b["n"], b["correct"], b["unparseable"], b["errors"]) == (4, 1, 1, 1)
    assert (b["picked_either"], b["picked_neither"]) == (1, 1)
    assert b["na_frac"] == approx(3 / 4)  # (unparseable + C + D) / answered
    j = m["types"]["judgment"]
    assert (j["picked_either"], j["picked_neither"], j["na_frac"]) == (1, 0, approx(1 / 5))
    assert m["types"]["mental_state"]["na_frac"] == 0.0
    assert m["chains"]["buckets"]["fail_behavior"] == 3  # a pick breaks the chain like any wrong answer
    assert m["balance"]["behavior"]["answers"] == {"A": 1, "C": 1, "D": 1, "unparseable": 1}
    text = "\n".join(lines_of(m))
    assert "behavior picked_either 1" in text and "behavior picked_neither 1" in text
    assert "behavior na_frac (unparseable or an extra option, as upstream) 75.0" in text
    # only the options shown are counted
    assert set(aggregate(records, "none", "none", ("neither",))["types"]["behavior"]) >= {"picked_neither", "na_frac"}
    assert "picked_either" not in aggregate(records, "none", "none", ("neither",))["types"]["behavior"]


def test_without_extra_options_the_types_keep_their_keys() -> None:
    m = aggregate([*story("s1", "ccc"), *story("s2", "cgw")])
    assert set(m["types"]["behavior"]) == {"n", "correct", "accuracy", "ci95", "unparseable", "errors", "parse_rate"}
    assert "mental_state_asked_with" not in m  # only under cot
    assert "na_frac" not in "\n".join(lines_of(m)) and "picked" not in "\n".join(lines_of(m))


def test_the_average_says_when_the_mental_state_questions_took_cot() -> None:
    records = [r for i, o in enumerate(("ccc", "cwc", "wcw", "ccw")) for r in story(f"s{i}", o)]
    lines = {"cot": terminal_lines(SimpleToM({"intervention": "cot"}).metrics(records)),
             "direct": terminal_lines(SimpleToM({"intervention": "cot", "cot_mental_state": "false"}).metrics(records)),
             "cot_tom": terminal_lines(SimpleToM({"intervention": "cot_tom"}).metrics(records))}
    texts = {k: "\n".join(v) for k, v in lines.items()}
    assert ("average (unweighted mean of the three, all asked with CoT as the authors' released CoT run; the paper's "
            "averages use the baseline MS) 66.7") in texts["cot"]
    for key in ("direct", "cot_tom"):
        assert "average (the paper's: unweighted mean of the three; under an intervention with the baseline MS) 66.7" \
            in texts[key]
    trees = {k: {m.name: m.value for m in SimpleToM(s).metrics(records)} for k, s in (
        ("cot", {"intervention": "cot"}), ("direct", {"intervention": "cot", "cot_mental_state": "false"}))}
    assert trees["cot"]["mental_state_asked_with"] == "cot" and trees["direct"]["mental_state_asked_with"] == "none"


def test_the_extra_options_setting_is_recorded_in_one_spelling() -> None:
    assert SimpleToM({"extra_options": "neither,either"}).describe()["settings"]["extra_options"] == "either,neither"
    assert SimpleToM({"extra_options": ["neither"]}).describe()["settings"]["extra_options"] == "neither"
    assert SimpleToM().describe()["settings"]["extra_options"] == "none"
