"""ToMBench against the real release in $TOM_DATA_DIR (skipped when it is unset)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pytest_tom.engine import Engine
from pytest_tom.evals.tombench import ToMBench
from pytest_tom.evals.tombench.metrics import aggregate
from pytest_tom.framework.base import DataSource
from pytest_tom.models.base import CallableModel

TASK_Q = {"uot": 300, "sit": 200, "pst": 100, "fbt": 600, "ast": 200, "ht": 103, "sst": 407, "frt": 560}
TASK_STORIES = {"uot": 100, "sit": 100, "pst": 100, "fbt": 100, "ast": 100, "ht": 93, "sst": 201, "frt": 140}
# Table 18 #Q per canonical ability.
ABILITY_Q = {
    "Typical emotional reactions": 100, "Atypical emotional reactions": 100, "Discrepant emotions": 40, "Mixed emotions": 40,
    "Hidden emotions": 80, "Moral emotions": 40, "Emotion regulation": 20, "Multiple desires": 20,
    "Desires influence on actions/emotions": 100, "Desire-action contradiction": 40, "Discrepant desires": 20,
    "Discrepant intentions": 40, "Prediction of actions": 20, "Intentions explanations": 260, "Completion of failed actions": 20,
    "Knowledge-pretend play links": 30, "Percepts-knowledge links": 40, "Information-knowledge links": 200,
    "Knowledge-attention links": 20, "Content false beliefs": 200, "Location false beliefs": 200, "Identity false beliefs": 40,
    "Second-order beliefs": 200, "Beliefs based action/emotions": 142, "Sequence false beliefs": 100, "Irony/Sarcasm": 26,
    "Egocentric lies": 40, "White lies": 40, "Involuntary lies": 42, "Humor": 40, "Faux pas": 560,
}
CATEGORY_Q = {"Emotion": 420, "Desire": 180, "Intention": 340, "Knowledge": 290, "Belief": 882, "Non-Literal Communication": 748}

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def questions(request: pytest.FixtureRequest):
    import os

    root = os.environ.get("TOM_DATA_DIR")
    if not root:
        pytest.skip("TOM_DATA_DIR is not set to the real benchmark data")
    bench = ToMBench()
    return bench, bench.load(DataSource(Path(root), False, Path(root)))


def test_inventory_matches_the_paper_tables(questions) -> None:
    bench, qs = questions
    for lang in ("en", "zh"):
        mine = [q for q in qs if q.facets["language"] == lang]
        assert len(mine) == 2860
        assert {k: v for k, v in Counter(q.facets["task"] for q in mine).items() if k != "extra"} == TASK_Q
        assert Counter(q.facets["task"] for q in mine)["extra"] == 390
        assert dict(Counter(q.facets["ability"] for q in mine)) == ABILITY_Q
        assert dict(Counter(q.facets["category"] for q in mine)) == CATEGORY_Q
    stories = Counter((g.facets["language"], g.facets["task"]) for g in bench.derived(qs))
    assert {t: n for (lang, t), n in stories.items() if lang == "en"} == TASK_STORIES


def test_release_defects_are_handled(questions) -> None:
    _, qs = questions
    by_id = {q.id: q for q in qs}
    # D2: the gold stored as "A. " is normalised.
    assert by_id["en-knowledge_attention_links-0011"].gold == "A"
    # D5: SST row 292 (0-based) is binary in Chinese, 4-option in English, and flagged.
    assert len(by_id["zh-strange_story_task-0293"].choices) == 2
    assert len(by_id["en-strange_story_task-0293"].choices) == 4
    assert "option count" in by_id["en-strange_story_task-0293"].defect
    # D4: FRT blocks of 4 reproduce the paper's 140 stories; the two malformed blocks are flagged.
    assert sum(1 for q in qs if q.facets["task"] == "frt" and q.defect and q.facets["language"] == "en") == 8
    # P5: binary items come from NaN options, in both languages.
    binary = Counter((q.facets["language"], q.facets["task"]) for q in qs if q.facets["qtype"] == "two_choice")
    assert binary[("zh", "frt")] == 280 and binary[("en", "frt")] == 280
    assert binary[("zh", "sst")] == 204 and binary[("en", "sst")] == 203


def test_constant_answer_model_sits_at_chance_under_shuffling_and_at_gold_share_without(questions) -> None:
    """R5: the harness's own self-test of shuffling and back-mapping."""
    _, qs = questions
    en = [q for q in qs if q.facets["language"] == "en"]
    always_a = CallableModel(lambda batch, settings: ["[[A]]"] * len(batch))
    for scheme, check in (("random", "chance"), ("none", "gold_share")):
        bench = ToMBench({"languages": "en", "permutations": scheme})
        results = Engine(always_a).run({q.id: (q, bench.program(q)) for q in en})
        metrics = aggregate(list(results.values()))["languages"]["en"]
        if check == "chance":
            assert 0.15 < metrics["tasks"]["fbt"]["accuracy"] < 0.35
            assert 0.28 < metrics["tasks"]["frt"]["accuracy"] < 0.47
        else:
            assert metrics["abilities"]["Multiple desires"] == pytest.approx(15 / 20)
            gold_a = sum(q.gold == "A" for q in en if q.facets["task"] == "sst") / 407
            assert metrics["tasks"]["sst"]["accuracy"] == pytest.approx(gold_a)


@pytest.mark.slow
def test_full_run_both_languages_then_cached_replay(pytester: pytest.Pytester, real_data_dir: Path, tmp_path: Path) -> None:
    args = [
        "--tom-benchmark=tombench", f"--tom-data-dir={real_data_dir}", "--tom-model=random:0", f"--tom-cache-dir={tmp_path}",
        "-q", "--tb=no", "-p", "no:cacheprovider", "--tom-report=full.json",
    ]
    first = pytester.runpytest(*args)
    first.stdout.fnmatch_lines(["engine: 5720 questions, 28600 requests (* unique), 0 from cache, * sent to the model*"])
    second = pytester.runpytest(*args)
    second.stdout.fnmatch_lines(["engine: 5720 questions, 28600 requests (* unique), * from cache, 0 sent to the model*"])
    assert first.parseoutcomes() == second.parseoutcomes()
    total = sum(v for k, v in second.parseoutcomes().items() if k in {"passed", "failed", "xfailed", "xpassed"})
    assert total == 2 * 2860 + 2 * 934


@pytest.mark.slow
def test_a_perfect_model_scores_100_on_the_real_release(pytester: pytest.Pytester, real_data_dir: Path, oracle_conftest_for) -> None:
    """Every shuffle, back-mapping and vote is right if a model that knows the gold never fails."""
    oracle_conftest_for(real_data_dir)
    result = pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={real_data_dir}", "--tom-no-cache", "-q", "--tb=short")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0
    assert outcomes["passed"] + outcomes.get("xpassed", 0) == 2 * 2860 + 2 * 934
    result.stdout.fnmatch_lines(["*tombench en (paper aggregation): task AVG 100.0 | ability AVG 100.0 | coherent AVG 100.0*"])
