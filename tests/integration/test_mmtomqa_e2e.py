"""MMToM-QA end to end with pytester on the fixture: items, marks, the gap check, messages, few-shot prompts, the
random and a python model.

The python model finds each question's gold by reading the fixture's file with plain `json` and answers by a plan
per line (R right, W wrong, U unreadable "(b)", B "Based on it", the official rule's b). The records reach the test
through the public `pytest_tom_results_ready` hook.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from helpers.records_hook import RECORDS_HOOK, read_records

from pytest_tom.evals.mmtomqa import MMToMQA
from pytest_tom.record import Record

FIXTURES = Path(__file__).resolve().parents[1].parent / "fixtures"
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")
PLAN = "RRURBWRURWRRRW"

TABLE_MODEL = '''
import json
from pathlib import Path

RECORDS = [json.loads(line) for line in Path(__ROOT__).read_text().splitlines()]


def answer(prompt):
    (line,) = [i for i, r in enumerate(RECORDS) if prompt.endswith("\\n" + r["question"] + "\\nAnswer: ")
               or prompt == r["question"] + "\\nAnswer: "]
    with open("prefixes.txt", "a") as f:
        f.write(f"{len(prompt) - len(RECORDS[line]['question']) - 9}\\n")
    gold = RECORDS[line]["answer"]
    return {"R": gold, "W": "ab"[gold == "a"], "U": "(b)", "B": "Based on it"}[__PLAN__[line]]


def model(conversations, settings):
    assert settings["max_new_tokens"] == 5 and settings["temperature"] == 0
    assert all(c[0] == {"role": "system", "content": "You are a helpful assistant."} for c in conversations)
    return [answer(c[-1]["content"]) for c in conversations]
'''


def setup(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mmtomqa_table=TABLE_MODEL.replace("__ROOT__", repr(str(FIXTURES / "mmtomqa" / "Benchmark" /
                                                                             "questions.json"))).replace("__PLAN__", repr(PLAN)))
    pytester.makeconftest(RECORDS_HOOK)
    pytester.syspathinsert()


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, "--tom-benchmark=mmtomqa", f"--tom-data-dir={FIXTURES}",
                              "--tom-set=mmtomqa.partial=true", *args)


def records(pytester: pytest.Pytester) -> list[Record]:
    return read_records(pytester)


@pytest.mark.parametrize("shots", [0, 1, 2])
def test_a_python_model_scores_as_planned_with_messages_and_the_gap_check(pytester: pytest.Pytester, shots: int) -> None:
    setup(pytester)
    result = run(pytester, "--tom-model=python:mmtomqa_table:model", f"--tom-set=mmtomqa.shots={shots}", "--tom-detail=full")
    # right: 9 of 14 (R, and B on a b gold); the gap check fails: 1.1 is 2/2, 1.2 is 0/2 (an unreadable and a wrong)
    result.assert_outcomes(passed=9, failed=5 + 1)
    assert set((pytester.path / "prefixes.txt").read_text().split()) == {str((0, 1960, 3532)[shots])}
    recs = records(pytester)
    assert Counter(r.outcome.value for r in recs) == {"correct": 9, "incorrect": 3, "unparseable": 2}
    m = {x.name: x.value for x in MMToMQA().metrics(recs)}
    assert (m["all.accuracy"], m["belief.accuracy"], m["goal.accuracy"]) == (9 / 14, 4 / 6, 5 / 8)
    assert (m["unparseable"], m["word_letter"], m["types.1_2.accuracy"]) == (2, 1, 0.0)
    result.stdout.fnmatch_lines(["*MMToM-QA 1.2-e7-t9 (type 1.2, Benchmark/questions.json line 3): unparseable",
                                 "question: If Ann has been trying to get a cupcake, which one of the following*",
                                 "gold: (b) Ann thinks that the cupcake is inside the stove.",
                                 "answer: '(b)'; official first character: '(', a letter a or b is needed"])
    result.stdout.fnmatch_lines(["*MMToM-QA true_false_belief_gap: type 1.1 (true belief) minus type 1.2 (false "
                                 "belief) accuracy is +100.0 points*"])


def test_the_random_model_answers_a_letter(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RECORDS_HOOK)
    result = run(pytester, "--tom-model=random:3", "--tom-set=mmtomqa.max_gap=0.99")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 15 and "error" not in outcomes
    recs = records(pytester)
    assert len(recs) == 14 and all(r.outcome.value in ("correct", "incorrect") and r.responses[0] in ("a", "b")
                                   for r in recs)
    assert outcomes.get("passed", 0) == 1 + sum(r.responses[0] == r.gold for r in recs)


@pytest.mark.parametrize(("marks", "count"), [
    ("mmtomqa", 15), ("belief", 7), ("goal", 8), ("false_belief", 2), ("goal_updated_belief", 2), ("long_term", 2),
    ("short_term", 4), ("true_false_belief_gap", 1), ("mmtomqa and not belief", 8),
])
def test_marks_select_items_and_checks(pytester: pytest.Pytester, marks: str, count: int) -> None:
    result = run(pytester, "--tom-model=random", "--collect-only", "-q", "-m", marks)
    assert sum(1 for line in result.stdout.lines if "::" in line) == count


def test_ids_come_from_the_content_and_a_sample_is_stratified_by_type(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--tom-model=random", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*mmtomqa[[]1.3-e7-t4[]]", "*mmtomqa[[]1.1-e7-t4[]]"])
    result = run(pytester, "--tom-model=random", "--collect-only", "-q", "--tom-sample=7", "--tom-seed=1")
    result.stdout.fnmatch_lines(["*mmtomqa: sample=7 keeps 7 of 14 questions*stratified by type*"])
