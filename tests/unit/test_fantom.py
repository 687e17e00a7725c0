"""FANToM: loading, prompts, answer handling, scoring and metrics, without pytester."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import random
import tarfile
import threading
import zipfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tom import embedders
from pytest_tom.benchmarks import fantom as F
from pytest_tom.benchmarks import registry
from pytest_tom.benchmarks.base import DataSource
from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.types import ItemResult, Outcome, Question, Response

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "fantom" / "fantom_v1.json"


def source(root: Path | None = FIXTURE.parent.parent, **kw: Any) -> DataSource:
    return DataSource(root=root, download=kw.get("download", False), cache_dir=kw.get("cache_dir", Path("/nonexistent")))


def loaded(**settings: Any) -> tuple[F.FANToM, list[Question]]:
    bench = F.FANToM({"embedder": "none", **settings})
    return bench, bench.load(source())


def by_qid(questions: Sequence[Question]) -> dict[str, Question]:
    return {q.qid: q for q in questions}


class FakeEmbedder:
    """Vectors chosen by the test: unknown texts map to a fixed vector."""

    name = "fake"

    def __init__(self, table: dict[str, Sequence[float]], default: Sequence[float] = (0.0, 0.0, 1.0)) -> None:
        self.table = table
        self.default = default
        self.batches: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> list[Sequence[float]]:
        self.batches.append(list(texts))
        return [self.table.get(t, self.default) for t in texts]


def drive(bench: F.FANToM, q: Question, answers: Sequence[str]) -> ItemResult:
    """Run a question's program with scripted answers, one per request, as the engine would."""
    program = bench.solve(q)
    it = iter(answers)
    try:
        reqs = next(program)
        while True:
            reqs = program.send([Response(text=next(it)) for _ in reqs])
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


# --- registration and loading ---------------------------------------------------------------------


def test_registered_under_its_name() -> None:
    assert registry().get("fantom") is F.FANToM


def test_fixture_counts_per_context() -> None:
    """The fixture has 5 sets, 11 belief questions and 5 yes/no per family per set; short drops no:long."""
    _, qs = loaded(contexts="short,full", embedder="none")
    counts = Counter((q.facets["context"], q.facets["question_type"]) for q in qs)
    assert counts[("short", "fact")] == counts[("full", "fact")] == 5
    assert counts[("short", "belief_choice")] == counts[("full", "belief_choice")] == 11
    assert counts[("short", "belief_free")] == 0  # embedder=none: free-response beliefs are not asked
    assert counts[("short", "answerability_list")] == counts[("full", "info_accessibility_list")] == 5
    # 25 yes/no per family; the 5 no:long ones (Marco, Lena) are dropped in the short context only.
    assert counts[("short", "answerability_yn")] == counts[("short", "info_accessibility_yn")] == 20
    assert counts[("full", "answerability_yn")] == counts[("full", "info_accessibility_yn")] == 25
    assert len({q.qid for q in qs}) == len(qs)


def test_ids_marks_and_facets() -> None:
    _, qs = loaded(contexts="short,full", embedder="auto")
    q = by_qid(qs)
    first = q["short-0-0-0-belief_free-1"]
    assert first.marks == ("fantom", "short", "belief", "free_response", "first_order", "inaccessible")
    cyclic = q["full-0-0-0-belief_choice-2"]
    assert cyclic.marks == ("fantom", "full", "belief", "choice", "second_order", "cyclic", "inaccessible")
    assert q["short-1-0-1-belief_choice-2"].facets["cyclicity"] == "acyclic"
    assert "accessible" in q["short-0-0-1-belief_choice-2"].marks  # second-order:accessible control question
    assert q["short-0-0-1-belief_choice-2"].facets["cyclicity"] == ""
    yn = q["short-0-0-0-answerability_yn-kailey"]
    assert yn.marks == ("fantom", "short", "answerability", "yes_no", "inaccessible")
    assert yn.facets["character"] == "kailey" and yn.payload.gold == "no"
    assert q["short-0-0-0-fact"].marks == ("fantom", "short", "fact", "free_response")
    assert q["short-0-0-0-info_accessibility_list"].marks == ("fantom", "short", "info_accessibility", "list", "inaccessible")
    assert "short-0-0-0-answerability_yn-marco" not in q  # no:long, dropped in the short context
    assert q["full-0-0-0-answerability_yn-marco"].payload.gold == "no"


