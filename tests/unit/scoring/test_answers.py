"""Shared answer scorers: yes/no, "who knows" lists, text overlap and embedding similarity (`pytest_tom.scoring`)."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tom.scoring import (
    binary_official,
    binary_strict,
    cosine,
    judge_list,
    mentions,
    nearer,
    token_f1,
    weighted_f1,
)

# --- yes/no ---------------------------------------------------------------------------------------


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
        ("She didn’t hear about it.", -1, 0),  # strict reads the typographic apostrophe
        ("**No**", -1, 0),  # strict skips markdown before the first word
    ],
)
def test_yes_no_parsing(text: str, official: int, strict: int) -> None:
    assert binary_official(text) == official
    assert binary_strict(text) == strict


@given(st.text(alphabet="knowKNOW ", max_size=30))
def test_strict_yes_no_never_reads_know_as_no(text: str) -> None:
    """Strings made of "know"-letters never contain the word "no"."""
    if "no" not in text.lower().split():
        assert binary_strict(text) != 0


@given(st.text(max_size=40))
def test_yes_no_readers_are_total(text: str) -> None:
    assert binary_official(text) in (-1, 0, 1) and binary_strict(text) in (-1, 0, 1)


# --- lists ----------------------------------------------------------------------------------------


def test_names_official_substring_vs_strict_words() -> None:
    assert mentions("Ann", "Anna and David", "official")
    assert not mentions("Ann", "Anna and David", "strict")
    assert mentions("Anna", "anna's friend", "strict")
    assert mentions("Mary-Jane", "I think mary-jane knows", "strict")
    j = judge_list("Anna, David", ["Anna", "David"], ["Ann"], "official")
    assert not j.correct and j.included_unaware  # upstream's substring false positive
    assert judge_list("Anna, David", ["Anna", "David"], ["Ann"], "strict").correct


@pytest.mark.parametrize(
    ("answer", "correct", "excluded", "included", "readable"),
    [
        ("Linda, David and Sally", True, False, False, True),
        ("Linda and Sally", False, True, False, True),
        ("Linda, David, Sally, Kailey", False, False, True, True),
        ("Kailey and Sally", False, True, True, True),
        ("Nobody knows.", False, True, False, True),
        ("No one.", False, True, False, True),
        ("I cannot tell.", False, True, False, False),
    ],
)
def test_list_exact_set(answer: str, correct: bool, excluded: bool, included: bool, readable: bool) -> None:
    j = judge_list(answer, ["Linda", "David", "Sally"], ["Kailey", "Marco"], "official")
    assert (j.correct, j.excluded_aware, j.included_unaware, j.readable) == (correct, excluded, included, readable)


def test_list_names_keep_the_gold_then_distractor_order() -> None:
    j = judge_list("Marco, Sally and Linda", ["Linda", "David", "Sally"], ["Kailey", "Marco"], "official")
    assert j.named == ("Linda", "Sally", "Marco")


def test_an_empty_gold_list_is_right_only_when_nobody_is_named() -> None:
    assert judge_list("Nobody knows.", [], ["Kailey"], "official").correct
    assert not judge_list("Kailey", [], ["Kailey"], "official").correct


# --- text overlap ---------------------------------------------------------------------------------


def test_token_f1_is_upstreams_whitespace_f1() -> None:
    # gold 3 tokens, answer 2 tokens, 2 shared: P = 1, R = 2/3, F1 = 2 * (2/3) / (5/3) = 0.8
    assert token_f1("the cat sat", "the cat") == pytest.approx(0.8)
    assert token_f1("The cat", "the cat") == pytest.approx(2 * 0.5 * 0.5 / 1.0)  # case-sensitive: 1 shared of 2
    assert token_f1("dog.", "dog") == 0.0  # no punctuation stripping
    assert token_f1("a a b", "a") == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))
    assert token_f1("x", "") == 0.0
    assert token_f1("", "x") == 0.0


def test_weighted_f1_hand_computed() -> None:
    # refs 12 yes / 4 no; preds: all yes right, no: 2 right, 1 said yes, 1 unreadable.
    # label 1: TP 12, FP 1, FN 0 -> 24/25; label 0: TP 2, FP 0, FN 2 -> 4/6; label -1: support 0.
    # weighted = (12 * 0.96 + 4 * 2/3) / 16 = 0.88667
    refs = [1] * 12 + [0] * 4
    preds = [1] * 12 + [0, 0, 1, -1]
    assert weighted_f1(preds, refs) == pytest.approx((12 * 0.96 + 4 * 2 / 3) / 16)
    assert weighted_f1([], []) is None


@settings(deadline=None, max_examples=60)  # the first example pays for importing scikit-learn
@given(st.lists(st.tuples(st.sampled_from([-1, 0, 1]), st.sampled_from([0, 1])), min_size=1, max_size=40))
def test_weighted_f1_equals_scikit_learn(pairs: list[tuple[int, int]]) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    preds = [p for p, _ in pairs]
    refs = [r for _, r in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = metrics.f1_score(refs, preds, average="weighted", zero_division=0)
    assert weighted_f1(preds, refs) == pytest.approx(float(expected))


# --- embeddings -----------------------------------------------------------------------------------


def test_cosine() -> None:
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 3.0]) == pytest.approx(0.0)
    assert cosine([1.0, 1.0], [1.0, 0.0]) == pytest.approx(2**-0.5)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0  # scikit-learn's convention for a zero vector
    assert cosine([1.0, 2.0], [-1.0, -2.0]) == pytest.approx(-1.0)


# Components are 0 or of a size whose squares do not underflow (embedding vectors are).
_COMPONENT = st.one_of(st.just(0.0), st.floats(1e-3, 1e3), st.floats(-1e3, -1e-3))


@given(st.lists(_COMPONENT, min_size=1, max_size=8), st.floats(0.01, 100))
def test_cosine_ignores_scale_and_is_symmetric(u: list[float], k: float) -> None:
    v = [x * k for x in u]
    if any(x != 0.0 for x in u):
        assert cosine(u, v) == pytest.approx(1.0)
    w = list(reversed(u))
    assert cosine(u, w) == cosine(w, u)
    assert -1.0 - 1e-9 <= cosine(u, w) <= 1.0 + 1e-9 and not math.isnan(cosine(u, w))


def test_nearer_compares_similarities_and_a_tie_is_not_nearer() -> None:
    answer, target, other = [0.9, 0.1], [1.0, 0.0], [0.0, 1.0]
    ok, to_target, to_other = nearer(answer, target, other)
    assert ok and to_target == cosine(answer, target) and to_other == cosine(answer, other)
    assert not nearer([1.0, 1.0], target, other)[0]  # equidistant: a tie counts as wrong
    assert not nearer([0.1, 0.9], target, other)[0]
