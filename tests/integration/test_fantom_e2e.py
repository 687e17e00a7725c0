"""FANToM end to end with pytester: items, set assertions, -m on every mark, metrics equal to upstream's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.shown import missing

from pytest_tom.evals.fantom import FANToM
from pytest_tom.framework.base import DataSource

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# A scripted model that reads the gold answers from a FANToM file and answers every prompt right,
# except for the questions named in OVERRIDES (keys are qids without the context, "@wrong" picks
# the distractor). The fingerprint changes with the overrides, so runs in one test never share cache.
ORACLE = '''
import json
import re
from pathlib import Path

from pytest_tom.framework.base import slug

SETS = json.loads(Path(__DATA__).read_text())
OVERRIDES = __OVERRIDES__
BY_FACT = {s["factQA"]["question"]: s for s in SETS}
BY_BELIEF = {b["question"]: (s, i) for s in SETS for i, b in enumerate(s["beliefQAs"])}
QUESTION = re.compile(r"\\n\\n(?:Target: (?P<target>[^\\n]*)\\n|Information: (?P<info>[^\\n]*)\\n)?Question: (?P<q>[^\\n]*)")


def key_gold_wrong(prompt):
    prompt = prompt.split(" Let's think step by step.")[0]  # CoT: both calls carry the original question
    m = QUESTION.search(prompt)
    q = m["q"]
    if prompt.endswith("Choose an answer from above:"):
        s, i = BY_BELIEF[q]
        option_a = re.search(r"^\\(a\\) (.*)$", prompt, re.M)[1]
        gold = "(a)" if option_a == s["beliefQAs"][i]["correct_answer"] else "(b)"
        return f"{s['set_id']}-belief_choice-{i + 1}", gold, "(b)" if gold == "(a)" else "(a)"
    if m["target"] or m["info"]:
        fact = m["target"] or next(f for f in BY_FACT if m["info"].startswith(f + " "))
        s = BY_FACT[fact]
        fam, lst, bins = (("answerability", "answerabilityQA_list", "answerabilityQAs_binary") if m["target"]
                          else ("info_accessibility", "infoAccessibilityQA_list", "infoAccessibilityQAs_binary"))
        if q.endswith(" Answer yes or no."):
            question = q.removesuffix(" Answer yes or no.")
            b = next(x for x in s[bins] if x["question"] == question)
            char = question.removeprefix("Does ").split(" know")[0]
            gold = "Yes" if b["correct_answer"] == "yes" else "No"
            return f"{s['set_id']}-{fam}_yn-{slug(char)}", gold, "No" if gold == "Yes" else "Yes"
        lq = s[lst]
        return f"{s['set_id']}-{fam}_list", ", ".join(lq["correct_answer"]), ", ".join(lq["correct_answer"] + lq["wrong_answer"])
    if q in BY_FACT:
        s = BY_FACT[q]
        return f"{s['set_id']}-fact", s["factQA"]["correct_answer"], s["factQA"]["wrong_answer"]
    s, i = BY_BELIEF[q]
    b = s["beliefQAs"][i]
    return f"{s['set_id']}-belief_free-{i + 1}", b["correct_answer"], b["wrong_answer"]


def answer(prompt):
    key, gold, wrong = key_gold_wrong(prompt)
    out = OVERRIDES.get(key, gold)
    return wrong if out == "@wrong" else out


def model(conversations, settings):
    return [answer(c[-1]["content"]) for c in conversations]


model.tom_fingerprint = "fantom-oracle:" + repr(sorted(OVERRIDES.items()))
'''


# A bag-of-words embedder in pure Python: cosine similarities a reader can compute by hand, and no torch
# import inside pytester's in-process runs (pytester drops modules imported during a run, and importing
# torch a second time in one process crashes it).
BOW = '''
import re

VOCAB = {}
CALLS = []


def embed(texts):
    CALLS.append(len(texts))
    out = []
    for text in texts:
        counts = {}
        for word in re.findall(r"[a-z']+", text.lower()):
            i = VOCAB.setdefault(word, len(VOCAB))
            counts[i] = counts.get(i, 0) + 1
        vec = [0.0] * len(VOCAB)
        for i, c in counts.items():
            vec[i] = float(c)
        out.append(vec)
    return out
'''


def bow(pytester: pytest.Pytester) -> str:
    pytester.makepyfile(fantom_bow=BOW)
    pytester.syspathinsert()
    return "--tom-set=fantom.embedder=python:fantom_bow:embed"


@pytest.fixture(scope="module")
def minilm() -> str:
    """Import sentence-transformers and load the bundled MiniLM in this process, before any pytester run.

    Inner runs then reuse the loaded model (one per process) instead of importing torch themselves.
    """
    pytest.importorskip("sentence_transformers")
    from pytest_tom.models import embedding

    model = embedding.load(embedding.resolve("minilm"))
    model.encode(["warm up"])
    return "--tom-set=fantom.embedder=minilm"


def oracle(pytester: pytest.Pytester, overrides: dict[str, str] | None = None,
           data: Path = FIXTURES / "fantom" / "fantom_v1.json") -> str:
    source = ORACLE.replace("__DATA__", repr(str(data))).replace("__OVERRIDES__", repr(overrides or {}))
    pytester.makepyfile(fantom_oracle=source)
    pytester.syspathinsert()
    return "--tom-model=python:fantom_oracle:model"


# Inner runs need neither the cache provider nor hypothesis (whose plugin imports hypothesis at the end of
# every in-process run, as pytester drops modules a run imported).
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")


def run(pytester: pytest.Pytester, *args: str, data_dir: Path = FIXTURES) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, "--tom-benchmark=fantom", f"--tom-data-dir={data_dir}", *args)


def assert_lines(result: pytest.RunResult, expected: list[str]) -> None:
    """Exact lines, in order (fnmatch would read "[Y/N]" as a character class)."""
    lines = result.outlines
    pos = 0
    for line in expected:
        found = next((i for i in range(pos, len(lines)) if lines[i] == line), None)
        assert found is not None, f"{line!r} not in the output after line {pos}"
        pos = found + 1


def failed_ids(result: pytest.RunResult) -> set[str]:
    return {line.split()[1] for line in result.outlines if line.startswith("FAILED ")}


def expected_nodeids(mark: str, **settings: Any) -> set[str]:
    """What -m <mark> must select, computed from the benchmark itself."""
    bench = FANToM(settings)
    samples = bench.load(DataSource(root=FIXTURES, download=False, cache_dir=Path("unused-cache")))
    ids = {f"fantom::fantom[{s.id}]" for s in samples if mark in s.marks}
    ids |= {f"fantom::fantom_{d.kind}[{d.id}]" for d in bench.derived(samples) if mark in d.marks}
    return ids


# --- runs -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_random_baseline_runs_both_contexts(pytester: pytest.Pytester, minilm: str) -> None:
    """The default embedder (auto) falls back to the bundled MiniLM, and the report says so."""
    result = run(pytester, "--tom-model=random:0", "--tom-set=fantom.contexts=short,full", "--tom-report=report.json", "-q")
    outcomes = result.parseoutcomes()
    assert "error" not in outcomes and "errors" not in outcomes
    # 164 questions + 46 set assertions + 94 per-character checks (49 all-correct, 45 consistency)
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 304
    result.stdout.fnmatch_lines([
        "*pytest-tom summary*",
        "  fantom (Dist. is comparable to the paper only with its embedder): embedder sentence-transformers/all-MiniLM-L6-v2*",
        "  fantom short context, upstream's fantom report (*",
        "    inaccessible:set:ALL[*] * | inaccessible:set:ALL * | inaccessible:belief:multiple-choice *",
        "  fantom short context, upstream's control_task report (*",
        "  fantom full context, upstream's fantom report (*",
        "  all_star groups: */13 passed*",
    ])
    report = json.loads((pytester.path / "report.json").read_text())
    jsonschema = pytest.importorskip("jsonschema")
    from pytest_tom.output.report import schema

    jsonschema.validate(report, schema())
    suite = report["suites"][0]
    assert suite["settings"]["contexts"] == "short,full"
    metrics = suite["metrics"]
    assert metrics["embedder"] == "sentence-transformers/all-MiniLM-L6-v2" and not metrics["embedder_is_paper_model"]
    assert set(metrics["contexts"]) == {"short", "full"}
    assert {"inaccessible:set:ALL*", "inaccessible:belief:distance", "inaccessible:answerability:binary-f1",
            "fact_word-f1", "inaccessible:set:character_answer_consistency"} <= set(metrics["contexts"]["short"]["fantom"])
    assert "accessible:set:ALL*" in metrics["contexts"]["short"]["control_task"]
    kinds = Counter(g["group_kind"] for g in report["groups"])
    assert kinds == {"all_star": 13, "all_tom": 13, "answerability_all": 10, "info_accessibility_all": 10,
                     "character_all": 49, "consistency": 45}
    nodeids = {g["nodeid"] for g in report["groups"]}
    assert {"fantom::fantom_all_star[short-0-0-0-inaccessible]",
            "fantom::fantom_consistency[full-0-0-0-inaccessible-kailey]"} <= nodeids
    assert len(report["items"]) == 164  # per-character checks are derived results, not questions
    assert "checks" not in metrics["contexts"]["short"]["extra"]
    items = {i["qid"]: i for i in report["items"]}
    assert items["short-0-0-0-belief_free-1"]["details"]["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.parametrize("parsing", ["official", "strict"])
def test_a_perfect_model_passes_every_item_and_assertion(pytester: pytest.Pytester, parsing: str) -> None:
    result = run(pytester, oracle(pytester), bow(pytester), "--tom-set=fantom.contexts=short,full",
                 f"--tom-set=fantom.parsing={parsing}", "-q")
    result.assert_outcomes(passed=304)


def test_free_responses_are_embedded_in_one_batch(pytester: pytest.Pytester) -> None:
    """All free-response answers of a run wait for one engine wave and are embedded in one call."""
    pytester.makeconftest("""
        import fantom_bow

        def pytest_sessionfinish(session):
            print("encode calls:", fantom_bow.CALLS)
    """)
    result = run(pytester, oracle(pytester, {"0-0-0-belief_free-2": "Kailey has no idea."}), bow(pytester), "-q", "-s")
    # 11 answers (10 verbatim references, embedded once each) and 22 reference answers: 23 distinct texts
    result.stdout.fnmatch_lines(["*encode calls: [[]23[]]*"])
    result.assert_outcomes(passed=140 - 3, failed=3)  # the item, its ALL* and its character check


PROMPTS = '''
import json
from pathlib import Path

import fantom_oracle


def model(conversations, settings):
    with Path(__file__).with_name("prompts.jsonl").open("a") as f:
        for c in conversations:
            f.write(json.dumps(c[-1]["content"]) + "\\n")
    return fantom_oracle.model(conversations, settings)


model.tom_fingerprint = fantom_oracle.model.tom_fingerprint
'''


@pytest.mark.parametrize("evaluator", ["2024", "2023"])
def test_chain_of_thought_makes_two_calls_per_question(pytester: pytest.Pytester, evaluator: str) -> None:
    """2024 (eval_fantom.py@1cae6fa's batch path): "Answer:" stripped, the reasoning sent raw; 2023 the per-prompt
    path: the trigger after "Answer:", the reasoning parsed. Both make two calls per question."""
    oracle(pytester)
    pytester.makepyfile(fantom_prompts=PROMPTS)
    result = run(pytester, "--tom-model=python:fantom_prompts:model", bow(pytester), "--tom-set=fantom.prompt=cot",
                 f"--tom-set=fantom.evaluator={evaluator}", "-q")
    result.assert_outcomes(passed=140)
    result.stdout.fnmatch_lines(["engine: 77 questions, * requests (154 unique)*"])  # 77 questions x 2 calls
    sent = [json.loads(line) for line in (pytester.path / "prompts.jsonl").read_text().splitlines()]
    fact = next(p for p in sent if "Question: What is the breed of Linda's dog?" in p and "Therefore" not in p)
    second = next(p for p in sent if p.startswith(fact + " ") and p.endswith("\n\nTherefore, the answer is:"))
    reasoning = second.removeprefix(fact + " ").removesuffix("\n\nTherefore, the answer is:")
    assert reasoning == "Linda's dog Sunny is a golden retriever."  # the oracle's answer: nothing to parse on either path
    trigger = "\n Let's think step by step." if evaluator == "2024" else "\nAnswer: Let's think step by step."
    assert fact.endswith("Question: What is the breed of Linda's dog?" + trigger)


def test_the_current_evaluator_scores_the_control_task_over_whole_sets(pytester: pytest.Pytester) -> None:
    """The default (2024): only 1-0-0 is fully accessible in the short context, and it fails; 0-0-1 (mixed) no longer
    counts. Both rules stay in the report under keys that name them; every other key is the 2023 one."""
    result = run(pytester, oracle(pytester, HAND_OVERRIDES), bow(pytester), "--tom-report=r.json", "-q")
    suite = json.loads((pytester.path / "r.json").read_text())["suites"][0]
    assert suite["settings"]["evaluator"] == "2024" and suite["metrics"]["evaluator"] == "2024"
    short = suite["metrics"]["contexts"]["short"]
    assert_report(short["fantom"], HAND_SET)
    assert_report(short["control_task"], {**HAND_CONTROL, "accessible:set:ALL*": 0.0, "accessible:set:ALL": 0.0,
                                          "accessible:set:ALL*:rev2023": 50.0, "accessible:set:ALL:rev2023": 50.0,
                                          "accessible:set:ALL*:rev2024": 0.0, "accessible:set:ALL:rev2024": 0.0})
    assert short["extra"]["accessible"]["sets_all_accessible"] == 1 and short["extra"]["accessible"]["units_rev2024"] == 1
    assert not missing(result.stdout.str(), "evaluator 2024", "accessible:set:ALL* 0.0",
                       "accessible:set:ALL*:rev2023 50.0", "accessible:set:ALL*:rev2024 0.0")
    run(pytester, oracle(pytester, HAND_OVERRIDES), bow(pytester), "--tom-set=fantom.aggregation=part",
        "--tom-set=fantom.evaluator=current", "--tom-report=p.json", "-q")
    part = json.loads((pytester.path / "p.json").read_text())["suites"][0]["metrics"]
    assert part["evaluator"] == "2024"
    assert part["contexts"]["short"]["control_task"]["accessible:set:ALL*"] == 0.0
    assert part["contexts"]["short"]["extra"]["accessible"]["units_rev2024"] == 1  # part 1-0, through set 1-0-0


def test_a_selection_cannot_make_a_mixed_set_whole(pytester: pytest.Pytester) -> None:
    """Only 0-0-1's accessible questions selected: 2024 keeps no set (null, upstream's NaN), 2023 scores it."""
    run(pytester, oracle(pytester), bow(pytester), "-k", "short-0-0-1", "-m", "accessible", "--tom-report=r.json", "-q")
    control = json.loads((pytester.path / "r.json").read_text())["suites"][0]["metrics"]["contexts"]["short"]["control_task"]
    assert control["accessible:set:ALL*"] is None and control["accessible:set:ALL"] is None
    assert control["accessible:set:ALL*:rev2023"] == 100.0


def test_one_wrong_answer_fails_exactly_its_set(pytester: pytest.Pytester) -> None:
    result = run(pytester, oracle(pytester, {"0-0-0-answerability_yn-kailey": "Yes, she knows."}), bow(pytester), "-q", "--tom-detail=full")
    assert failed_ids(result) == {
        "fantom::fantom[short-0-0-0-answerability_yn-kailey]",
        "fantom::fantom_all_star[short-0-0-0-inaccessible]",
        "fantom::fantom_all_tom[short-0-0-0-inaccessible]",
        "fantom::fantom_answerability_all[short-0-0-0-inaccessible]",
        "fantom::fantom_character_all[short-0-0-0-inaccessible-kailey]",
        "fantom::fantom_consistency[short-0-0-0-inaccessible-kailey]",
    }
    result.stdout.fnmatch_lines([
        "all_star group short-0-0-0-inaccessible: 1 of 16 questions failed",
        "  short-0-0-0-answerability_yn-kailey: incorrect (answer 'yes', gold 'no'): says Kailey knows, but Kailey does not*",
    ])
    assert_lines(result, [
        "FANToM AnswerabilityQ[Y/N], set 0-0-0 (short context, inaccessible; Kailey missed part of it): incorrect",
        "question: Does Kailey know the precise correct answer to this question?",
        "gold: no",
        "response: 'Yes, she knows.'",
        "parsed (official): yes",
        "why: says Kailey knows, but Kailey does not (false positive: includes an unaware character)",
    ])
    assert_lines(result, [
        "FANToM per-character check (consistency) for Kailey, 0-0-0 (short context, inaccessible): the answers "
        "disagree about whether the character knows",
        "  short-0-0-0-answerability_yn-kailey AnswerabilityQ[Y/N]: said yes, gold no -> knows",
    ])


def test_a_free_response_that_leaks_the_fact_fails_all_star_only(pytester: pytest.Pytester) -> None:
    """ALL excludes the free-response belief, ALL* does not: the paper's two set scores."""
    result = run(pytester, oracle(pytester, {"1-1-0-belief_free-1": "@wrong"}), bow(pytester), "-q", "--tom-detail=full")
    assert failed_ids(result) == {
        "fantom::fantom[short-1-1-0-belief_free-1]",
        "fantom::fantom_all_star[short-1-1-0-inaccessible]",
        "fantom::fantom_character_all[short-1-1-0-inaccessible-omar]",
    }
    result.stdout.fnmatch_lines([
        "why: the answer is closer to the omniscient-view answer (cosine 1.000) than to the PersonX-centric one *",
        "all_star group short-1-1-0-inaccessible: 1 of 14 questions failed",
        "  short-1-1-0-belief_free-1: incorrect (answer 'omniscient-view', gold 'personx-centric')*",
    ])