def test_every_mark_is_documented_and_an_identifier() -> None:
    _, qs = loaded(contexts="short,full", embedder="auto")
    bench = F.FANToM({"contexts": "short,full"})
    used = {m for q in qs for m in q.marks} | {m for g in bench.groups(qs) for m in g.marks}
    assert used <= set(F.FANToM.mark_docs)
    assert all(m.isidentifier() for m in F.FANToM.mark_docs)


def test_full_context_retags_like_upstream() -> None:
    """Set 1-0-0 is a control set, but Lena (absent from the short part) makes its list/yes-no inaccessible in full."""
    _, qs = loaded(contexts="short,full")
    q = by_qid(qs)
    assert q["short-1-0-0-answerability_list"].facets["accessibility"] == "accessible"
    assert q["short-1-0-0-answerability_yn-victor"].facets["accessibility"] == "accessible"
    assert q["full-1-0-0-answerability_list"].facets["accessibility"] == "inaccessible"
    assert q["full-1-0-0-info_accessibility_yn-victor"].facets["accessibility"] == "inaccessible"
    assert q["full-1-0-0-belief_choice-1"].facets["accessibility"] == "accessible"  # beliefs keep their tag


def test_official_option_order_is_seed_99_in_file_order() -> None:
    sets = F.load_sets(FIXTURE)
    drawn = [b.correct_last for s in sets for b in s.beliefs]
    # random.seed(99); [random.choice([True, False]) for _ in range(11)], as upstream's import-time seed gives.
    assert drawn == [False, False, True, True, True, True, True, True, False, False, True]
    rng = random.Random(99)
    assert drawn == [rng.choice([True, False]) for _ in drawn]
    reseeded = [b.correct_last for s in F.load_sets(FIXTURE, seed=1) for b in s.beliefs]
    assert reseeded != drawn  # --tom-fantom-choice-seed changes the order


def test_choice_prompt_shows_the_official_order() -> None:
    """The order is fixed at load time from the file position (third draw: correct last), so -m/-k never reshuffles."""
    bench, qs = loaded(contexts="short,full")
    for context in ("short", "full"):
        prompt = by_qid(qs)[f"{context}-0-0-0-belief_choice-3"].payload.prompt
        assert ("(a) David believes that Kailey thinks Linda's dog is a golden retriever.\n"
                "(b) David believes that Kailey does not") in prompt


def test_prompts_are_upstream_templates_byte_for_byte() -> None:
    s = F.load_sets(FIXTURE)[0]
    ctx = s.short_context
    fq, fa = "What is the breed of Linda's dog?", "Linda's dog Sunny is a golden retriever."
    assert F.render_prompt(s, "short", "fact") == f"{ctx}\n\nQuestion: {fq}\nAnswer:"
    assert F.render_prompt(s, "short", "belief_free", 0) == (
        f"{ctx}\n\nQuestion: What does Kailey believe is the breed of Linda's dog?\nAnswer:")
    assert F.render_prompt(s, "short", "belief_choice", 0) == (
        f"{ctx}\n\nQuestion: What does Kailey believe is the breed of Linda's dog?\n"
        "(a) Kailey does not know the breed of Linda's dog.\n(b) Kailey believes that Linda's dog is a golden retriever."
        "\n\nChoose an answer from above:")
    assert F.render_prompt(s, "full", "answerability_list") == (
        f"{s.full_context}\n\nTarget: {fq}\nQuestion: List all the characters who know the precise correct answer to "
        "this question.\nAnswer:")
    assert F.render_prompt(s, "short", "answerability_yn", 3) == (
        f"{ctx}\n\nTarget: {fq}\nQuestion: Does Kailey know the precise correct answer to this question? "
        "Answer yes or no.\nAnswer:")
    assert F.render_prompt(s, "short", "info_accessibility_list") == (
        f"{ctx}\n\nInformation: {fq} {fa}\nQuestion: List all the characters who know this information.\nAnswer:")
    assert F.render_prompt(s, "short", "info_accessibility_yn", 0) == (
        f"{ctx}\n\nInformation: {fq} {fa}\nQuestion: Does Linda know this information? Answer yes or no.\nAnswer:")


