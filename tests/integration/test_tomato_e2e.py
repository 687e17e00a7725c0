"""ToMATO end to end with pytester: items, marks, checks, the report's metrics computed by hand, runs, replay.

The model answers from a table (mental state, utterance) -> right / wrong / unreadable, reading
the fixture with the json module only (a loader bug cannot hide behind it). It finds the question
in the prompt, so it works for either layout. With several runs, the run is told by the seed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_tom.evals.tomato import ToMATO
from pytest_tom.framework.base import DataSource

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

TABLE_MODEL = '''
import json
import re
from pathlib import Path

QUESTIONS = {}
for rec in json.loads((Path(__DATA__) / "tomato.json").read_text()):
    QUESTIONS[rec["q"]] = (rec["mental_state"], int(rec["u_id"]), "ABCD"[rec["a_idx"]])
PLANS = __PLANS__
CALLS = Path("calls.txt")


def answer(prompt, seed):
    q = re.search(r"# Question ?\\n(.*?)\\n\\n# Options", prompt, re.S)[1]
    state, u, gold = QUESTIONS[q]
    plan = PLANS[0 if seed is None else seed - 42]
    what = plan[state][u]
    if what == "g":
        return "I am not sure."
    if what == "q":
        return "[,] I would say [" + gold + "]"
    letter = gold if what == "c" else "ABCD"[("ABCD".index(gold) + 1) % 4]
    return "So the answer is [" + letter + "]."


def model(conversations, settings):
    with CALLS.open("a") as f:
        f.write(f"{len(conversations)}\\n")
    return [answer(c[-1]["content"], settings.get("seed")) for c in conversations]


model.tom_fingerprint = "tomato-table:" + repr(PLANS)
'''

# u_id 0 and 2 are first order, 1 and 3 second order; 1 is false belief everywhere, 3 only for belief.
# c = right, w = wrong, g = no [A]-[D], q = "[,]" before the right letter (the official regex's quirk).
TABLE = {"belief": "cwcg", "intention": "cwwc", "desire": "cccc", "emotion": "wwcc", "knowledge": "cgcq"}
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")


def table(pytester: pytest.Pytester, *plans: dict[str, str]) -> str:
    source = (TABLE_MODEL.replace("__DATA__", repr(str(FIXTURES / "tomato" / "dataset")))
              .replace("__PLANS__", repr(list(plans or (TABLE,)))))
    pytester.makepyfile(tomato_table=source)
    pytester.syspathinsert()
    return "--tom-model=python:tomato_table:model"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, "--tom-benchmark=tomato", f"--tom-data-dir={FIXTURES}",
                              "--tom-set=tomato.partial=true", "--tom-report=report.json", *args)


def report(pytester: pytest.Pytester) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    data = json.loads((pytester.path / "report.json").read_text())
    return data["suites"][0], data["groups"], data


def approx(x: float) -> Any:
    return pytest.approx(x, abs=1e-12)


def test_metrics_checks_and_messages_equal_the_hand_computed_ones(pytester: pytest.Pytester) -> None:
    result = run(pytester, table(pytester), "-q", "--tom-detail=full")
    # 13 of 20 questions right (first order 8 of 10; second 5 of 10: FB 1 of 6, non-FB 4 of 4)
    result.assert_outcomes(passed=13 + 6, failed=7 + 1)
    suite, groups, _ = report(pytester)
    m = suite["metrics"]
    assert (m["n"], m["all"]["correct"], m["all"]["unparseable"]) == (20, 13, 2)
    assert {g: (c["n"], c["correct"]) for g, c in m["orders"].items()} == {
        "first": (10, 8), "second": (10, 5), "fb": (6, 1), "second_non_fb": (4, 4)}
    assert m["macro"]["fb"]["accuracy"] == approx(0.2) and m["fb_gap"] == approx(1 - 1 / 6)
    assert m["cells"]["knowledge"]["second"]["accuracy"] == approx(0.5)  # "[,] ... [D]" is read as D
    assert Counter(g["group_kind"] for g in groups) == {"false_belief_gap": 5, "personality_robustness": 2}
    # over all second-order questions, 4 of 4 against 1 of 6 is beyond 5 points even on ten questions
    # (Newcombe: 0.833 - sqrt((1 - 0.510)^2 + (0.564 - 0.167)^2) = 0.20); per mental state one of each is not
    verdicts = {(g["group_kind"], g["gid"]): g["outcome"] for g in groups}
    assert [k for k, v in verdicts.items() if v == "failed"] == [("false_belief_gap", "all")]
    fb_all = next(g for g in groups if g["gid"] == "all")
    assert fb_all["value"] == approx(5 / 6) and fb_all["details"]["ci95"][0] > 0.05
    result.stdout.fnmatch_lines([
        "*ToMATO false-belief gap (all mental states, second order): the model is right on +83.3 points more of "
        "the 4 non-false-belief questions than of the 6 false-belief ones*",
    ])
    result.stdout.fnmatch_lines([
        "ToMATO 2nd-order-belief-about-belief_K3Q7A_1 (belief, second order, false belief; tomato.json record 1): "
        "incorrect",
        "gold: [[]C]",
        "answer (first extraction): [[]D]",
        "  run 1: 'So the answer is [[]D].' -> [[]D]",
    ])
    result.stdout.fnmatch_lines([
        "tomato (subset all, vanilla, system prompt system, generate, first extraction; % right, one run): ALL 65.0 "
        "(n=20, micro over every question; FB questions are second-order ones, counted once)",
        "  micro per order: 1st 80.0 (n=10) | 2nd 50.0 (n=10) | FB 16.7 (n=6) | 2nd non-FB 100.0 (n=4)",
    ])


def test_official_extraction_keeps_the_comma_quirk(pytester: pytest.Pytester) -> None:
    run(pytester, table(pytester), "-q", "--tom-set=tomato.extraction=official")
    suite, _, data = report(pytester)
    m = suite["metrics"]
    assert (m["all"]["correct"], m["all"]["unparseable"]) == (12, 3)  # "[,] ... [D]" is no answer
    assert suite["settings"]["extraction"] == "official"


def test_sampled_runs_are_distinct_cache_entries_and_report_mean_and_std(pytester: pytest.Pytester) -> None:
    every, none = {s: "cccc" for s in TABLE}, {s: "wwww" for s in TABLE}
    args = (table(pytester, TABLE, every, none), "-q", "--tom-set=tomato.runs=3", "--tom-set=tomato.temperature=0.6",
            "--tom-set=tomato.top_p=0.9", "--tom-cache-dir=cache")
    run(pytester, *args)
    suite, _, data = report(pytester)
    m = suite["metrics"]
    assert m["runs"] == 3 and m["all"]["runs"] == [approx(0.65), 1.0, 0.0]
    assert m["all"]["std"] == approx((((0.65 - 0.55) ** 2 + 0.45 ** 2 + 0.55 ** 2) / 3) ** 0.5)
    assert len(data["responses"]) == 60
    calls = sum(int(x) for x in (pytester.path / "calls.txt").read_text().split())
    assert calls == 60
    # a second run answers every request from the cache: the model is not called again
    (pytester.path / "calls.txt").unlink()
    run(pytester, *args)
    assert not (pytester.path / "calls.txt").exists()
    assert report(pytester)[0]["metrics"]["all"]["runs"] == [approx(0.65), 1.0, 0.0]


def test_replayed_answers_reproduce_the_metrics(pytester: pytest.Pytester) -> None:
    run(pytester, table(pytester), "-q", "--tom-set=tomato.layout=reference", "--tom-set=tomato.system_prompt=none")
    first = report(pytester)[0]["metrics"]
    (pytester.path / "report.json").rename(pytester.path / "recorded.json")
    result = run(pytester, "--tom-model=replay:recorded.json", "-q", "--tom-set=tomato.layout=reference",
                 "--tom-set=tomato.system_prompt=none")
    result.assert_outcomes(passed=13 + 6, failed=7 + 1)
    assert report(pytester)[0]["metrics"] == first
    # another prompt is not in the recording: an error, never a guess
    result = run(pytester, "--tom-model=replay:recorded.json", "-q")
    assert result.parseoutcomes().get("error", 0) + result.parseoutcomes().get("errors", 0) >= 20


def test_loglikelihood_scoring(pytester: pytest.Pytester) -> None:
    run(pytester, "--tom-model=mock:first", "-q", "--tom-set=tomato.scoring=loglikelihood")
    suite, _, _ = report(pytester)
    assert suite["metrics"]["all"]["correct"] == 6  # "[A]" is always the likeliest; 6 golds are A


def expected_nodeids(mark: str, subset: str = "all") -> set[str]:
    bench = ToMATO({"partial": "true", "subset": subset})
    samples = bench.load(DataSource(root=FIXTURES, download=False, cache_dir=Path("unused-cache")))
    ids = {f"tomato::tomato[{s.id}]" for s in samples if mark in s.marks}
    ids |= {f"tomato::tomato_{d.kind}[{d.id}]" for d in bench.derived(samples) if mark in d.marks}
    return ids


@pytest.mark.parametrize("mark", ["neuroticism_high", "false_belief", "first_order", "emotion", "false_belief_gap",
                                  "personality_robustness", "agreeableness_low"])
def test_every_mark_selects_its_items(pytester: pytest.Pytester, mark: str) -> None:
    result = run(pytester, "--collect-only", "-q", "-m", f"tomato and {mark}")
    got = {line for line in result.outlines if line.startswith("tomato::")}
    assert got == expected_nodeids(mark) and got


def test_neuroticism_high_and_the_false_belief_file(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--collect-only", "-q", "-m", "tomato and neuroticism_high")
    assert len([line for line in result.outlines if line.startswith("tomato::tomato[")]) == 8
    result = run(pytester, "--collect-only", "-q", "--tom-set=tomato.subset=fb")
    lines = [line for line in result.outlines if line.startswith("tomato::")]
    assert len([x for x in lines if x.startswith("tomato::tomato[")]) == 6
    assert [x for x in lines if not x.startswith("tomato::tomato[")] == [
        "tomato::tomato_personality_robustness[second_order]"]


@pytest.mark.realdata
def test_the_real_false_belief_file_collects_806_items(pytester: pytest.Pytester, real_data_dir: Path) -> None:
    result = pytester.runpytest(*QUIET, "--tom-benchmark=tomato", f"--tom-data-dir={real_data_dir}",
                                "--tom-set=tomato.subset=fb", "--collect-only", "-q", "-m", "tomato and neuroticism_high")
    items = [line for line in result.outlines if line.startswith("tomato::tomato[")]
    assert len(items) == 204
    result = pytester.runpytest(*QUIET, "--tom-benchmark=tomato", f"--tom-data-dir={real_data_dir}",
                                "--tom-set=tomato.subset=fb", "--collect-only", "-q")
    lines = [line for line in result.outlines if line.startswith("tomato::")]
    assert len([x for x in lines if x.startswith("tomato::tomato[")]) == 806
    assert [x for x in lines if not x.startswith("tomato::tomato[")] == [
        "tomato::tomato_personality_robustness[second_order]"]
    # without a subset the whole release is asked for, and the message says what this folder holds
    result = pytester.runpytest(*QUIET, "--tom-benchmark=tomato", f"--tom-data-dir={real_data_dir}", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no tomato.json (subset 'all')*choose it with --tom-set tomato.subset=fb*"])