# --- selection --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mark", sorted(FANToM.mark_docs))
def test_every_mark_selects_exactly_its_items(pytester: pytest.Pytester, mark: str) -> None:
    result = run(pytester, "--tom-model=random", "--tom-set=fantom.contexts=short,full", "--collect-only", "-q", "-m", mark)
    collected = {line for line in result.outlines if line.startswith("fantom")}
    expected = expected_nodeids(mark, contexts="short,full")
    assert expected, f"no item carries {mark}"
    assert collected == expected


def test_mark_expressions_combine(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--tom-model=random", "--collect-only", "-q", "-m",
                 "fantom and belief and second_order and not cyclic and inaccessible")
    collected = {line for line in result.outlines if line.startswith("fantom")}
    assert collected == {
        "fantom::fantom[short-0-0-0-belief_free-3]", "fantom::fantom[short-0-0-0-belief_choice-3]",
        "fantom::fantom[short-1-0-1-belief_free-2]", "fantom::fantom[short-1-0-1-belief_choice-2]",
    }


def test_partial_selection_skips_set_assertions_with_a_reason(pytester: pytest.Pytester) -> None:
    result = run(pytester, oracle(pytester), bow(pytester), "-m", "fantom and not yes_no", "-rs", "--tom-report=r.json")
    result.stdout.fnmatch_lines([
        "SKIPPED *all_star group short-0-0-0-inaccessible: only 8 of 16 questions are selected; a consistency "
        "assertion is never computed on a partial group",
    ])
    report = json.loads((pytester.path / "r.json").read_text())
    ran = {g["gid"] + "/" + g["group_kind"] for g in report["groups"] if g["outcome"] != "skipped"}
    # the control belief questions of 0-0-1 have no yes/no question: that set's assertions and Sally's
    # all-correct check (beliefs only) are complete and run
    assert ran == {"short-0-0-1-accessible/all_star", "short-0-0-1-accessible/all_tom",
                   "short-0-0-1-accessible-sally/character_all"}
    outcomes = result.parseoutcomes()
    # the other 20 of the short context's 22 set assertions (6 ALL*, 6 ALL, 10 per family) and the other 40 of its
    # 41 per-character checks hold yes/no questions
    assert outcomes["skipped"] == 60
    # and set-level metrics are left out instead of computed on partial sets
    extra = report["suites"][0]["metrics"]["contexts"]["short"]["extra"]["inaccessible"]
    assert extra["complete_units"] == 0 and extra["incomplete_units"] == 4
    assert report["suites"][0]["metrics"]["contexts"]["short"]["fantom"]["inaccessible:set:ALL*"] is None


