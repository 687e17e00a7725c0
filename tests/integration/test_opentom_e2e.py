"""OpenToM end to end with pytester on the fixture: items, ids, marks, messages, decoding, the random and a python model.

The python model answers every question right except the attitude ones ("I cannot say": unparseable) and the
fine-location observer ones ("somewhere": a tie, wrong); it reads the gold by looking the question up in the fixture's
files with plain `json`. The records reach the test through the public `pytest_tom_results_ready` hook.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from helpers.records_hook import RECORDS_HOOK, read_records

from pytest_tom.evals.opentom import OpenToM

FIXTURES = Path(__file__).resolve().parents[1].parent / "fixtures"
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")

GOLD_MODEL = '''
import json
from pathlib import Path

DIR = Path(__DIR__)
GOLD = {}
for f in DIR.glob("*.json"):
    if not f.name.startswith("meta"):
        for qs in json.loads(f.read_text()).values():
            for q in qs:
                GOLD[q["question"].split("?")[0]] = q["answer"]


def model(conversations, settings):
    assert settings["max_new_tokens"] == 1024 and settings["temperature"] == 0 and settings["top_p"] == 1
    assert all(c[0]["content"] == "You are an expert in modeling other's mental state." for c in conversations)
    out = []
    for c in conversations:
        q = c[-1]["content"].split("Question: ")[1].split("?")[0]
        if "attitude" in q:
            out.append("I cannot say")
        elif "located precisely by the end" in q and ("Omar" in q or "Theo" in q) and "does" not in q:
            out.append("somewhere")
        else:
            out.append(GOLD[q] + ".")
    return out
'''

def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, "--tom-benchmark=opentom", f"--tom-data-dir={FIXTURES}",
                              "--tom-set=opentom.partial=true", "--tom-no-cache", *args)


def test_a_python_model_scores_by_the_official_rules(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(gold_model=GOLD_MODEL.replace("__DIR__", repr(str(FIXTURES / "opentom/data/opentom_data"))))
    pytester.makeconftest(RECORDS_HOOK)
    pytester.syspathinsert()
    result = run(pytester, "--tom-model=python:gold_model:model", "--tom-detail=full")
    result.assert_outcomes(passed=46 - 2 - 2, failed=4)
    recs = read_records(pytester)
    assert Counter(r.outcome.value for r in recs) == {"correct": 42, "incorrect": 2, "unparseable": 2}
    m = {x.name: x.value for x in OpenToM().metrics(recs)}
    assert m["attitude.unparseable"] == 2 and m["attitude.n_scored"] == 0 and m["attitude.corrupted_rate"] == 1.0
    # fine first order: 6 right, 2 ties (label 3 enters the label set with F1 0): label 1 tp 2 fn 1, label 2 tp 4 fn 1
    assert m["loc_fine.fo.accuracy"] == 6 / 8 and m["loc_fine.fo.macro_f1"] == pytest.approx((4 / 5 + 8 / 9 + 0) / 3)
    assert m["loc_coarse.fo.macro_f1"] == 1.0 and m["multihop.so.accuracy"] == 1.0
    assert (m["names_neither.fo"], m["names_neither.so"]) == (2, 0)  # both ties name neither place
    result.stdout.fnmatch_lines(["*fine location, fo: answers naming neither place (the official tie label: wrong) 2*"])
    result.stdout.fnmatch_lines(["*OpenToM 11111111-location_fg_fo-3 (location_fg_fo_new.json 11111111[[]3[]]): incorrect: "
                                 "names neither place*"])


def test_a_question_without_a_gold_is_asked_skipped_and_in_no_number(pytester: pytest.Pytester) -> None:
    data = pytester.path / "data"
    shutil.copytree(FIXTURES / "opentom", data / "opentom")
    fine = data / "opentom/data/opentom_data/location_fg_fo_new.json"
    release = json.loads(fine.read_text())
    release["11111111"][0]["answer"] = "a garage shlef"  # names neither place, as the real release's one defect
    fine.write_text(json.dumps(release))
    pytester.makepyfile(gold_model=GOLD_MODEL.replace("__DIR__", repr(str(fine.parent))))
    pytester.makeconftest(RECORDS_HOOK)
    pytester.syspathinsert()
    args = (*QUIET, "--tom-benchmark=opentom", f"--tom-data-dir={data}", "--tom-set=opentom.partial=true", "--tom-no-cache",
            "--tom-model=python:gold_model:model")
    result = pytester.runpytest(*args, "--tom-report=r.json", "-rs")
    result.assert_outcomes(passed=41, failed=4, skipped=1)  # as the fixture's run, less the question now without a gold
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] opentom:1: OpenToM 11111111-location_fg_fo-0 (location_fg_fo_new.json 11111111[[]0[]]): "
                                 "unscored: no scorable gold*"])
    recs = {r.sample_id: r for r in read_records(pytester)}
    unscored = recs["11111111-location_fg_fo-0"]
    assert (unscored.outcome.value, unscored.gold, unscored.parsed, unscored.responses) == ("unscored", None, 2, ("a garage shlef.",))
    m = {x.name: x.value for x in OpenToM().metrics(list(recs.values()))}
    assert (m["loc_fine.fo.no_gold"], m["loc_fine.fo.n_scored"], m["narrator_control"]) == (1, 7, 1.0)
    report = json.loads((pytester.path / "r.json").read_text())
    assert [i["outcome"] for i in report["items"] if i["qid"] == "11111111-location_fg_fo-0"] == ["unscored"]
    rows = {tuple(r["facets"].values()): r for t in report["suites"][0]["tables"] for r in t["rows"]}
    assert (rows[("narrator",)]["n"], rows[("narrator",)]["accuracy"]) == (3, 1.0)  # 4 narrator questions, one unscored
    assert (rows[()]["n"], rows[()]["correct"], rows[("loc_fine/fo",)]["n"]) == (45, 41, 7)
    # no gate counts it, and a baseline that holds no value for it still covers a run that asks it
    gated = pytester.runpytest(*args, "--tom-baseline-save=base.json", "--tom-threshold=opentom.perspective.narrator>=1")
    gated.stdout.fnmatch_lines(["tom_gate[[]opentom.perspective.narrator:point>=1[]] .*"])
    saved = json.loads((pytester.path / "base.json").read_text())["suites"][0]
    assert saved["items"]["11111111-location_fg_fo-0"]["outcome"] == "unscored"
    assert "11111111-location_fg_fo-0" not in saved["metrics"]["accuracy"]["ids"] and len(saved["metrics"]["accuracy"]["ids"]) == 45
    again = pytester.runpytest(*args, "--tom-baseline=base.json", "--tom-compare-fail=opentom.accuracy")
    again.stdout.fnmatch_lines(["tom_gate[[]opentom.accuracy:baseline[]] .*"])


def test_the_random_model_answers_from_each_label_space(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RECORDS_HOOK)
    result = run(pytester, "--tom-model=random:3")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 46 and "error" not in outcomes
    assert all(r.outcome.value in ("correct", "incorrect") for r in read_records(pytester))


@pytest.mark.parametrize(("marks", "count"), [
    ("opentom", 46), ("location", 20), ("location_fine", 12), ("fullness", 16), ("accessibility", 8), ("attitude", 2),
    ("first_order", 24), ("second_order", 20), ("narrator", 4), ("witnessed", 23), ("psychological", 2),
])
def test_marks_select_items(pytester: pytest.Pytester, marks: str, count: int) -> None:
    result = run(pytester, "--tom-model=random", "--collect-only", "-q", "-m", marks)
    assert sum(1 for line in result.stdout.lines if "::" in line) == count


def test_ids_are_key_stem_index(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--tom-model=random", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*opentom[[]11111111-location_cg_fo-0[]]", "*opentom[[]22222222-attitude-0[]]"])


WORSE_MODEL = '''
from gold_model import model as gold


def model(conversations, settings):
    return ["Maybe yes, maybe no" if '"Yes" or "No"' in c[-1]["content"] else a
            for c, a in zip(conversations, gold(conversations, settings))]
'''


def test_a_macro_f1_gate_bootstraps_narratives_against_a_baseline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(gold_model=GOLD_MODEL.replace("__DIR__", repr(str(FIXTURES / "opentom/data/opentom_data"))),
                        worse_model=WORSE_MODEL)
    pytester.syspathinsert()
    run(pytester, "--tom-model=python:gold_model:model", "--tom-baseline-save=base.json")
    saved = json.loads((pytester.path / "base.json").read_text())["suites"][0]["metrics"]
    assert saved["macro_f1.loc_coarse_fo"]["labels"] == [[0, 0], [0, 0], [0, 0], [1, 1]]
    same = run(pytester, "--tom-model=python:gold_model:model", "--tom-baseline=base.json",
               "--tom-compare-fail=opentom.macro_f1.*")
    same.stdout.fnmatch_lines(["tom_gate[[]opentom.macro_f1.loc_coarse_fo:baseline[]] .*"])
    assert "REGRESSION" not in same.stdout.str() and same.stdout.str().count("tom_gate[opentom.macro_f1.") == 11
    worse = run(pytester, "--tom-model=python:worse_model:model", "--tom-baseline=base.json",
                "--tom-compare-fail=opentom.macro_f1.*")
    worse.stdout.fnmatch_lines(["*opentom.macro_f1.loc_coarse_fo: baseline 100.0% -> candidate 0.0%*",
                                "macro-F1, paired cluster bootstrap (4 right->wrong, 0 wrong->right)*REGRESSION*"])
    worse.stdout.fnmatch_lines(["tom_gate[[]opentom.macro_f1.attitude:baseline[]] .*",
                                "tom_gate[[]opentom.macro_f1.loc_coarse_so:baseline[]] F*"])


def test_every_cell_order_perspective_and_the_coarse_fine_agreement_are_gateable(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(gold_model=GOLD_MODEL.replace("__DIR__", repr(str(FIXTURES / "opentom/data/opentom_data"))))
    pytester.syspathinsert()
    result = run(pytester, "--tom-model=python:gold_model:model", "--tom-baseline-save=base.json",
                 "--tom-threshold=opentom.cell.loc_fine_fo>=0.8", "--tom-threshold=opentom.perspective.narrator>=1",
                 "--tom-threshold=opentom.order.so>=1", "--tom-threshold=opentom.coarse_fine_agreement.fo>=0.9",
                 "--tom-threshold=opentom.coarse_fine_agreement.so>=1", "--tom-threshold=opentom.unparseable.attitude<=0.5",
                 "--tom-threshold=opentom.unparseable.loc_fine_fo<=0")
    saved = json.loads((pytester.path / "base.json").read_text())["suites"][0]["metrics"]
    assert {f"cell.{c}" for c in ("loc_coarse_fo", "loc_coarse_so", "loc_fine_fo", "loc_fine_so", "multihop_fo",
                                  "multihop_so", "attitude")} | {"order.fo", "order.so", "order.none"} <= set(saved)
    assert {"perspective.mover", "perspective.observer", "perspective.narrator"} <= set(saved)
    # a unit per character's coarse and fine twins: the observers' fine ties are unreadable, so they do not agree
    assert saved["coarse_fine_agreement.fo"]["values"] == [1.0, 0.0, 1.0, 0.0]
    assert saved["coarse_fine_agreement.so"]["values"] == [1.0] * 4
    # the attitude answers ("I cannot say") are unreadable, the fine ties are read (as the wrong label 3)
    assert saved["unparseable.attitude"]["values"] == [1.0, 1.0] and saved["unparseable.loc_fine_fo"]["values"] == [0.0] * 8
    # 6 of 8 first-order fine answers right (the two observer ties), every narrator and second-order answer right
    result.stdout.fnmatch_lines(["tom_gate[[]opentom.cell.loc_fine_fo:point>=0.8[]] F*",
                                 "tom_gate[[]opentom.perspective.narrator:point>=1[]] .*",
                                 "tom_gate[[]opentom.order.so:point>=1[]] .*",
                                 "tom_gate[[]opentom.coarse_fine_agreement.fo:point>=0.9[]] F*",
                                 "tom_gate[[]opentom.coarse_fine_agreement.so:point>=1[]] .*",
                                 "tom_gate[[]opentom.unparseable.attitude:point<=0.5[]] F*",
                                 "tom_gate[[]opentom.unparseable.loc_fine_fo:point<=0[]] .*",
                                 "*opentom.cell.loc_fine_fo = 75.0%*", "*opentom.coarse_fine_agreement.fo = 50.0%*"])