def test_header_and_cot_requests() -> None:
    bench, qs = loaded(header="official", prompt="cot")
    q = by_qid(qs)["short-0-0-0-answerability_yn-kailey"]
    program = bench.solve(q)
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


def test_random_baseline_gets_well_formed_answers() -> None:
    bench, qs = loaded()
    q = by_qid(qs)
    labels, fmt = bench.requests_shape(q["short-0-0-0-answerability_list"].payload)
    assert len(labels) == 2**5 - 1 and "David, Kailey, Linda, Marco, Sally" in labels and fmt == "{}"
    assert bench.requests_shape(q["short-0-0-0-belief_choice-1"].payload) == (("a", "b"), "({})")


# --- answer handling ------------------------------------------------------------------------------


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
    assert F.parse_response(text) == expected


@pytest.mark.parametrize(
    ("text", "official", "strict"),
    [
        ("Yes", 1, 1),
        ("no", 0, 0),
        ("Yes.", 1, 1),
        ("True", 1, 1),
        ("false", 0, 0),
        ("He knows it.", 1, 1),
        ("He doesn't know it at all", 0, 0),
        ("She does not know the answer.", 0, 0),
        ("She does not know.", -1, 0),  # upstream needs a space after "know"
        ("knows", -1, 1),  # upstream needs a space before "knows"
        ("I know", -1, -1),  # "know" never reads as "no"
        ("unknown", -1, -1),
        ("Noah knows the answer", 1, 1),
        ("Nobody knows", 0, -1),  # upstream: starts with "no"; strict: both cues, unreadable
        ("No, he knows nothing about it", 1, 0),  # upstream checks yes patterns first
        (" yes", -1, 1),  # upstream: a leading space defeats startswith
        ("'yes'", 1, 1),
        ("He is unaware of it.", -1, 0),
        ("Not sure", 0, -1),  # upstream: starts with "no"
        ("maybe", -1, -1),
    ],
)
def test_yes_no_parsing(text: str, official: int, strict: int) -> None:
    assert F.binary_official(text) == official
    assert F.binary_strict(text) == strict


@given(st.text(alphabet="knowKNOW ", max_size=30))
def test_strict_yes_no_never_reads_know_as_no(text: str) -> None:
    """Strings made of "know"-letters never contain the word "no"."""
    if "no" not in text.lower().split():
        assert F.binary_strict(text) != 0


def test_names_official_substring_vs_strict_words() -> None:
    assert F.mentions("Ann", "Anna and David", "official")
    assert not F.mentions("Ann", "Anna and David", "strict")
    assert F.mentions("Anna", "anna's friend", "strict")
    j = F.judge_list("Anna, David", ["Anna", "David"], ["Ann"], "official")
    assert not j.correct and j.included_unaware  # upstream's substring false positive
    assert F.judge_list("Anna, David", ["Anna", "David"], ["Ann"], "strict").correct


@pytest.mark.parametrize(
    ("answer", "correct", "excluded", "included", "readable"),
    [
        ("Linda, David and Sally", True, False, False, True),
        ("Linda and Sally", False, True, False, True),
        ("Linda, David, Sally, Kailey", False, False, True, True),
        ("Kailey and Sally", False, True, True, True),
        ("Nobody knows.", False, True, False, True),
        ("I cannot tell.", False, True, False, False),
    ],
)
def test_list_exact_set(answer: str, correct: bool, excluded: bool, included: bool, readable: bool) -> None:
    j = F.judge_list(answer, ["Linda", "David", "Sally"], ["Kailey", "Marco"], "official")
    assert (j.correct, j.excluded_aware, j.included_unaware, j.readable) == (correct, excluded, included, readable)


