"""Shared choice readers (`pytest_tom.scoring.choice`) and the majority vote (`pytest_tom.scoring`)."""

from __future__ import annotations

import pytest

from pytest_tom.scoring import majority
from pytest_tom.scoring.choice import (
    bracketed_label,
    bracketed_official,
    letter_official_correct,
    letters_picked,
)


class TestBracketedOfficial:
    """ToMBench upstream's `extract_answer`, golden cases from the spec (S4, P8)."""

    def test_defaults_to_the_first_label_when_nothing_matches(self) -> None:
        assert bracketed_official("") == ("A", False)
        assert bracketed_official("no letters here", "XY") == ("X", False)

    def test_priority_is_by_label_not_position(self) -> None:
        assert bracketed_official("[[B]] on reflection [[A]]") == ("A", True)
        assert bracketed_official("[[D]] then [[C]]") == ("C", True)

    def test_double_brackets_outrank_single_ones(self) -> None:
        assert bracketed_official("[A] but really [[C]]") == ("C", True)

    def test_falls_back_to_the_last_capital_label_anywhere(self) -> None:
        assert bracketed_official("I would ask my Dad") == ("D", True)
        assert bracketed_official("answer: [C]") == ("C", True)
        assert bracketed_official("Because Alice... Bob") == ("B", True)

    def test_a_repeated_format_example_reads_as_its_letter(self) -> None:
        """CoT outputs that repeat the prompt's 'A. Handbag' -> '[[A]]' example are read as A (spec P8)."""
        assert bracketed_official("like 'A. Handbag' -> '[[A]]', my answer is [[C]]") == ("A", True)

    def test_labels_are_a_parameter(self) -> None:
        assert bracketed_official("[[Y]]", "XYZ") == ("Y", True)
        assert bracketed_official("[[B]]", "XY") == ("X", False)


class TestBracketedLabel:
    def test_official_never_returns_none(self) -> None:
        assert bracketed_label("", "official", 4) == "A"
        assert bracketed_label(None, "official", 4) == "A"
        assert bracketed_label("[[B]]", "official", 4) == "B"

    def test_official_keeps_labels_beyond_the_items_options(self) -> None:
        """Upstream returns C on a binary item; the caller counts it as a wrong vote."""
        assert bracketed_label("[[C]]", "official", 2) == "C"

    def test_lenient_reports_unreadable_answers_instead_of_guessing(self) -> None:
        assert bracketed_label("", "lenient", 4) is None
        assert bracketed_label(None, "lenient", 4) is None
        assert bracketed_label("no idea, sorry", "lenient", 4) is None
        assert bracketed_label("[[B]]", "lenient", 4) == "B"
        assert bracketed_label("I would ask my Dad", "lenient", 4) == "D"  # upstream rules otherwise

    def test_strict_takes_the_last_double_bracket_and_validates_it(self) -> None:
        assert bracketed_label("[[A]] ... actually [[B]]", "strict", 4) == "B"
        assert bracketed_label("[[C]]", "strict", 2) is None
        assert bracketed_label("[[B]]", "strict", 2) == "B"
        assert bracketed_label("The answer is B", "strict", 4) is None
        assert bracketed_label("[B]", "strict", 4) is None
        assert bracketed_label(None, "strict", 4) is None

    def test_strict_escapes_its_labels(self) -> None:
        assert bracketed_label("[[^]]", "strict", 2, labels="^]") == "^"
        assert bracketed_label("[[x]]", "strict", 2, labels="^]") is None


class TestLetters:
    """FANToM upstream's `evaluate_mc_belief_q` and the strict single-letter reading."""

    @pytest.mark.parametrize("answer", ["(a)", "a) yes", "a. yes", "a: yes", "a, yes", "I pick (a) here", "a", "(A) Yes"])
    def test_official_accepts_upstreams_patterns(self, answer: str) -> None:
        assert letter_official_correct(answer, "a")

    @pytest.mark.parametrize("answer", ["b", "ab", "answer a", "(b)", " a)"])
    def test_official_rejects_everything_else(self, answer: str) -> None:
        assert not letter_official_correct(answer, "a")

    def test_official_picks_every_accepted_letter(self) -> None:
        assert letters_picked("(a) or (b)", "official", ["x", "y"]) == ("a", "b")
        assert letters_picked("b.", "official", ["x", "y"]) == ("b",)
        assert letters_picked("neither", "official", ["x", "y"]) == ()

    def test_strict_lets_a_leading_letter_decide(self) -> None:
        assert letters_picked("b) but (a) is tempting", "strict", ["x", "y"]) == ("b",)
        assert letters_picked('"(A)" Sam knows', "strict", ["x", "y"]) == ("a",)
        assert letters_picked("a", "strict", ["x", "y"]) == ("a",)

    def test_strict_falls_back_to_mentions_then_to_option_text(self) -> None:
        assert letters_picked("I think (b)", "strict", ["x", "y"]) == ("b",)
        assert letters_picked("I think (a), or (b), or (a)", "strict", ["x", "y"]) == ("a", "b")
        assert letters_picked("  Sam  KNOWS. ", "strict", ["Sam knows", "Sam does not know"]) == ("a",)
        assert letters_picked("I think b.", "strict", ["x", "y"]) == ()

    def test_labels_are_a_parameter(self) -> None:
        assert letters_picked("(c)", "strict", ["x", "y", "z"], labels="abc") == ("c",)
        assert letters_picked("(c)", "strict", ["x", "y"]) == ()


class TestMajority:
    def test_most_frequent_vote_wins(self) -> None:
        assert majority(["C", "A", "A"]) == "A"
        assert majority(["B"]) == "B"

    def test_ties_go_to_the_vote_recorded_first(self) -> None:
        assert majority(["B", "A", "A", "B", "C"]) == "B"
        assert majority(["A", "B", "B", "A"]) == "A"

    def test_an_always_wrong_empty_vote_can_win(self) -> None:
        """ToMBench maps a C/D answer on a binary item to "": it is a vote like any other."""
        assert majority(["", "A", ""]) == ""

    def test_no_votes_is_an_error_not_an_answer(self) -> None:
        with pytest.raises(ValueError):
            majority([])
