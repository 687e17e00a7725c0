"""Hi-ToM end to end with pytester on the fixture: items, marks, checks, messages, the random and a python model.

The python model answers from a table keyed by the question and the prompting style; it finds
the gold by reading the fixture's CoT data files with plain file reads (a loader bug cannot
hide behind it). The records reach the test through the public `pytest_tom_results_ready` hook.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from helpers.records_hook import RECORDS_HOOK, read_records

from pytest_tom.evals.hitom import HiToM

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")

TABLE_MODEL = '''
import re
from pathlib import Path

GOLD = {}
for f in (Path(__ROOT__) / "Hi-ToM_data").glob("*/CoT/*/*/*.txt"):
    text = f.read_text()
    GOLD[re.search(r"^Question: (.*)$", text, re.M)[1]] = re.search(r"^Answer: (.*)$", text, re.M)[1]
PLAN = __PLAN__


def answer(prompt):
    question = re.search(r"^Question: (.*)$", prompt, re.M)[1]
    style = "cot" if "Think step-by-step" in prompt.splitlines()[0] else "vanilla"
    what = PLAN[style][question]
    choices = dict(re.findall(r"([A-O])\\. (\\w+)", re.search(r"^Choices: (.*)$", prompt, re.M)[1]))
    gold = next(k for k, v in choices.items() if v == GOLD[question])
    other = "A" if gold != "A" else "B"
    return {"R": f"{gold}. {choices[gold]}\\nBecause...", "W": f"{other}. {choices[other]}", "U": "Let me think."}[what]


def model(conversations, settings):
    assert settings["max_new_tokens"] == 2000
    return [answer(c[-1]["content"]) for c in conversations]
'''

# questions of the fixture by story and order; each style's string is that chain's plan (R right, W wrong, U unread)
QUESTIONS = {
    "No_Tell": ["Where is the plum really?", "Where does Leo really think the plum is?",
                "Where does Mia think Leo thinks the plum is?", "Where does Finn think Mia thinks Leo thinks the plum is?",
                "Where does Ada think Finn thinks Mia thinks Leo thinks the plum is?"],
    "Tell": ["Where is the fig really?", "Where does Max really think the fig is?",
             "Where does Ivy think Max thinks the fig is?", "Where does Noa think Ivy thinks Max thinks the fig is?",
             "Where does Sam think Noa thinks Ivy thinks Max thinks the fig is?"],
}
PLAN = {"cot": {"No_Tell": "RRWRR", "Tell": "RRRRW"}, "vanilla": {"No_Tell": "RWRRR", "Tell": "URRRR"}}


def setup(pytester: pytest.Pytester) -> None:
    plan = {style: {q: chains[tell][k] for tell, qs in QUESTIONS.items() for k, q in enumerate(qs)}
            for style, chains in PLAN.items()}
    pytester.makepyfile(hitom_table=TABLE_MODEL.replace("__ROOT__", repr(str(FIXTURES / "hitom")))
                        .replace("__PLAN__", repr(plan)))
    pytester.makeconftest(RECORDS_HOOK)
    pytester.syspathinsert()


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, "--tom-benchmark=hitom", f"--tom-data-dir={FIXTURES}",
                              "--tom-set=hitom.partial=true", *args)


def test_a_python_model_scores_as_the_hand_computation_with_its_messages(pytester: pytest.Pytester) -> None:
    setup(pytester)
    result = run(pytester, "--tom-model=python:hitom_table:model", "--tom-detail=full")
    # 16 of 20 right; the 6 checks (4 joint invariants, order decline, deception gap) pass
    result.assert_outcomes(passed=16 + 6, failed=4)
    recs = read_records(pytester)
    assert Counter(r.outcome.value for r in recs) == {"correct": 16, "incorrect": 3, "unparseable": 1}
    m = {x.name: x.value for x in HiToM().metrics(recs)}
    assert [m[f"overall.order.{k}.joint"] for k in range(5)] == [3 / 4, 2 / 4, 1 / 4, 1 / 4, 0]
    assert m["overall.accuracy"] == 0.8 and m["unparseable"] == 1
    result.stdout.fnmatch_lines([
        "*Hi-ToM No_Tell/MC/length_1/sample_1/order_1 (order 1, length 1, No_Tell, MC): incorrect",
        "question: Where does Leo really think the plum is?",
        "gold: B. blue_crate",
        "first line of the answer: 'A. red_box' -> red_box",
    ])
    result.stdout.fnmatch_lines(["*Hi-ToM Tell/MC/length_1/sample_1/order_0 *: unparseable",
                                 "*first line of the answer: 'Let me think.' -> unparseable"])
    result.stdout.fnmatch_lines(["*joint_invariants groups: 4/4 passed*"])


def test_gold_mc_fails_the_item_whose_folders_disagree_and_says_so(pytester: pytest.Pytester) -> None:
    setup(pytester)
    result = run(pytester, "--tom-model=python:hitom_table:model", "--tom-set=hitom.gold=mc", "-k", "order_4",
                 "--tom-detail=full")
    # the model answers the CoT gold: under the MC key the No_Tell order-4 items (red_box vs blue_crate) are wrong,
    # and so is Tell cot's (planned wrong); order_4_vs_0 is skipped: its order-0 members are not selected
    result.assert_outcomes(passed=1, failed=3, skipped=1)
    result.stdout.fnmatch_lines(["*gold: B. blue_crate; the MC and CoT data files disagree (MC blue_crate, CoT "
                                 "red_box), gold=mc reads MC"])


def test_the_random_model_answers_well_formed_lines(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RECORDS_HOOK)
    result = run(pytester, "--tom-model=random:3")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 26 and "error" not in outcomes
    recs = read_records(pytester)
    assert len(recs) == 20 and all(r.outcome.value in ("correct", "incorrect") for r in recs)
    assert all(r.parsed in [c for c in r.responses[0].split() if "_" in c] for r in recs)


@pytest.mark.parametrize(("marks", "count"), [
    ("hitom", 26), ("order0", 4), ("order4 and cot", 2), ("deception", 12), ("hitom and not deception", 14),
    ("length1", 24), ("length2", 0), ("vanilla", 12), ("joint_invariants", 4), ("order_decline or deception_gap", 2),
])
def test_marks_select_items_and_checks(pytester: pytest.Pytester, marks: str, count: int) -> None:
    result = run(pytester, "--tom-model=random", "--collect-only", "-q", "-m", marks)
    assert sum(1 for line in result.stdout.lines if "::" in line) == count


def test_a_sample_keeps_whole_stories_and_joint_accuracy_is_over_them(pytester: pytest.Pytester) -> None:
    setup(pytester)
    result = run(pytester, "--tom-model=python:hitom_table:model", "--tom-sample=10", "--tom-seed=2")
    result.stdout.fnmatch_lines(["*hitom: sample=10 keeps 10 of 20 questions (1 of 2 whole story clusters, stratified"
                                 " by deception, length; seed 2); 10 questions deselected*"])
    recs = read_records(pytester)
    (story,) = {r.facets["story"] for r in recs}
    assert sorted((r.facets["style"], r.facets["order"]) for r in recs) == sorted(
        (s, str(k)) for s in ("cot", "vanilla") for k in range(5))  # both chains of the story, every order
    tell = story.split("/")[0]
    hand = [sum("W" not in p[tell][:k + 1] and "U" not in p[tell][:k + 1] for p in PLAN.values()) / 2 for k in range(5)]
    m = {x.name: x.value for x in HiToM().metrics(recs)}
    assert [m[f"overall.order.{k}.joint"] for k in range(5)] == hand


def test_joint_accuracy_of_orders_run_alone_is_left_out_with_its_reason(pytester: pytest.Pytester) -> None:
    setup(pytester)
    result = run(pytester, "--tom-model=python:hitom_table:model", "-m", "order3")
    m = {x.name: x.value for x in HiToM().metrics(read_records(pytester))}
    assert "overall.order.3.joint" not in m and m["overall.order.3.joint_left_out"] == 4
    result.stdout.fnmatch_lines(["*all order 3 joint accuracy not computed: chains without orders 0..3 all run and "
                                 "scored 4*"])
