"""Typed results through JSON, and aggregate assertions judged from their member records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_tom.derived import Derived, Judgement, all_pass, evaluate
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict, failure, index


def through_json(d: dict[str, Any]) -> dict[str, Any]:
    """What crosses pytest-xdist and the report file: plain JSON."""
    return json.loads(json.dumps(d))  # type: ignore[no-any-return]


def rec(qid: str, outcome: Outcome = Outcome.CORRECT, **kw: Any) -> Record:
    base: dict[str, Any] = {"parsed": "A", "gold": "A"}
    base.update(kw)
    return Record("toy", qid, outcome, {"task": "t"}, **base)


# -- records -------------------------------------------------------------------------------------------------------


def test_a_full_record_round_trips_through_json() -> None:
    full = Record(
        benchmark="toy", sample_id="en-1", outcome=Outcome.UNPARSEABLE, facets={"language": "en", "task": "fbt"},
        score=0.25, parsed=["Anna", "Ben"], gold=["Anna"], responses=("[[A]]", None), request_keys=("a" * 64, "b" * 64),
        parse_rate=0.5, details={"tries": [{"raw": "x", "votes": {"A": 2}}], "story_size": 3}, message="could not parse",
        suite="tests/test_toy.py::toy", nodeid="tests/test_toy.py::toy::toy[en-1]",
    )
    d = full.to_dict()
    assert d["qid"] == "en-1" and d["outcome"] == "unparseable" and "sample_id" not in d
    assert Record.from_dict(through_json(d)) == full


def test_a_minimal_record_round_trips_and_leaves_out_the_run_fields() -> None:
    minimal = Record("toy", "q", Outcome.CORRECT, {})
    d = minimal.to_dict()
    assert "suite" not in d and "nodeid" not in d
    assert d == {"benchmark": "toy", "qid": "q", "outcome": "correct", "facets": {}, "score": None, "parsed": None,
                 "gold": None, "responses": [], "request_keys": [], "parse_rate": 1.0, "details": {}, "message": ""}
    assert Record.from_dict(through_json(d)) == minimal


def test_from_dict_fills_defaults_and_types() -> None:
    r = Record.from_dict({"benchmark": "toy", "qid": 7, "outcome": "error", "facets": {"size": 3}})
    assert r.sample_id == "7" and r.outcome is Outcome.ERROR and r.facets == {"size": "3"}
    assert (r.responses, r.request_keys, r.parse_rate, r.details, r.message, r.suite, r.nodeid) == ((), (), 1.0, {}, "", "", "")
    with pytest.raises(ValueError):
        Record.from_dict({"benchmark": "toy", "qid": "q", "outcome": "maybe"})
    with pytest.raises(KeyError):
        Record.from_dict({"benchmark": "toy", "outcome": "correct"})


def test_record_properties_and_replace() -> None:
    assert rec("a").passed and rec("a").scored
    assert not rec("a", Outcome.INCORRECT).passed and rec("a", Outcome.UNPARSEABLE).scored
    err = rec("a", Outcome.ERROR)
    assert not err.passed and not err.scored
    unscored = rec("a", Outcome.UNSCORED)  # a question without a gold: asked, never judged
    assert not unscored.passed and not unscored.scored and unscored.answered and not err.answered
    assert Record.from_dict(unscored.to_dict()).outcome is Outcome.UNSCORED
    moved = rec("a").replace(suite="s", nodeid="n")
    assert (moved.suite, moved.nodeid, moved.sample_id) == ("s", "n", "a")
    assert index([rec("a"), rec("b")]) == {"a": rec("a"), "b": rec("b")}


@pytest.mark.parametrize("verdict", list(Verdict))
def test_a_derived_record_round_trips_through_json(verdict: Verdict) -> None:
    message = "" if verdict is Verdict.PASSED else "2 of 3 questions failed"
    d = DerivedRecord(
        benchmark="toy", derived_id="story-1", kind="coherence", verdict=verdict, members=("q1", "q2", "q3"),
        failed_members=("q2",), facets={"language": "en"}, value=0.5, message=message, details={"why": ["x"]},
        suite="toy", nodeid="toy_coherence[story-1]",
    )
    out = d.to_dict()
    assert out["kind"] == "group" and out["gid"] == "story-1" and out["group_kind"] == "coherence"
    assert out["outcome"] == verdict.value
    assert DerivedRecord.from_dict(through_json(out)) == d


def test_a_derived_record_leaves_out_empty_optional_fields_and_a_passing_message() -> None:
    d = DerivedRecord("toy", "g", "all", Verdict.PASSED, ("a",), message="every member passed").to_dict()
    assert "value" not in d and "details" not in d and "message" not in d
    back = DerivedRecord.from_dict(through_json(d))
    assert back.passed and back.message == "" and back.value is None
    assert not DerivedRecord("toy", "g", "all", Verdict.FAILED, ("a",)).passed


def test_a_derived_definition_round_trips_through_json() -> None:
    d = Derived("toy", "char-Anna", "character_all", ("q1", "q2"), marks=("toy", "character_all"),
                facets={"character": "Anna"}, params={"character": "Anna", "threshold": 0.5})
    assert Derived.from_dict(through_json(d.to_dict())) == d
    minimal = {"benchmark": "toy", "id": "g", "kind": "all", "members": ["a"]}
    assert Derived.from_dict(minimal) == Derived("toy", "g", "all", ("a",))


# -- evaluate --------------------------------------------------------------------------------------------------------


GROUP = Derived("toy", "story-1", "coherence", ("q1", "q2", "q3"), facets={"language": "en"})


def members(**outcomes: Outcome) -> dict[str, Record]:
    return {qid: rec(qid, outcomes.get(qid, Outcome.CORRECT)) for qid in GROUP.members}


def test_every_member_passing_passes() -> None:
    out = evaluate(GROUP, members(), all_pass, suite="toy", nodeid="toy_coherence[story-1]")
    assert out == DerivedRecord(benchmark="toy", derived_id="story-1", kind="coherence", verdict=Verdict.PASSED,
                                members=("q1", "q2", "q3"), facets={"language": "en"}, suite="toy",
                                nodeid="toy_coherence[story-1]")


def test_a_failing_member_fails_the_group_with_its_answer_gold_and_why() -> None:
    records = members()
    records["q2"] = rec("q2", Outcome.INCORRECT, parsed="B", gold="A", details={"why": "picked the box"})
    records["q3"] = rec("q3", Outcome.UNPARSEABLE, parsed=None, gold="C")
    out = evaluate(GROUP, records, all_pass)
    assert out.verdict is Verdict.FAILED and out.failed_members == ("q2", "q3")
    assert out.message == (
        "coherence group story-1: 2 of 3 questions failed\n"
        "  q2: incorrect (answer 'B', gold 'A'): picked the box\n"
        "  q3: unparseable (answer None, gold 'C')"
    )


def test_all_pass_on_its_own() -> None:
    assert all_pass(GROUP, list(members().values())) == Judgement(True)
    j = all_pass(GROUP, [rec("q1"), rec("q2", Outcome.INCORRECT, parsed=("Anna",), gold=("Anna", "Ben"))])
    assert not j.passed and j.failed_members == ("q2",)
    assert j.message.splitlines()[1] == "  q2: incorrect (answer ('Anna',), gold ('Anna', 'Ben'))"


def test_a_member_error_makes_the_verdict_error_never_a_failure() -> None:
    records = members(q2=Outcome.INCORRECT)
    records["q3"] = rec("q3", Outcome.ERROR, message="model error: HTTP 500")

    def never(derived: Derived, recs: Sequence[Record]) -> Judgement:
        raise AssertionError("a rule never sees an errored member")

    out = evaluate(GROUP, records, never)
    assert out.verdict is Verdict.ERROR and out.failed_members == ("q3",)
    assert out.message == "story-1: 1 member(s) hit model errors: model error: HTTP 500"


def test_a_member_without_a_gold_skips_the_group_never_judging_it() -> None:
    records = members(q1=Outcome.UNSCORED, q2=Outcome.INCORRECT)

    def never(derived: Derived, recs: Sequence[Record]) -> Judgement:
        raise AssertionError("a rule never sees a member without a gold")

    out = evaluate(GROUP, records, never)
    assert out.verdict is Verdict.SKIPPED and out.message == "story-1: member q1 has no scorable gold (a known release defect)"


def test_a_partial_selection_is_skipped_with_the_reason() -> None:
    def never(derived: Derived, recs: Sequence[Record]) -> Judgement:
        raise AssertionError("never judged on a partial selection")

    out = evaluate(GROUP, members(), never, selected=False)
    assert out.verdict is Verdict.SKIPPED
    assert out.message == ("coherence group story-1: only 3 of 3 questions are selected; "
                           "a consistency assertion is never computed on a partial group")
    missing = members()
    del missing["q2"]
    missing["q2"] = rec("q2", Outcome.ERROR)  # still present: an error, not a skip
    assert evaluate(GROUP, missing, never).verdict is Verdict.ERROR
    del missing["q2"]
    out = evaluate(GROUP, missing, never)
    assert out.verdict is Verdict.SKIPPED and "only 2 of 3 questions are selected" in out.message


def test_a_custom_rule_gets_members_in_definition_order_and_its_judgement_is_kept() -> None:
    seen: list[str] = []

    def at_least(derived: Derived, recs: Sequence[Record]) -> Judgement:
        seen.extend(r.sample_id for r in recs)
        rate = sum(r.passed for r in recs) / len(recs)
        failed = tuple(r.sample_id for r in recs if not r.passed)
        return Judgement(rate >= derived.params["threshold"], f"rate {rate:.2f}", value=rate, failed_members=failed,
                         details={"rate": rate})

    d = Derived("toy", "g", "threshold", ("q3", "q1", "q2"), params={"threshold": 0.5})
    records = {"q1": rec("q1"), "q2": rec("q2", Outcome.INCORRECT), "q3": rec("q3"), "other": rec("other")}
    out = evaluate(d, records, at_least)
    assert seen == ["q3", "q1", "q2"]
    assert out.verdict is Verdict.PASSED and out.value == pytest.approx(2 / 3) and out.failed_members == ("q2",)
    assert out.details == {"rate": pytest.approx(2 / 3)} and out.message == "rate 0.67"
    strict = Derived("toy", "g", "threshold", ("q3", "q1", "q2"), params={"threshold": 0.9})
    failed = evaluate(strict, records, at_least)
    assert failed.verdict is Verdict.FAILED and failed.to_dict()["message"] == "rate 0.67"


def test_a_failure_message_is_empty_when_correct_and_reads_alike_otherwise() -> None:
    assert failure("B q1 (f.json k[0])", Outcome.CORRECT, "Where?", "gold: box") == ""
    assert failure("B q1 (f.json k[0])", Outcome.UNPARSEABLE, "Where?", "gold: box", "answer: ''") == (
        "B q1 (f.json k[0]): unparseable\nquestion: Where?\ngold: box\nanswer: ''")
    assert failure("B q1", Outcome.INCORRECT, "Where?", why="a tie").startswith("B q1: incorrect: a tie\nquestion: ")