@pytest.mark.parametrize(
    ("answer", "official", "strict"),
    [
        ("(a)", ("a",), ("a",)),
        ("b.", ("b",), ("b",)),
        ("A", ("a",), ("a",)),
        ("The answer is (b).", ("b",), ("b",)),
        ("(a) and (b)", ("a", "b"), ("a",)),  # strict: the leading letter decides
        ("Between (a) and (b) I cannot decide", ("a", "b"), ("a", "b")),
        ("a golden retriever", (), ()),  # the article "a" is not option (a)
        ("Kailey does not know the breed of Linda's dog.", (), ("a",)),  # strict: repeats option (a)
        ("c", (), ()),
    ],
)
def test_choice_letters(answer: str, official: tuple[str, ...], strict: tuple[str, ...]) -> None:
    options = ("Kailey does not know the breed of Linda's dog.", "Kailey believes that Linda's dog is a golden retriever.")
    assert F.choice_letters(answer, "official", options) == official
    assert F.choice_letters(answer, "strict", options) == strict


def test_token_f1_is_upstreams_whitespace_f1() -> None:
    # gold 3 tokens, answer 2 tokens, 2 shared: P = 1, R = 2/3, F1 = 2 * (2/3) / (5/3) = 0.8
    assert F.token_f1("the cat sat", "the cat") == pytest.approx(0.8)
    assert F.token_f1("The cat", "the cat") == pytest.approx(2 * 0.5 * 0.5 / 1.0)  # case-sensitive: 1 shared of 2
    assert F.token_f1("dog.", "dog") == 0.0  # no punctuation stripping
    assert F.token_f1("a a b", "a") == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))
    assert F.token_f1("x", "") == 0.0


def test_weighted_f1_hand_computed() -> None:
    # refs 12 yes / 4 no; preds: all yes right, no: 2 right, 1 said yes, 1 unreadable.
    # label 1: TP 12, FP 1, FN 0 -> 24/25; label 0: TP 2, FP 0, FN 2 -> 4/6; label -1: support 0.
    # weighted = (12 * 0.96 + 4 * 2/3) / 16 = 0.88667
    refs = [1] * 12 + [0] * 4
    preds = [1] * 12 + [0, 0, 1, -1]
    assert F.weighted_f1(preds, refs) == pytest.approx((12 * 0.96 + 4 * 2 / 3) / 16)
    assert F.weighted_f1([], []) is None


@settings(deadline=None, max_examples=60)  # the first example pays for importing scikit-learn
@given(st.lists(st.tuples(st.sampled_from([-1, 0, 1]), st.sampled_from([0, 1])), min_size=1, max_size=40))
def test_weighted_f1_equals_scikit_learn(pairs: list[tuple[int, int]]) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    preds = [p for p, _ in pairs]
    refs = [r for _, r in pairs]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = metrics.f1_score(refs, preds, average="weighted", zero_division=0)
    assert F.weighted_f1(preds, refs) == pytest.approx(float(expected))


def test_upstream_rounding() -> None:
    # pandas means are numpy floats: numpy rounds v * 1000 half to even; Python's round is exact decimal.
    assert F._round_numpy(0.8125) == pytest.approx(81.2)
    assert F._round_numpy(0.0005) == 0.0 and F._round_python(0.0005) == pytest.approx(0.1)
    assert F._round_numpy(None) is None


# --- scoring through the question programs ----------------------------------------------------------


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
        ("short-0-0-0-fact", "A golden retriever.", Outcome.CORRECT, "A golden retriever."),
        ("short-0-0-0-fact", "A dog.", Outcome.INCORRECT, "A dog."),
        ("short-0-0-0-fact", "", Outcome.UNPARSEABLE, None),
    ],
)
def test_item_outcomes(qid: str, answer: str, outcome: Outcome, parsed: Any) -> None:
    bench, qs = loaded()
    result = drive(bench, by_qid(qs)[qid], [answer])
    assert result.outcome is outcome
    assert result.parsed == parsed
    if outcome is not Outcome.CORRECT:
        assert result.message.startswith("FANToM ") and "response:" in result.message


