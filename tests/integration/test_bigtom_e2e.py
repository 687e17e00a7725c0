"""BigToM end to end with pytester on the fixture (4 invented stories): items and pair checks, marks, story-whole
sampling, messages, the completion CoT chain, and a python model whose metrics equal a hand computation.

The python model answers by the story's agent (Ama: a), Bo: b), Cyd: the text of option b, Dee: no answer), blind
to the gold, so the test computes the expected outcome of each item from the raw CSV and the official seed-0 order.
Records reach the test through the public `pytest_tom_results_ready` hook.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from helpers.records_hook import RECORDS_HOOK, read_records

from pytest_tom.evals.bigtom import BigToM
from pytest_tom.record import Record

FIXTURES = Path(__file__).resolve().parents[1].parent / "fixtures"
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")

AGENT_MODEL = '''
def model(conversations, settings):
    out = []
    for c in conversations:
        text = c[-1]["content"]
        with open("calls.txt", "a") as f:
            f.write(f"{len(c)} {settings['max_new_tokens']} {'|'.join(settings.get('stop') or [])}\\n")
        if text.endswith("Let's think step by step:"):
            out.append(" Thinking about it.")
            continue
        agent = text.split("Story: ")[-1].split(" ", 1)[0]
        option_b = text.rsplit("\\nb)", 1)[1].split("\\n", 1)[0]
        out.append({"Ama": "Answer: a)", "Bo": "Answer:B) that", "Cyd": option_b}.get(agent, "I cannot tell."))
    return out
'''

JUDGE = '''
def judge(conversations, settings):
    assert settings["max_new_tokens"] == 10 and settings["stop"] == ["Predicted Answer:", "True Answer:", "Response:"]
    with open("judged.txt", "a") as f:
        f.write(str(len(conversations)) + "\\n")
    return ["True" if "I cannot tell." in c[-1]["content"] else "False" for c in conversations]
'''


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(agent_model=AGENT_MODEL, judge_model=JUDGE)
    pytester.makeconftest(RECORDS_HOOK)
    pytester.syspathinsert()
    return pytester.runpytest(*QUIET, "--tom-benchmark=bigtom", f"--tom-data-dir={FIXTURES}",
                              "--tom-set=bigtom.partial=true", *args)


def records(pytester: pytest.Pytester) -> list[Record]:
    return read_records(pytester)


def expected() -> dict[str, str]:
    """Each core item's outcome, from the raw CSV: the letter each agent's answer gives against the seed-0 gold."""
    lines = list(csv.reader((FIXTURES / "bigtom/data/bigtom/bigtom.csv").open(newline=""), delimiter=";"))
    rng, gold = random.Random(0), []
    for _ in lines:
        pair = ["t", "w"]
        rng.shuffle(pair)
        gold.append("a" if pair[0] == "t" else "b")
    out = {}
    for i, row in enumerate(lines):
        agent = row[0].split(" ", 1)[0]
        for init in "01":
            for v in ("forward_belief", "forward_action", "backward_belief"):
                for c in ("true_belief", "false_belief", "true_control", "false_control"):
                    letter = {"Ama": "a", "Bo": "b", "Cyd": "b"}.get(agent)
                    out[f"{init}_{v}_{c}-{i + 1:03d}"] = ("unparseable" if letter is None else
                                                          "correct" if letter == gold[i] else "incorrect")
    return out


def test_a_python_model_scores_as_the_hand_computation(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--tom-model=python:agent_model:model", "--tom-detail=full")
    want = expected()
    recs = records(pytester)
    assert {r.sample_id: r.outcome.value for r in recs} == want
    right = sum(v == "correct" for v in want.values())
    # a story's items all get one letter: a pair passes iff that letter is the (shared) gold, so 12 pairs per such story
    pairs = 12 * sum(want[f"0_forward_belief_true_belief-{n:03d}"] == "correct" for n in range(1, 5))
    result.assert_outcomes(passed=right + pairs, failed=96 - right + 48 - pairs)
    m = {x.name: x.value for x in BigToM().metrics(recs)}
    assert m["accuracy"] == right / 96 and m["unparseable"] == 24 and m["via_text"] == 24
    assert m["pair.1_forward_belief.belief.true_and_false"] == pairs / 48
    assert m["pair.0_backward_belief.control.both"] + m["pair.0_backward_belief.control.neither"] == 4
    assert {line.split()[0] for line in (pytester.path / "calls.txt").read_text().splitlines()} == {"2"}  # system + user
    result.stdout.fnmatch_lines(["*BigToM 0_forward_belief_true_belief-004 (data/bigtom/bigtom.csv line 4 *): unparseable",
                                 "question: Does Dee believe the pot holds soup or stew?",
                                 "answer: 'I cannot tell.'; read: neither key a)/b) nor exactly one option's text"])


def test_the_completion_cot_method_chains_two_calls_and_scores_the_second(pytester: pytest.Pytester) -> None:
    run(pytester, "--tom-model=python:agent_model:model", "--tom-set=bigtom.format=completion",
        "--tom-set=bigtom.prompt=1shot-cot", "-m", "forward_belief and true_belief and initial_belief_shown")
    recs = records(pytester)
    assert len(recs) == 4 and all(len(r.responses) == 2 and r.responses[0] == " Thinking about it." for r in recs)
    calls = sorted(set((pytester.path / "calls.txt").read_text().splitlines()))
    assert calls == ["1 200 Story:|Question:|Answer:", "1 30 Story:|Question:|Answer:"]


def test_the_random_model_answers_a_key(pytester: pytest.Pytester) -> None:
    run(pytester, "--tom-model=random:3", "--tom-set=bigtom.conditions=all")
    recs = records(pytester)
    assert len(recs) == 100 and all(r.outcome.value in ("correct", "incorrect") for r in recs)


@pytest.mark.parametrize(("marks", "count"), [
    ("bigtom", 144), ("pair", 48), ("false_belief and not pair", 24), ("control and not pair", 48),
    ("backward_belief", 32 + 16), ("initial_belief_hidden", 48), ("percept_to_belief", 0),
])
def test_marks_select_items_and_pairs(pytester: pytest.Pytester, marks: str, count: int) -> None:
    result = run(pytester, "--tom-model=random", "--collect-only", "-q", "-m", marks)
    assert sum(1 for line in result.stdout.lines if "::" in line) == count


def test_a_sample_keeps_whole_stories_so_every_pair_is_whole(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--tom-model=random", "--collect-only", "-q", "--tom-sample=30", "--tom-seed=1")
    ids = [line.split("[")[1].rstrip("]") for line in result.stdout.lines if "::bigtom[" in line]
    stories = {i.rsplit("-", 1)[1] for i in ids}
    assert 0 < len(stories) < 4
    assert len(ids) == 24 * len(stories) and sum("::bigtom_pair[" in line for line in result.stdout.lines) == 12 * len(stories)


def test_pairs_and_conditions_gate_with_story_clusters(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--tom-model=python:agent_model:model", "--tom-threshold=bigtom.pair>=0.9",
                 "--tom-threshold=bigtom.folder.1_forward_belief_false_belief>=0.1", "--tb=no", "-q")
    result.stdout.fnmatch_lines(["*FAIL bigtom.pair:point>=0.9: 50.0% *n=48 in 4 clusters*",
                                 "*PASS bigtom.folder.1_forward_belief_false_belief:point>=0.1*"])


def test_each_groups_pairs_are_gateable_against_a_baseline(pytester: pytest.Pytester) -> None:
    run(pytester, "--tom-model=python:agent_model:model", "--tom-baseline-save=base.json", "-q")
    saved = json.loads((pytester.path / "base.json").read_text())["suites"][0]["metrics"]
    groups = {k for k in saved if k.startswith("pair.group.")}  # (init, variable, kind) as the metrics' `pair.*` groups
    assert groups == {f"pair.group.{i}_{v}_{k}" for i in "01" for v in ("forward_belief", "forward_action", "backward_belief")
                      for k in ("belief", "control")}
    assert saved["pair.group.1_forward_belief_belief"]["ids"] == [f"1_forward_belief-belief-{n:03d}" for n in range(1, 5)]
    result = run(pytester, "--tom-model=python:agent_model:model", "--tom-threshold=bigtom.pair.group.0_forward_action_belief>=0.6",
                 "--tom-baseline=base.json", "--tom-compare-fail=bigtom.pair.group.*", "--tb=no", "-q")
    # the model passes the pairs of two of the four stories in every group (the hand computation's 50%)
    result.stdout.fnmatch_lines(["*FAIL bigtom.pair.group.0_forward_action_belief:point>=0.6: 50.0% *n=4; the value*",
                                 "*PASS bigtom.pair.group.0_backward_belief_belief:baseline: not testable (n=4): 50.0% now*"])
    assert sum(line.lstrip().startswith(("PASS bigtom.pair.group.", "FAIL bigtom.pair.group.")) for line in result.stdout.lines) == 13
    assert "REGRESSION" not in result.stdout.str()


def test_a_judge_grades_the_unread_answers_beside_the_rule_and_is_cached(pytester: pytest.Pytester) -> None:
    args = ("--tom-model=python:agent_model:model", "--tom-judge=python:judge_model:judge", "--tom-report=r.json")
    result = run(pytester, *args)
    recs, want = records(pytester), expected()
    assert {r.sample_id: r.outcome.value for r in recs} == want  # the outcomes are the rule's, judge or not
    assert {r.sample_id for r in recs if r.details.get("judge") == "True"} == {k for k, v in want.items() if v == "unparseable"}
    m = {x.name: x.value for x in BigToM().metrics(recs)}
    right = sum(v == "correct" for v in want.values())
    assert (m["judge.verdicts"], m["judge.true"], m["judge.accuracy"], m["accuracy"]) == (24, 24, (right + 24) / 96, right / 96)
    result.stdout.fnmatch_lines(["*accuracy with the judge, core conditions (micro)*"])
    report = json.loads((pytester.path / "r.json").read_text())
    # 24 asks, 4 distinct prompts: Dee's belief and action questions, each keyed to the aware or the unaware answer
    assert report["engine"]["scoring"]["judge"]["model_requests"] == 4
    run(pytester, *args)  # the second run: every judge request from the cache
    assert sum(map(int, (pytester.path / "judged.txt").read_text().split())) == 4