def test_suite_declared_in_a_test_module(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_tom="""
        import pytest_tom

        fantom_full = pytest_tom.suite("fantom", contexts="full", embedder="none", aggregation="conversation")
    """)
    result = pytester.runpytest(*QUIET, "--tom-model=random", f"--tom-data-dir={FIXTURES}", "--collect-only", "-q",
                                "-m", "all_tom")
    collected = {line for line in result.outlines if line.startswith("test_tom.py")}
    # conversation aggregation: one ALL assertion per conversation and scenario, nested under the suite
    assert collected == {
        "test_tom.py::fantom_full::fantom_all_tom[full-0-inaccessible]",
        "test_tom.py::fantom_full::fantom_all_tom[full-1-inaccessible]",
        "test_tom.py::fantom_full::fantom_all_tom[full-0-accessible]",
        "test_tom.py::fantom_full::fantom_all_tom[full-1-accessible]",
    }


def test_embedder_none_drops_free_response_questions(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--tom-model=random", "--tom-set=fantom.embedder=none", "--tom-report=r.json", "-q")
    report = json.loads((pytester.path / "r.json").read_text())
    types = Counter(i["facets"]["question_type"] for i in report["items"])
    assert "belief_free" not in types and types["belief_choice"] == 11
    assert "all_star" not in {g["group_kind"] for g in report["groups"]}
    metrics = report["suites"][0]["metrics"]
    assert metrics["embedder"] is None
    assert metrics["contexts"]["short"]["fantom"]["inaccessible:belief:distance"] is None
    assert result.ret == 1


def test_missing_data_and_bad_settings_are_reported(pytester: pytest.Pytester) -> None:
    empty = pytester.mkdir("empty")
    result = run(pytester, "--tom-model=random", data_dir=empty)
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: *FANToM data not found; looked in *empty/fantom/fantom_v1.json*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = run(pytester, "--tom-model=random", "--tom-set=fantom.aggregation=conversation")
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: *aggregation=conversation needs contexts=full*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = run(pytester, "--tom-model=random", "--tom-set=fantom.evaluator=2022")
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: *fantom setting evaluator='2022': '2022' is not one of 2024, 2023, "
                                 "current, paper*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


MISSING_EMBEDDER = "--tom-set=fantom.embedder=sentence-transformers/no-such-embedder"
"""Not in any Hugging Face cache, and offline: resolving it fails as a missing MiniLM package does."""


def test_collect_only_needs_no_embedder(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--tom-model=random", MISSING_EMBEDDER, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["fantom::fantom[short-0-0-0-belief_free-1]"])


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_run_without_its_embedder_stops_before_any_request(pytester: pytest.Pytester, workers: str | None) -> None:
    pytester.makepyfile(asked="""
        from pathlib import Path

        def model(conversations, settings):
            Path(__file__).with_name("asked.txt").write_text("asked")
            return ["x"] * len(conversations)
    """)
    pytester.syspathinsert()
    xdist = ("-n", workers) if workers else ()
    result = run(pytester, "--tom-model=python:asked:model", MISSING_EMBEDDER, *xdist)
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: *no-such-embedder* is not in the local Hugging Face cache*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR and not (pytester.path / "asked.txt").exists()


def test_markers_and_options_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*QUIET, "--markers", "--tom-model=random")  # facet marks are registered where pytest-tom runs
    result.stdout.fnmatch_lines(["@pytest.mark.yes_no: *", "@pytest.mark.all_star: FANToM ALL* assertion*"])
    result = pytester.runpytest(*QUIET, "--tom-set", "list")
    result.stdout.fnmatch_lines(["*fantom.contexts=short|full*", "*fantom.evaluator=2024|2023|current|paper*",
                                 "*fantom.embedder=*"])


# --- metrics equal to the official evaluator ------------------------------------------------------

# Short context of the fixture, answered by the oracle except for these answers:
HAND_OVERRIDES = {
    "0-0-0-fact": "A golden retriever.",
    "1-0-0-fact": "Ceviche.",
    "1-0-1-fact": "Coca tea every morning.",
    "1-1-0-fact": "She learned to make ramen from scratch.",
    "0-0-0-belief_free-2": "Linda believes that Kailey does not know.",
    "0-0-1-belief_free-1": "@wrong",
    "1-0-0-belief_free-2": "@wrong",
    "1-1-0-belief_choice-1": "@wrong",
    "1-0-1-answerability_yn-victor": "Yes",
    "1-0-1-info_accessibility_list": "Omar, Priya, Hannah, Victor",
    "1-1-0-answerability_list": "Hannah, Priya",
    "1-1-0-answerability_yn-omar": "I am not sure.",
    "1-0-0-info_accessibility_yn-victor": "No",
}

# Inaccessible sets (short context): 0-0-0, 0-0-1, 1-0-1, 1-1-0. Control (accessible) units: 0-0-1 (its
# second-order belief only) and 1-0-0. Values are upstream's: round(v, 3) * 100.
HAND_SET = {
    # ALL*: 0-0-0 all right; 0-0-1 free belief 1 wrong; 1-0-1 Victor y/n + info list wrong; 1-1-0 choice 1,
    # answerability list and Omar y/n wrong -> 1/4
    "inaccessible:set:ALL*": 25.0,
    # ALL drops the free-response beliefs: 0-0-0 and 0-0-1 pass -> 2/4
    "inaccessible:set:ALL": 50.0,
    # choice: 8 items, 1-1-0 #1 wrong -> 7/8
    "inaccessible:belief:multiple-choice": 87.5,
    # free response: 8 items, 0-0-1 #1 is the omniscient answer verbatim -> 7/8
    "inaccessible:belief:distance": 87.5,
    # token F1 over the 7 judged correct: six verbatim (1.0) and "Linda believes that Kailey does not know."
    # against the 12-token gold: 6 shared of 7 ("know." != "know"): P 6/7, R 6/12 -> F1 12/19;
    # (6 + 12/19) / 7 = 18/19 = 0.947 -> 94.7
    "inaccessible:belief_true_word-f1": 94.7,
    # answerability All: 0-0-0, 0-0-1 pass; 1-0-1 (Victor yes), 1-1-0 (list, Omar) fail -> 2/4
    "inaccessible:answerability:set:ALL": 50.0,
    # answerability list: 1-1-0 leaves out Victor -> 3/4
    "inaccessible:answerability:list": 75.0,
    # answerability y/n, 16 items (12 yes, 4 no); predictions: 12 yes right, Kailey x2 no, Victor yes, Omar -1.
    # label 1: TP 12 FP 1 FN 0 -> F1 24/25; label 0: TP 2 FP 0 FN 2 -> 4/6; label -1: support 0.
    # weighted (12 * 0.96 + 4 * 0.6667) / 16 = 0.88667 -> 88.7
    "inaccessible:answerability:binary-f1": 88.7,
    # info All: only 1-0-1 (Victor named in the list) fails -> 3/4
    "inaccessible:info_accessibility:set:ALL": 75.0,
    "inaccessible:info_accessibility:list": 75.0,
    "inaccessible:info_accessibility:binary-f1": 100.0,
    # fact token F1 (lower-cased, whitespace tokens): 0-0-0 "a golden retriever." 3 of 7: P 1 R 3/7 -> 0.6;
    # 0-0-1 verbatim 1.0; 1-0-0 "ceviche." vs "ceviche" 0.0; 1-0-1 "coca tea every morning." 3 shared,
    # P 3/4 R 3/11 -> 0.4; 1-1-0 5 shared, P 5/7 R 5/13 -> 0.5; mean 2.5 / 5 = 0.5
    "fact_word-f1": 50.0,
    "inaccessible:tom:lists:wrong_reasons:freq": {"excluded_aware_character": 1},
    "inaccessible:tom:binary:wrong_reasons:freq": {"false_positive": 1, "irrelevant_response": 1},
    # free response by order: first-order 0-0-0, 1-0-1, 1-1-0 right, 0-0-1 wrong -> 3/4; all 4 second-order right
    "inaccessible:first-order": 75.0,
    "inaccessible:second-order": 100.0,
    "inaccessible:second-order:cyclic": 100.0,
    "inaccessible:second-order:acyclic": 100.0,
    # per (set, character), 16 rows: 0-0-0 4 right; 0-0-1 Kailey's free belief wrong -> 3; 1-0-1 Victor
    # (y/n yes, named in the info list) wrong -> 3; 1-1-0 Victor (left out of the list) and Omar (-1, choice) -> 2.
    # (4 + 3 + 3 + 2) / 16 = 0.75
    "inaccessible:set:ALL_character": 75.0,
    # consistency: 0-0-0 4, 0-0-1 4, 1-0-1 3 (Victor 1/0/0/1), 1-1-0 2 (Victor 1/1/0/1, Omar -1/0/0/0);
    # 13/16 = 0.8125 -> numpy rounds half to even: 0.812 -> 81.2
    "inaccessible:set:character_answer_consistency": 81.2,
}
HAND_CONTROL = {
    # 0-0-1 (second-order belief, free and choice, right) passes; 1-0-0 fails (free #2, info y/n Victor) -> 1/2
    "accessible:set:ALL*": 50.0,
    "accessible:set:ALL": 50.0,  # 1-0-0 still fails on Victor's info y/n
    "accessible:belief:multiple-choice": 100.0,
    # free response: 0-0-1 #2, 1-0-0 #1 right, 1-0-0 #2 wrong -> 2/3 = 0.667
    "accessible:belief:distance": 66.7,
    "accessible:belief_true_word-f1": 100.0,
    "accessible:answerability:set:ALL": 100.0,
    "accessible:answerability:list": 100.0,
    "accessible:answerability:binary-f1": 100.0,
    "accessible:info_accessibility:set:ALL": 0.0,
    "accessible:info_accessibility:list": 100.0,
    # refs 1,1,1,1; preds 1,1,1,0: label 1 TP 3 FN 1 -> 6/7, weight 4/4 -> 0.857
    "accessible:info_accessibility:binary-f1": 85.7,
    "fact_word-f1": 50.0,
    "accessible:tom:lists:wrong_reasons:freq": {},
    "accessible:tom:binary:wrong_reasons:freq": {"false_negative": 1},
    "accessible:first-order": 100.0,
    "accessible:second-order": 50.0,  # second-order:accessible right, second-order:cyclic wrong
    "accessible:second-order:accessible": 100.0,
    "accessible:second-order:cyclic": 0.0,  # upstream omits a key whose accuracy is 0; we report it
    # rows: 0-0-1 Sally (beliefs only) right; 1-0-0 Omar, Hannah right, Priya (free #2), Victor (info y/n) wrong
    # -> 3/5
    "accessible:set:ALL_character": 60.0,
    # characters with yes/no answers: 1-0-0's four; Victor says yes, no, named, named -> 3/4
    "accessible:set:character_answer_consistency": 75.0,
}
# The same answers aggregated per conversation part: inaccessible parts 0-0 (sets 0-0-0, 0-0-1), 1-0 (1-0-1),
# 1-1 (1-1-0).
HAND_PART = {
    "inaccessible:set:ALL*": 0.0,  # every part holds a failing set
    "inaccessible:set:ALL": 33.3,  # only part 0-0 -> 1/3
    "inaccessible:answerability:set:ALL": 33.3,  # 0-0 -> 1/3
    "inaccessible:info_accessibility:set:ALL": 66.7,  # 0-0 and 1-1 -> 2/3
    # (part, character) rows: 0-0 Linda, David, Sally right, Kailey wrong; 1-0 3 of 4; 1-1 2 of 4 -> 8/12
    "inaccessible:set:ALL_character": 66.7,
    "inaccessible:set:character_answer_consistency": 75.0,  # 4 + 3 + 2 of 12
}


def assert_report(got: dict[str, Any], expected: dict[str, Any]) -> None:
    for key, value in expected.items():
        if isinstance(value, dict):
            assert got[key] == value, key
        else:
            assert got[key] == pytest.approx(value, abs=1e-9), key


@pytest.fixture
def embedder(request: pytest.FixtureRequest) -> str:
    """The embedder a test is parametrized with (indirectly); `minilm` is loaded here, before `pytester` (listed after
    this fixture) snapshots `sys.modules`: loaded inside the test, torch would be imported after the snapshot and
    dropped from `sys.modules` at its teardown while MiniLM stays loaded, and the next run importing it again
    crashed the process (a segfault in the garbage collector, seen as an xdist worker crash).
    """
    return str(request.getfixturevalue("minilm") if request.param == "minilm" else request.param)


@pytest.mark.parametrize("embedder", ["bag-of-words", pytest.param("minilm", marks=pytest.mark.slow)], indirect=True)
def test_metrics_equal_the_official_evaluator_on_hand_computed_answers(embedder: str, pytester: pytest.Pytester) -> None:
    """Every official report key, on answers whose expected values are computed by hand above.

    The free-response answers are either verbatim reference answers (cosine 1 to one of them) or, for
    0-0-0 #2, a shortened PersonX-centric answer: with bags of words it shares 7 words with the gold
    (cos 7 / sqrt(7 * 12) = 0.76) and 4 with the distractor (4 / sqrt(7 * 11) = 0.46), so it is correct.
    """
    option = bow(pytester) if embedder == "bag-of-words" else embedder
    result = run(pytester, oracle(pytester, HAND_OVERRIDES), option, "--tom-set=fantom.evaluator=2023",
                 "--tom-report=r.json", "-q")
    report = json.loads((pytester.path / "r.json").read_text())
    short = report["suites"][0]["metrics"]["contexts"]["short"]
    assert_report(short["fantom"], HAND_SET)
    assert_report(short["control_task"], HAND_CONTROL)
    # Spec A8/A10 (extras, not upstream keys). 8 free/choice pairs: 0-0-1 #1 only the choice right, 1-1-0 #1
    # only the free response right -> 6/8 agree. Sets whose choices are all right: 0-0-0, 0-0-1, 1-0-1; of
    # those only 1-0-1 has a wrong list (info access) -> 1 of 4 sets.
    assert {k: v for k, v in short["extra"]["inaccessible"].items() if k.startswith(("belief:", "sets"))} == {
        "belief:choice_dist_pairs": 8, "belief:choice_dist_agreement": 75.0, "belief:choice_right_dist_wrong": 1,
        "belief:dist_right_choice_wrong": 1, "sets_with_choice_and_lists": 4, "sets:choice_right_list_wrong": 1,
    }
    items = {i["qid"]: i for i in report["items"]}
    assert items["short-0-0-0-belief_free-2"]["score"] == pytest.approx(12 / 19)
    assert items["short-1-1-0-fact"]["score"] == pytest.approx(0.5)
    assert not missing(
        result.stdout.str(), "fact token F1 50.0", "n_fact 5",
        "inaccessible:set:ALL* 25.0", "inaccessible:set:ALL 50.0", "inaccessible:belief:multiple-choice 87.5",
        "inaccessible:belief:distance 87.5", "inaccessible:belief_true_word-f1 94.7",
        "inaccessible:answerability:set:ALL 50.0", "inaccessible:answerability:list 75.0",
        "inaccessible:answerability:binary-f1 88.7", "inaccessible:info_accessibility:set:ALL 75.0",
        "inaccessible:info_accessibility:list 75.0", "inaccessible:info_accessibility:binary-f1 100.0",
        "inaccessible:first-order 75.0", "inaccessible:second-order 100.0", "inaccessible:second-order:acyclic 100.0",
        "inaccessible:second-order:cyclic 100.0", "inaccessible:set:ALL_character 75.0",
        "inaccessible:set:character_answer_consistency 81.2",
        "choice/dist. agree 75.0", "belief:choice_dist_pairs 8", "belief:choice_right_dist_wrong 1",
        "belief:dist_right_choice_wrong 1", "sets:choice_right_list_wrong 1", "sets_with_choice_and_lists 4",
        "inaccessible:tom:lists:wrong_reasons:freq excluded_aware_character 1",
        "inaccessible:tom:binary:wrong_reasons:freq false_positive 1",
        "inaccessible:tom:binary:wrong_reasons:freq irrelevant_response 1",
        "accessible:set:ALL* 50.0", "accessible:set:ALL 50.0", "accessible:belief:multiple-choice 100.0",
        "accessible:belief:distance 66.7", "accessible:belief_true_word-f1 100.0",
    )
    result = run(pytester, oracle(pytester, HAND_OVERRIDES), option, "--tom-set=fantom.aggregation=part",
                 "--tom-set=fantom.evaluator=2023", "--tom-report=p.json", "-q")
    part = json.loads((pytester.path / "p.json").read_text())["suites"][0]["metrics"]["contexts"]["short"]
    assert_report(part["fantom"], HAND_PART)
    assert part["fantom"]["inaccessible:belief:distance"] == pytest.approx(87.5)  # item scores do not depend on units


# --- the real sample ------------------------------------------------------------------------------


@pytest.mark.slow
def test_real_sample_counts_and_a_full_random_run(pytester: pytest.Pytester, real_data_dir: Path, minilm: str) -> None:
    raw = json.loads((real_data_dir / "fantom" / "fantom_v1.json").read_text())
    n_sets = len(raw)
    beliefs = sum(len(s["beliefQAs"]) for s in raw)
    yn = {fam: sum(len(s[key]) for s in raw) for fam, key in
          (("answerability", "answerabilityQAs_binary"), ("info_accessibility", "infoAccessibilityQAs_binary"))}
    no_long = {fam: sum(q["correct_answer"] == "no:long" for s in raw for q in s[key]) for fam, key in
               (("answerability", "answerabilityQAs_binary"), ("info_accessibility", "infoAccessibilityQAs_binary"))}
    expected = {"fact": n_sets, "belief_free": beliefs, "belief_choice": beliefs,
                "answerability_list": n_sets, "info_accessibility_list": n_sets}
    result = run(pytester, "--tom-model=random", "--tom-set=fantom.contexts=short,full", "--tom-report=r.json", "-q",
                 data_dir=real_data_dir)
    outcomes = result.parseoutcomes()
    assert "error" not in outcomes and "errors" not in outcomes
    report = json.loads((pytester.path / "r.json").read_text())
    counts = Counter((i["facets"]["context"], i["facets"]["question_type"]) for i in report["items"])
    for context in ("short", "full"):
        for qtype, n in expected.items():
            assert counts[(context, qtype)] == n, (context, qtype)
        for fam in yn:
            dropped = no_long[fam] if context == "short" else 0
            assert counts[(context, f"{fam}_yn")] == yn[fam] - dropped
    metrics = report["suites"][0]["metrics"]["contexts"]
    for context in ("short", "full"):
        fantom = metrics[context]["fantom"]
        assert fantom["inaccessible:belief:multiple-choice"] is not None
        assert fantom["inaccessible:answerability:binary-f1"] is not None
    assert len({g["gid"] for g in report["groups"] if g["group_kind"] == "all_star"}) >= n_sets