def test_fact_score_is_token_f1_and_threshold_configurable() -> None:
    # gold "linda's dog sunny is a golden retriever." (7 tokens) vs "a golden retriever." (3, all shared):
    # P = 1, R = 3/7, F1 = (6/7) / (10/7) = 0.6
    bench, qs = loaded(fact_f1_threshold="0.7")
    result = drive(bench, by_qid(qs)["short-0-0-0-fact"], ["A golden retriever."])
    assert result.score == pytest.approx(0.6)
    assert result.outcome is Outcome.INCORRECT and "below the pass threshold 0.7" in result.message


def test_failure_message_explains_the_yes_no_error() -> None:
    bench, qs = loaded()
    result = drive(bench, by_qid(qs)["short-1-0-1-answerability_yn-victor"], ["Yes, he does."])
    msg = result.message
    assert "FANToM AnswerabilityQ[Y/N], set 1-0-1 (short context, inaccessible; Victor missed part of it): incorrect" in msg
    assert "Victor: Excuse me, I have to move my car" in msg  # context excerpt
    assert "target: What did Priya drink every morning to cope with the altitude?" in msg
    assert "question: Does Victor know the precise correct answer to this question?" in msg
    assert "gold: no" in msg and "response: 'Yes, he does.'" in msg and "parsed (official): yes" in msg
    assert "why: says Victor knows, but Victor does not (false positive" in msg


def free_question(bench: F.FANToM, qs: Sequence[Question], table: dict[str, Sequence[float]]) -> tuple[Question, FakeEmbedder]:
    fake = FakeEmbedder(table)
    bench._cache = embedders.EmbeddingCache(fake)
    return by_qid(qs)["short-0-0-0-belief_free-1"], fake


def test_free_response_closer_to_personx_is_correct() -> None:
    bench, qs = loaded(embedder="auto")
    q, fake = free_question(bench, qs, {
        "Kailey does not know the breed of Linda's dog.": (1.0, 0.0, 0.0),
        "Kailey believes that Linda's dog is a golden retriever.": (0.0, 1.0, 0.0),
        "She has no idea what breed it is.": (0.9, 0.1, 0.0),
    })
    result = drive(bench, q, ["She has no idea what breed it is."])
    assert result.outcome is Outcome.CORRECT and result.parsed == "personx-centric"
    assert result.details["sim_personx"] > result.details["sim_omniscient"]
    # upstream's word_overlap: token F1 against the PersonX-centric answer when judged correct
    gold = "Kailey does not know the breed of Linda's dog."
    assert result.score == pytest.approx(F.token_f1(gold, "She has no idea what breed it is."))
    assert len(fake.batches) == 1 and len(fake.batches[0]) == 3  # one batched call for answer and both references


def test_free_response_tie_is_wrong_and_scored_against_the_distractor() -> None:
    bench, qs = loaded(embedder="auto")
    q, _ = free_question(bench, qs, {
        "Kailey does not know the breed of Linda's dog.": (1.0, 0.0, 0.0),
        "Kailey believes that Linda's dog is a golden retriever.": (0.0, 1.0, 0.0),
        "Something.": (1.0, 1.0, 0.0),
    })
    result = drive(bench, q, ["Something."])
    assert result.outcome is Outcome.INCORRECT and result.parsed == "omniscient-view"
    assert "as close to the omniscient-view answer" in result.message and "a tie counts as wrong" in result.message
    assert result.score == 0.0  # token F1 against the omniscient-view answer


def test_free_response_empty_answer_is_unparseable() -> None:
    bench, qs = loaded(embedder="auto")
    q, fake = free_question(bench, qs, {})
    result = drive(bench, q, ["Answer:   "])
    assert result.outcome is Outcome.UNPARSEABLE and fake.batches == []


