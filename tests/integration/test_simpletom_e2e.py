"""SimpleToM end to end with pytester: items, chains, marks, and metrics computed by hand, baseline and reminder.

The model answers from a table (story id, question type) -> correct / wrong / garbled, reading the
fixtures with the json module only (a loader bug cannot hide behind it). It recognises the question
type from the options and the gold from the story's semantic gold ("No", the unaware action,
"Reasonable"), so it works for any option order. Under the reminder it checks that the reminded
letter is its own mental-state answer, and answers "MISMATCH" (unparseable) if not.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.shown import missing

from pytest_tom.evals.simpletom import SimpleToM
from pytest_tom.framework.base import DataSource

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

TABLE_MODEL = '''
import json
import re
from pathlib import Path

STORIES = {}
for line in (Path(__DATA__) / "story-data" / "test.jsonl").read_text().splitlines():
    rec = json.loads(line)
    STORIES[rec["story"]] = (rec["story_id"], rec["questions"][1]["answer_correct"])
BASE = __BASE__
REMIND = __REMIND__
CONSTANT = __CONSTANT__
GIVEN = {}


def answer(prompt):
    if CONSTANT:
        return CONSTANT
    story = re.search(r"Story: (.*?)\\n\\n", prompt, re.S)[1]
    sid, unaware = STORIES[story]
    block = prompt.rsplit("Question: ", 1)[1]
    a = re.search(r"^\\(A\\) (.*?) ?$", block, re.M)[1]
    b = re.search(r"^\\(B\\) (.*?) ?$", block, re.M)[1]
    if {a, b} == {"Yes", "No"}:
        qtype, gold = "mental_state", "No"
    elif {a, b} == {"Reasonable", "Not reasonable"}:
        qtype, gold = "judgment", "Reasonable"
    else:
        qtype, gold = "behavior", unaware
    reminded = re.search(r"\\nAnswer: \\(([AB])\\)\\n", prompt)
    what = BASE[sid][qtype]
    if reminded:
        if reminded[1] != GIVEN.get(sid):
            return "MISMATCH"
        what = REMIND.get(sid, {}).get(qtype, what)
    if what == "g":
        return "I cannot tell."
    right = "A" if a == gold else "B"
    letter = right if what == "c" else ("B" if right == "A" else "A")
    if qtype == "mental_state":
        GIVEN[sid] = letter
    if "Think step by step" in prompt:
        return "Let me think. Therefore, the answer is: (" + letter + ")"
    return "(" + letter + ")"


def model(conversations, settings):
    return [answer(c[-1]["content"]) for c in conversations]


model.tom_fingerprint = "simpletom-table:" + repr((BASE, REMIND, CONSTANT))
'''

# (mental state, behavior, judgment): c = right, w = wrong, g = unreadable.
BASE = {
    "jam_jar_sev1": "ccc", "jam_jar_sev2": "cwc", "jam_jar_sev3": "cww", "lunchbox_sev2": "ccw", "lunchbox_sev3": "wcc",
    "spice_tin_sev1": "cww", "used_bike_sev2": "ccw", "face_cream_sev1": "cgw", "phone_sev3": "cwc", "clinic_sev2": "ccc",
}
# Under the reminder (the model's own MS answer in the prompt), these answers change.
REMIND = {
    "jam_jar_sev2": {"behavior": "c"}, "jam_jar_sev3": {"behavior": "c"},
    "spice_tin_sev1": {"behavior": "c", "judgment": "c"}, "lunchbox_sev3": {"behavior": "w"},
}
TYPES = ("mental_state", "behavior", "judgment")


def table(pytester: pytest.Pytester, constant: str = "") -> str:
    base = {sid: dict(zip(TYPES, v, strict=True)) for sid, v in BASE.items()}
    source = (TABLE_MODEL.replace("__DATA__", repr(str(FIXTURES / "simpletom"))).replace("__BASE__", repr(base))
              .replace("__REMIND__", repr(REMIND)).replace("__CONSTANT__", repr(constant)))
    pytester.makepyfile(simpletom_table=source)
    pytester.syspathinsert()
    return "--tom-model=python:simpletom_table:model"


QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")


def run(pytester: pytest.Pytester, *args: str, data_dir: Path = FIXTURES) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, "--tom-benchmark=simpletom", f"--tom-data-dir={data_dir}",
                              "--tom-set=simpletom.partial=true", "--tom-report=report.json", *args)


def suite_of(pytester: pytest.Pytester) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    report = json.loads((pytester.path / "report.json").read_text())
    return report["suites"][0], report["groups"]


def approx(x: float) -> Any:
    return pytest.approx(x, abs=1e-12)


def test_baseline_metrics_equal_the_hand_computed_ones(pytester: pytest.Pytester) -> None:
    result = run(pytester, table(pytester), "-q", "--tom-detail=full")
    outcomes = result.parseoutcomes()
    # 30 questions (19 right) + 10 chains (2 hold) + 3 letter-balance checks (all hold)
    assert outcomes.get("passed", 0) == 19 + 2 + 3 and outcomes.get("failed", 0) == 11 + 8
    suite, groups = suite_of(pytester)
    m = suite["metrics"]
    assert m["intervention"] == "none"
    assert {t: (v["n"], v["correct"], v["unparseable"]) for t, v in m["types"].items()} == {
        "mental_state": (10, 9, 0), "behavior": (10, 5, 1), "judgment": (10, 5, 0)}
    assert m["average"] == approx((0.9 + 0.5 + 0.5) / 3)
    c = m["chains"]
    assert c["stories"] == 10
    assert c["buckets"] == {"fail_ms": 1, "fail_behavior": 5, "fail_judgment": 2, "all_correct": 2}
    assert c["p_behavior_given_ms"] == approx(4 / 9)
    assert c["p_judgment_given_ms_behavior"] == approx(2 / 4)
    assert c["reverse_inconsistency_rate"] == approx(2 / 10)
    assert c["inconsistency_rate"] == approx(7 / 10)
    assert c["behavior_x_judgment"] == {"b1j1": 3, "b1j0": 2, "b0j1": 2, "b0j0": 3}
    assert m["self_check_violations"] == []
    assert m["gaps"] == {"behavior": approx(0.4), "judgment": approx(0.4)}
    # by severity: sev1 = jam1 ccc, spice cww, cream cgw; sev3 = jam3 cww, lunch3 wcc, phone cwc
    sev = m["severities"]
    assert list(sev) == ["sev1", "sev2", "sev3"]
    assert {t: v["correct"] for t, v in sev["sev1"]["types"].items()} == {"mental_state": 3, "behavior": 1, "judgment": 1}
    assert sev["sev3"]["chains"]["buckets"] == {"fail_ms": 1, "fail_behavior": 2, "fail_judgment": 0, "all_correct": 0}
    food = m["scenarios"]["food_item_in_grocery_store"]
    assert food["chains"]["buckets"] == {"fail_ms": 0, "fail_behavior": 2, "fail_judgment": 0, "all_correct": 1}
    assert len(m["scenarios"]) == 7
    bal = m["balance"]["behavior"]
    assert bal["answers"]["unparseable"] == 1 and not bal["constant"]
    kinds = Counter(g["group_kind"] for g in groups)
    assert kinds == {"chain": 10, "letter_balance": 3}
    by_id = {g["gid"]: g for g in groups if g["group_kind"] == "chain"}
    assert by_id["jam_jar_sev2"]["outcome"] == "failed" and by_id["clinic_sev2"]["outcome"] == "passed"
    # the failing chain's message names the first broken link and shows the three answers
    result.stdout.fnmatch_lines([
        "SimpleToM chain jam_jar_sev2 broken at fail_behavior: mental state (A) ok, behavior (A) WRONG (gold B), "
        "judgment (B) ok",
        "  the model inferred the mental state but did not apply it to predict the behavior "
        "(food_item_in_grocery_store, sev2)",
        '*  mental state: ok    answered (A) "No", gold (A) "No"',
        '*  behavior:     WRONG answered (A) "report the moldy jam to a store clerk", gold (B) "pay for the jam"',
        '*  judgment:     ok    answered (B) "Reasonable", gold (B) "Reasonable"',
    ])
    result.stdout.fnmatch_lines(["  simpletom (% of the type's questions right, Wilson 95% interval; unparseable counts as wrong)*"])
    assert not missing(
        result.stdout.str(), "mental_state 90.0", "behavior 50.0", "behavior unparseable 1", "judgment 50.0",
        "average (the paper's: unweighted mean of the three; under an intervention with the baseline MS) 63.3",
        "stories 10", "all_correct 20.0", "fail_ms 10.0", "fail_behavior 50.0", "fail_judgment 20.0",
    )


def test_reminder_metrics_equal_the_hand_computed_ones(pytester: pytest.Pytester) -> None:
    run(pytester, table(pytester), "--tom-set=simpletom.intervention=reminder", "-q")
    suite, _ = suite_of(pytester)
    m = suite["metrics"]
    assert m["intervention"] == "reminder" and suite["settings"]["intervention"] == "reminder"
    assert {t: (v["n"], v["correct"], v["unparseable"]) for t, v in m["types"].items()} == {
        "mental_state": (10, 9, 0), "behavior": (10, 7, 1), "judgment": (10, 6, 0)}
    assert m["average"] == approx((0.9 + 0.7 + 0.6) / 3)  # the baseline MS accuracy, as in the paper's Table 3
    c = m["chains"]
    assert c["buckets"] == {"fail_ms": 1, "fail_behavior": 2, "fail_judgment": 3, "all_correct": 4}
    assert c["p_behavior_given_ms"] == approx(7 / 9)
    assert c["p_judgment_given_ms_behavior"] == approx(4 / 7)
    assert c["reverse_inconsistency_rate"] == approx(2 / 10)
    assert c["behavior_x_judgment"] == {"b1j1": 4, "b1j0": 3, "b0j1": 2, "b0j0": 1}
    assert m["self_check_violations"] == []


def test_a_constant_answerer_fails_the_letter_balance_checks(pytester: pytest.Pytester) -> None:
    # every member must be selected for a check to be judged, so the whole suite runs
    result = run(pytester, table(pytester, constant="(A)"), "-q", "--tom-detail=full")
    _, groups = suite_of(pytester)
    assert {g["gid"]: g["outcome"] for g in groups if g["group_kind"] == "letter_balance"} == {
        "mental_state": "failed", "behavior": "failed", "judgment": "failed"}
    assert not missing(result.stdout.str(), "mental_state answered A 10", "mental_state gold A 5", "mental_state gold B 5",
                       "mental_state most answered A", "mental_state constant answerer True")
    result.stdout.fnmatch_lines([
        "*SimpleToM mental state answers are (almost) always the same letter: 'A' on 10 of 10 (100.0%, threshold 95%) "
        "while the gold is 'A' on 5 (50.0%)*",
        "*  answers: A 10 (100.0%)",
        "*  golds:   A 5 (50.0%) / B 5 (50.0%)",
    ])


@pytest.mark.parametrize("cot_ms", ["true", "false"])
def test_under_cot_the_mental_state_questions_follow_cot_mental_state(pytester: pytest.Pytester, cot_ms: str) -> None:
    """The released code's CoT run asks every question with CoT (true, the default); false is the paper's 5.3."""
    args = ["--tom-set=simpletom.intervention=cot"] + ([] if cot_ms == "true" else ["--tom-set=simpletom.cot_mental_state=false"])
    result = run(pytester, table(pytester), *args, "-q")
    report = json.loads((pytester.path / "report.json").read_text())
    m = report["suites"][0]["metrics"]
    # the table answers the same letters with or without CoT: the baseline's numbers
    assert {t: (v["n"], v["correct"], v["unparseable"]) for t, v in m["types"].items()} == {
        "mental_state": (10, 9, 0), "behavior": (10, 5, 1), "judgment": (10, 5, 0)}
    ms = [i for i in report["items"] if i["facets"]["question_type"] == "mental_state"]
    asked = "cot" if cot_ms == "true" else "none"
    assert {(i["details"]["cot"], i["details"]["intervention"]) for i in ms} == {(cot_ms == "true", asked)}
    assert m["mental_state_asked_with"] == asked and report["suites"][0]["settings"]["cot_mental_state"] == cot_ms
    label = ("average (unweighted mean of the three, all asked with CoT as the authors' released CoT run; the paper's "
             "averages use the baseline MS) 63.3" if cot_ms == "true" else
             "average (the paper's: unweighted mean of the three; under an intervention with the baseline MS) 63.3")
    assert not missing(result.stdout.str(), label)


def test_an_extra_option_answer_is_wrong_and_counted_apart(pytester: pytest.Pytester) -> None:
    result = run(pytester, table(pytester, constant="(C)"), "--tom-set=simpletom.extra_options=neither", "-q")
    assert result.parseoutcomes().get("passed", 0) == 0
    suite, _ = suite_of(pytester)
    assert suite["settings"]["extra_options"] == "neither"
    for counts in suite["metrics"]["types"].values():
        assert (counts["n"], counts["correct"], counts["unparseable"], counts["picked_neither"]) == (10, 0, 0, 10)
        assert counts["na_frac"] == 1.0 and "picked_either" not in counts
    items = json.loads((pytester.path / "report.json").read_text())["items"]
    assert {(i["outcome"], i["details"]["extra_option"]) for i in items} == {("incorrect", "neither")}
    assert not missing(result.stdout.str(), "behavior picked_neither 10",
                       "behavior na_frac (unparseable or an extra option, as upstream) 100.0")


@pytest.mark.parametrize(("setting", "message"), [
    ("extra_options=none,either", "extra_options='none,either': none cannot be combined with either, neither"),
    ("extra_options=maybe", "'maybe' is not one of none, either, neither"),
    ("cot_mental_state=maybe", "cot_mental_state='maybe': expected true or false"),
])
def test_a_bad_new_setting_is_a_usage_error(pytester: pytest.Pytester, setting: str, message: str) -> None:
    result = run(pytester, f"--tom-set=simpletom.{setting}", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stdout.str() + result.stderr.str()


def expected_nodeids(mark: str) -> set[str]:
    bench = SimpleToM({"partial": "true"})
    samples = bench.load(DataSource(root=FIXTURES, download=False, cache_dir=Path("unused-cache")))
    ids = {f"simpletom::simpletom[{s.id}]" for s in samples if mark in s.marks}
    ids |= {f"simpletom::simpletom_{d.kind}[{d.id}]" for d in bench.derived(samples) if mark in d.marks}
    return ids


@pytest.mark.parametrize("mark", ["judgment", "sev1", "food_item_in_grocery_store", "chain", "letter_balance"])
def test_every_mark_selects_its_items(pytester: pytest.Pytester, mark: str) -> None:
    result = run(pytester, "--collect-only", "-q", "-m", mark)
    got = {line for line in result.outlines if line.startswith("simpletom::")}
    assert got == expected_nodeids(mark) and got


@pytest.mark.realdata
def test_the_real_release_collects_3441_items_and_1147_chains(pytester: pytest.Pytester, real_data_dir: Path) -> None:
    result = pytester.runpytest(*QUIET, "--tom-benchmark=simpletom", f"--tom-data-dir={real_data_dir}", "--collect-only",
                                "-q")
    lines = [line for line in result.outlines if line.startswith("simpletom::")]
    items = [line for line in lines if line.startswith("simpletom::simpletom[")]
    chains = [line for line in lines if line.startswith("simpletom::simpletom_chain[")]
    assert len(items) == 3441 and len(chains) == 1147
    assert len([line for line in lines if line.startswith("simpletom::simpletom_letter_balance[")]) == 3
    bench = SimpleToM()
    samples = bench.load(DataSource(root=real_data_dir, download=False, cache_dir=Path("unused-cache")))
    marks = Counter(m for s in samples for m in s.marks)
    assert marks["simpletom"] == 3441
    assert marks["mental_state"] == marks["behavior"] == marks["judgment"] == 1147
    assert {k: marks[k] // 3 for k in ("sev1", "sev2", "sev3")} == {"sev1": 153, "sev2": 442, "sev3": 552}
    from pytest_tom.evals.simpletom.data import SCENARIOS

    assert {k: marks[k] // 3 for k in SCENARIOS} == {k: n for k, (_, n) in SCENARIOS.items()}
    for mark in ("hidden_body_part_feature", "sev1"):
        sel = pytester.runpytest(*QUIET, "--tom-benchmark=simpletom", f"--tom-data-dir={real_data_dir}",
                                 "--collect-only", "-q", "-m", mark)
        got = {line for line in sel.outlines if line.startswith("simpletom::")}
        want = {f"simpletom::simpletom[{s.id}]" for s in samples if mark in s.marks}
        want |= {f"simpletom::simpletom_{d.kind}[{d.id}]" for d in bench.derived(samples) if mark in d.marks}
        assert got == want