def test_free_responses_are_embedded_in_one_batch_across_questions() -> None:
    """Every free-response program waits one engine wave, so their answers are embedded together."""
    bench, qs = loaded(embedder="auto")
    fake = FakeEmbedder({})
    bench._cache = embedders.EmbeddingCache(fake)
    free = [q for q in qs if q.facets["question_type"] == "belief_free"]
    programs = [bench.solve(q) for q in free]
    for p in programs:
        next(p)
    barriers = [p.send([Response(text=f"answer {i}")]) for i, p in enumerate(programs)]
    assert all(list(b) == [] for b in barriers)
    for p in programs:
        with pytest.raises(StopIteration):
            p.send([])
    assert len(fake.batches) == 1
    # 11 answers + 22 reference texts, each embedded once
    assert len(fake.batches[0]) == len(set(fake.batches[0])) == 11 + 22


def test_character_check_reads_member_answers() -> None:
    bench, qs = loaded()
    check = by_qid(qs)["short-1-0-1-consistency-inaccessible-victor"]
    assert set(check.payload.members) == {
        "short-1-0-1-answerability_yn-victor", "short-1-0-1-info_accessibility_yn-victor",
        "short-1-0-1-answerability_list", "short-1-0-1-info_accessibility_list",
    }
    program = bench.solve(check)
    reqs = next(program)
    assert len(reqs) == 4
    answers = {"answerability_yn": "Yes", "info_accessibility_yn": "No", "answerability_list": "Omar, Priya, Hannah",
               "info_accessibility_list": "Omar, Priya, Hannah"}
    texts = []
    for r in reqs:
        body = r.messages[0].content
        kind = ("info_accessibility" if "\nInformation:" in body else "answerability") + (
            "_yn" if "Answer yes or no." in body else "_list")
        texts.append(answers[kind])
    with pytest.raises(StopIteration) as stop:
        program.send([Response(text=t) for t in texts])
    result = stop.value.value
    assert result.outcome is Outcome.INCORRECT
    assert "readings: does not know x3, knows x1" in result.message


# --- groups ---------------------------------------------------------------------------------------


def test_groups_per_set_and_scenario() -> None:
    bench, qs = loaded(embedder="auto")
    groups = {(g.kind, g.gid): g for g in bench.groups(qs)}
    star = groups[("all_star", "short-0-0-1-inaccessible")]
    assert "short-0-0-1-belief_free-1" in star.members and "short-0-0-1-belief_free-2" not in star.members
    assert "short-0-0-1-fact" not in star.members
    assert set(groups[("all_tom", "short-0-0-1-inaccessible")].members) == set(star.members) - {"short-0-0-1-belief_free-1"}
    control = groups[("all_star", "short-0-0-1-accessible")]
    assert control.members == ("short-0-0-1-belief_free-2", "short-0-0-1-belief_choice-2")
    assert control.marks == ("fantom", "short", "all_star", "accessible")
    assert groups[("answerability_all", "short-0-0-0-inaccessible")].marks[-1] == "answerability"
    assert len(groups[("info_accessibility_all", "short-0-0-0-inaccessible")].members) == 5


def test_groups_per_part_and_without_free_response() -> None:
    bench, qs = loaded(embedder="none", aggregation="part")
    groups = {(g.kind, g.gid): g for g in bench.groups(qs)}
    assert not any(kind == "all_star" for kind, _ in groups)
    part = groups[("all_tom", "short-0-0-inaccessible")]
    assert {m.split("-")[3] for m in part.members} == {"0", "1"}  # both sets of part 0-0


def test_conversation_aggregation_needs_the_full_context() -> None:
    with pytest.raises(TomConfigError, match="needs contexts=full"):
        F.FANToM({"aggregation": "conversation"})
    F.FANToM({"aggregation": "conversation", "contexts": "full"})
    with pytest.raises(TomConfigError, match="not one of"):
        F.FANToM({"contexts": "short,long"})


# --- metrics on hand-built records ------------------------------------------------------------------


def record(qid: str, qtype: str, outcome: str, unit: str = "0-0-0", size: int = 3, scenario: str = "inaccessible",
           **details: Any) -> dict[str, Any]:
    return {
        "qid": qid, "outcome": outcome, "score": details.pop("score", None), "details": details,
        "facets": {"context": "short", "question_type": qtype, "family": F._FAMILY[qtype], "accessibility": scenario,
                   "upstream_type": details.pop("upstream", f"tom:{F._FAMILY[qtype]}:x"), "set": unit,
                   "part": unit[:3], "conversation": unit[:1], "unit": unit, "unit_size": str(size),
                   "tom_type": details.pop("tom_type", ""), "character": details.pop("character", "")},
    }


def test_metrics_leave_out_partial_and_errored_sets() -> None:
    bench = F.FANToM({"embedder": "none"})
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
    m = bench.metrics(recs)["contexts"]["short"]
    assert m["fantom"]["inaccessible:answerability:set:ALL"] == 100.0  # only set A is complete
    # list accuracy over every scored list item: a1, b1, c1 -> 2/3
    assert m["fantom"]["inaccessible:answerability:list"] == pytest.approx(66.7)
    assert m["extra"]["inaccessible"]["complete_units"] == 1
    assert m["extra"]["inaccessible"]["incomplete_units"] == 2
    assert m["fantom"]["inaccessible:tom:lists:wrong_reasons:freq"] == {"excluded_aware_character": 1}


def test_illusory_counts_pair_formats_and_flag_choices_without_lists() -> None:
    """Spec A8/A10 by hand: 3 free/choice pairs (1 agrees), 2 sets with choices and lists (1 flagged)."""
    bench = F.FANToM({"embedder": "none"})
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
    extra = bench.metrics(recs)["contexts"]["short"]["extra"]["inaccessible"]
    assert extra["belief:choice_dist_pairs"] == 3
    assert extra["belief:choice_dist_agreement"] == pytest.approx(33.3)
    assert extra["belief:choice_right_dist_wrong"] == 1 and extra["belief:dist_right_choice_wrong"] == 1
    assert extra["sets_with_choice_and_lists"] == 2 and extra["sets:choice_right_list_wrong"] == 1
    lines = bench.metric_lines(bench.metrics(recs))
    assert any("illusory: choice/dist. agree 33.3 (n=3; choice right, dist. wrong 1; dist. right, choice wrong 1)"
               " | choices right but a list wrong: 1 of 2 sets" in ln for ln in lines), lines


def test_metric_lines_name_the_embedder() -> None:
    bench = F.FANToM({})
    recs = [record("f", "belief_free", "correct", size=1, embedder="some-model", score=0.5,
                   upstream="tom:belief:inaccessible", tom_type="first-order", character="kailey")]
    metrics = bench.metrics(recs)
    assert metrics["embedder"] == "some-model" and metrics["embedder_is_paper_model"] is False
    lines = bench.metric_lines(metrics)
    assert "embedder some-model [not the paper's model" in lines[0]
    assert any("ALL* 100.0" in ln and "dist. 100.0" in ln for ln in lines)


# --- data errors ----------------------------------------------------------------------------------


def write_sets(tmp_path: Path, mutate: Any) -> Path:
    data = json.loads(FIXTURE.read_text())
    mutate(data)
    path = tmp_path / "fantom_v1.json"
    path.write_text(json.dumps(data))
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
    ],
)
def test_bad_data_names_file_record_and_field(tmp_path: Path, mutate: Any, match: str) -> None:
    path = write_sets(tmp_path, mutate)
    with pytest.raises(TomDataError, match=match) as info:
        F.load_sets(path)
    assert str(path) in str(info.value)


def test_bad_json_and_missing_data(tmp_path: Path) -> None:
    (tmp_path / "fantom_v1.json").write_text("[{")
    with pytest.raises(TomDataError, match="invalid JSON"):
        F.load_sets(tmp_path / "fantom_v1.json")
    with pytest.raises(TomDataError, match="FANToM data not found.*--tom-download"):
        F.FANToM({}).load(source(tmp_path / "nothing", cache_dir=tmp_path / "cache"))


def test_column_oriented_json_loads_like_pandas(tmp_path: Path) -> None:
    rows = json.loads(FIXTURE.read_text())
    cols = {k: {str(i): r[k] for i, r in enumerate(rows)} for k in rows[0]}
    (tmp_path / "fantom_v1.json").write_text(json.dumps(cols))
    assert [s.set_id for s in F.load_sets(tmp_path / "fantom_v1.json")] == [r["set_id"] for r in rows]


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


def make_tar(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_download_checks_sha256_and_extracts_the_data_file(served: tuple[str, Path], tmp_path: Path) -> None:
    url, root = served
    sha = make_tar(root / "fantom.tar.gz", {"fantom/fantom_v1.json": FIXTURE.read_bytes(), "fantom/README": b"x"})
    dest = tmp_path / "cache"
    got = F.fetch_archive(f"{url}/fantom.tar.gz", sha, dest)
    assert got == dest / "fantom_v1.json" and got.read_bytes() == FIXTURE.read_bytes()
    assert sorted(p.name for p in dest.iterdir()) == ["fantom_v1.json"]  # nothing else written, no temp left
    (root / "fantom.tar.gz").unlink()
    assert F.fetch_archive(f"{url}/fantom.tar.gz", sha, dest) == got  # second call: no download


def test_download_rejects_a_different_archive(served: tuple[str, Path], tmp_path: Path) -> None:
    url, root = served
    make_tar(root / "fantom.tar.gz", {"fantom_v1.json": FIXTURE.read_bytes()})
    with pytest.raises(TomDataError, match="checksum mismatch"):
        F.fetch_archive(f"{url}/fantom.tar.gz", "0" * 64, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


@pytest.mark.parametrize(
    ("members", "links", "why"),
    [
        ({"../fantom_v1.json": b"[]"}, None, "'..' component"),
        ({"/tmp/fantom_v1.json": b"[]"}, None, "absolute path"),
        ({"fantom_v1.json": b"[]"}, {"fantom/evil": "/etc/passwd"}, "a link"),
    ],
)
def test_unsafe_archives_are_refused(served: tuple[str, Path], tmp_path: Path, members: dict[str, bytes],
                                     links: dict[str, str] | None, why: str) -> None:
    url, root = served
    sha = make_tar(root / "bad.tar.gz", members, links)
    with pytest.raises(TomDataError, match=f"refusing to extract.*{why}"):
        F.fetch_archive(f"{url}/bad.tar.gz", sha, tmp_path / "cache")
    assert not (tmp_path / "cache" / "fantom_v1.json").exists()


def test_zip_archives_and_zip_slip(tmp_path: Path) -> None:
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("fantom/fantom_v1.json", FIXTURE.read_bytes())
    assert F.extract_data_file(good, tmp_path / "out").read_bytes() == FIXTURE.read_bytes()
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../../fantom_v1.json", b"[]")
    with pytest.raises(TomDataError, match="'..' component"):
        F.extract_data_file(bad, tmp_path / "out2")


def test_benchmark_downloads_into_the_cache(served: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, root = served
    sha = make_tar(root / "fantom.tar.gz", {"fantom_v1.json": FIXTURE.read_bytes()})
    monkeypatch.setattr(F, "OFFICIAL_SHA256", sha)
    bench = F.FANToM({"embedder": "none", "source_url": f"{url}/fantom.tar.gz"})
    qs = bench.load(source(None, download=True, cache_dir=tmp_path / "cache"))
    assert len([q for q in qs if q.facets["question_type"] == "fact"]) == 5
    assert (tmp_path / "cache" / "fantom" / sha[:16] / "fantom_v1.json").exists()
    # the pinned checksum guards the real URL too
    monkeypatch.setattr(F, "OFFICIAL_SHA256", "1" * 64)
    with pytest.raises(TomDataError, match="checksum mismatch"):
        F.FANToM({"embedder": "none", "source_url": f"{url}/fantom.tar.gz"}).load(
            source(None, download=True, cache_dir=tmp_path / "cache2"))
