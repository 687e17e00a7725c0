"""SimpleToM scoring: the reference parser on every case of the spec, the reminder stage driven by hand, records."""

from __future__ import annotations

import pytest

from pytest_tom.evals.simpletom.data import SimpleToMExtra
from pytest_tom.evals.simpletom.prompts import MENTAL_STATE, config_from
from pytest_tom.evals.simpletom.scoring import mental_state_request, parse_answer, question_request, solve
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Request, Response
from pytest_tom.sample import Choice, Sample, Story, rename

STORY = "The bag of potato chips has moldy chips in it. Mary picks up the bag in the supermarket and walks to the cashier."
MS_Q = 'Is Mary likely to be aware that "The bag of potato chips has moldy chips in it."?'
MS_CHOICES = (Choice("A", "Yes"), Choice("B", "No"))
QUESTIONS = {
    MENTAL_STATE: (MS_Q, MS_CHOICES, "B"),
    "behavior": ("What will Mary likely do next?", (Choice("A", "report the moldy chips"), Choice("B", "pay for the chips")), "B"),
    "judgment": ('Next, Mary "pay for the chips" and not "report the moldy chips". The behavior of Mary can be best '
                 "described as: ", (Choice("A", "Reasonable"), Choice("B", "Not reasonable")), "A"),
}
SUFFIX = {MENTAL_STATE: "ms", "behavior": "behavior", "judgment": "judgment"}


def make(kind: str) -> Sample[SimpleToMExtra]:
    question, choices, gold = QUESTIONS[kind]
    extra = SimpleToMExtra(story_id="potato_chip_food_sev1", question_type=kind, scenario="food_item_in_grocery_store",
                           severity="1", ms_question=MS_Q, ms_choices=MS_CHOICES, ms_gold="B")
    return Sample(benchmark="simpletom", id=f"potato_chip_food_sev1-{SUFFIX[kind]}", context=Story(STORY), question=question,
                  choices=choices, gold=gold, characters=("Mary",),
                  facets={"question_type": kind, "scenario": "food_item_in_grocery_store", "severity": "1",
                          "story": "potato_chip_food_sev1"},
                  marks=("simpletom", kind), extra=extra)


def drive(sample: Sample[SimpleToMExtra], answers: list[str], **settings: str) -> tuple[list[list[Request]], Record]:
    """Run one program by hand: every wave's requests, answered in order from `answers`, and the record."""
    program = solve(sample, config_from(settings))
    waves = [list(next(program))]
    texts = iter(answers)
    while True:
        try:
            waves.append(list(program.send([Response(text=next(texts)) for _ in waves[-1]])))
        except StopIteration as stop:
            record = stop.value
            assert isinstance(record, Record)
            return waves, record


# -- the parser ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("(A)", "A"),
    ("(B)", "B"),
    ("Answer: (B)", "B"),
    ("answer: B", "B"),
    ("(B) pay for the chips", "B"),
    ("The correct answer is (A).", "A"),
    ('"(B)"', "B"),
    ("B", "B"),
    ("B.", "B"),
    ("(B", "B"),
    # upstream checks "(A)" first: any answer containing "(A)" reads as A, wherever it stands
    ("(B), not (A)", "A"),
    # both partial labels, or both bare letters: ambiguous
    ("(A or (B", None),
    ("A or B", None),
    # labels are case-sensitive upstream: a lowercase answer is unreadable
    ("(b)", None),
    ("b", None),
    ("", None),
    ("I cannot tell.", None),  # "I" is no label: no A-D at all
    # a label the question does not offer is read (and scored as unparseable by the record)
    ("(C)", "C"),
])
def test_the_direct_parser_is_the_reference_one(text: str, expected: str | None) -> None:
    assert parse_answer(text, cot=False) == expected


FIG9 = ("Let's think about what Emily's neighbor knows. **Option (A)** Keep a safe distance and alert animal control: "
        "this would require knowing about the snake. **Option (B)** Offer to help Emily carry the toolbox: the neighbor "
        "only sees a heavy toolbox.\n\nTherefore, the answer is: (B)")


@pytest.mark.parametrize(("text", "expected"), [
    # the spec's Fig. 9 case: "(A)" inside the reasoning never wins over the conclusion
    (FIG9, "B"),
    ("Mary does not know about the mold, so (A) is unlikely. Therefore, the answer is: (B)", "B"),
    ("Therefore, the answer is: **(B)** pay for the chips.", "B"),
    ("THEREFORE, THE ANSWER IS (A)", "A"),
    ("Therefore, the answer is: B", "B"),
    # the last "the answer is" counts
    ("At first glance the answer is (A). But Mary cannot see inside. Therefore, the answer is: (B)", "B"),
    # in the conclusion, the label that comes first wins (upstream would read A)
    ("Therefore, the answer is: (B), not (A)", "B"),
    # no conclusion: never read a label from the reasoning
    ("Option (A) is wrong, so I pick (B).", None),
    ("Therefore, the answer is: (b)", None),
    ("Therefore, the answer is: A or B", None),
    ("Therefore, the answer is:", None),
])
def test_the_chain_of_thought_parser_reads_only_the_final_conclusion(text: str, expected: str | None) -> None:
    assert parse_answer(text, cot=True) == expected


def test_a_missing_answer_is_unreadable() -> None:
    assert parse_answer(None, cot=False) is None and parse_answer(None, cot=True) is None


# -- records ------------------------------------------------------------------------------------------------

def test_a_correct_answer_is_a_clean_record() -> None:
    waves, record = drive(make("behavior"), ["(B)"])
    assert len(waves) == 1 and len(waves[0]) == 1
    assert record.outcome is Outcome.CORRECT and record.parsed == "B" and record.gold == "B" and record.message == ""
    assert record.responses == ("(B)",) and record.parse_rate == 1.0
    assert record.facets == make("behavior").facets
    assert record.details["story"] == "potato_chip_food_sev1" and record.details["intervention"] == "none"
    assert "reminder" not in record.details


def test_a_wrong_answer_names_answer_and_gold_with_their_texts_first() -> None:
    _, record = drive(make("behavior"), ["(A)"])
    assert record.outcome is Outcome.INCORRECT and record.parsed == "A"
    first, *rest = record.message.splitlines()
    assert first == 'SimpleToM behavior question: answered (A) "report the moldy chips"; gold (B) "pay for the chips"'
    assert any(line.startswith("story potato_chip_food_sev1 (food_item_in_grocery_store, severity 1): The bag") for line in rest)
    assert rest[-1] == "response: '(A)'"


@pytest.mark.parametrize(("answer", "cot", "first"), [
    ("(b)", False, "SimpleToM judgment question: unparseable answer; gold (A) \"Reasonable\""),
    ("(C)", False, "SimpleToM judgment question: answered (C), not an option; gold (A) \"Reasonable\""),
    ("(A) seems right to me", True, 'SimpleToM judgment question: unparseable answer (no "the answer is" in the chain '
                                    'of thought); gold (A) "Reasonable"'),
])
def test_an_unreadable_answer_is_unparseable_never_incorrect(answer: str, cot: bool, first: str) -> None:
    _, record = drive(make("judgment"), [answer], **({"intervention": "cot"} if cot else {}))
    assert record.outcome is Outcome.UNPARSEABLE and record.parsed is None and record.parse_rate == 0.0
    assert record.message.splitlines()[0] == first


def test_a_long_chain_of_thought_shows_its_conclusion_in_the_message() -> None:
    text = "Mary cannot see inside the sealed bag. " * 30 + "Therefore, the answer is: (B)"
    _, record = drive(make("judgment"), [text], intervention="cot_tom")
    assert record.outcome is Outcome.INCORRECT and record.details["cot"] is True
    assert record.message.splitlines()[-1].endswith("Therefore, the answer is: (B)'")


# -- the released code's CoT run and extra options ----------------------------------------------------------

def test_under_cot_the_mental_state_question_is_asked_and_read_with_cot() -> None:
    waves, record = drive(make(MENTAL_STATE), ["Mary cannot see the mold. Therefore, the answer is: (B)"],
                          intervention="cot")
    assert waves[0][0].settings.max_new_tokens == 500
    assert record.outcome is Outcome.CORRECT and record.details["cot"] is True and record.details["intervention"] == "cot"
    _, direct = drive(make(MENTAL_STATE), ["(B)"], intervention="cot", cot_mental_state="false")
    assert direct.outcome is Outcome.CORRECT and direct.details["cot"] is False and direct.details["intervention"] == "none"
    _, wrong = drive(make(MENTAL_STATE), ["She sees it. Therefore, the answer is: (A)"], intervention="cot")
    assert "asked with: intervention cot (CoT), persona none" in wrong.message.splitlines()


@pytest.mark.parametrize(("settings", "answer", "label", "extra"), [
    ({"extra_options": "either"}, "(C)", "C", "either"),
    ({"extra_options": "neither"}, "(C)", "C", "neither"),
    ({"extra_options": "either,neither"}, "(C)", "C", "either"),
    ({"extra_options": "either,neither"}, "(D) Neither", "D", "neither"),
    ({"extra_options": "either,neither", "intervention": "cot"}, "Therefore, the answer is: (D)", "D", "neither"),
    # the conclusion's first label wins (pytest-tom's CoT reading; upstream checks (A) first and would read A)
    ({"extra_options": "either", "intervention": "cot"}, "Therefore, the answer is: (C) Both (A) and (B) are likely",
     "C", "either"),
])
def test_an_extra_option_is_offered_but_always_wrong(settings: dict[str, str], answer: str, label: str,
                                                     extra: str) -> None:
    _, record = drive(make("judgment"), [answer], **settings)
    assert record.outcome is Outcome.INCORRECT and record.parsed == label and record.details["extra_option"] == extra
    assert record.details["extra_options"] == settings["extra_options"].split(",")
    text = {"either": "Both (A) and (B) are likely", "neither": "Neither (A) nor (B) is likely"}[extra]
    first = record.message.splitlines()[0]
    assert first == (f'SimpleToM judgment question: answered ({record.parsed}) "{text}" (an extra option: never the '
                     'answer); gold (A) "Reasonable"')
    assert f"({record.parsed}) {text}" in next(line for line in record.message.splitlines() if line.startswith("options:"))


def test_answers_read_as_a_or_b_read_the_same_with_extra_options() -> None:
    """Upstream's direct rule tests (A) first: an echo of the either option reads A, with or without the options."""
    for settings in ({}, {"extra_options": "either"}):
        _, record = drive(make("judgment"), ["(C) Both (A) and (B) are likely"], **settings)
        assert record.parsed == "A" and record.outcome is Outcome.CORRECT
        assert record.details.get("extra_option") is None
    _, plain = drive(make("judgment"), ["(A)"])
    assert "extra_options" not in plain.details and "extra_option" not in plain.details


def test_a_reminder_shows_an_extra_option_the_model_picked() -> None:
    waves, record = drive(make("behavior"), ["(C)", "(B)"], intervention="reminder", extra_options="either")
    assert "\n(A) Yes (B) No (C) Both (A) and (B) are likely\nAnswer: (C)\n\n" in waves[1][0].messages[1].content
    assert record.details["reminder"] == {"question": MS_Q, "response": "(C)", "parsed": "C", "shown": "(C)",
                                          "correct": False}


# -- the mental-state reminder: a dependent second stage -------------------------------------------------------

@pytest.mark.parametrize("kind", ["behavior", "judgment"])
@pytest.mark.parametrize("intervention", ["reminder", "cot_tom_reminder"])
def test_the_second_stage_shows_the_models_own_first_answer(kind: str, intervention: str) -> None:
    ms = make(MENTAL_STATE)
    wrong = "A" if kind == "behavior" else "B"
    answer = f"Therefore, the answer is: ({wrong})" if intervention == "cot_tom_reminder" else f"({wrong})"
    waves, record = drive(make(kind), ["(A)", answer], intervention=intervention)
    # Stage 1 is the mental-state item's own request: same messages and settings, so the engine asks it once.
    assert len(waves[0]) == 1
    assert waves[0][0].key == question_request(ms, config_from({"intervention": intervention})).key
    assert waves[0][0].key == question_request(ms, config_from({})).key
    # Stage 2 reminds the model of ITS answer, "(A) Yes" (wrong: the gold is B), not of the gold.
    prompt = waves[1][0].messages[1].content
    assert f"Question: {MS_Q}\n(A) Yes (B) No\nAnswer: (A)\n\nQuestion: {make(kind).question}" in prompt
    assert record.details["reminder"] == {"question": MS_Q, "response": "(A)", "parsed": "A", "shown": "(A)",
                                          "correct": False}
    assert record.outcome is Outcome.INCORRECT
    assert "reminder: Answer: (A) (the model's own mental-state answer, wrong; gold (B))" in record.message.splitlines()


def test_a_right_first_answer_is_shown_as_right() -> None:
    waves, record = drive(make("behavior"), ["Answer: (B)", "(B)"], intervention="reminder")
    assert "Answer: (B)\n" in waves[1][0].messages[1].content
    assert record.outcome is Outcome.CORRECT and record.details["reminder"]["correct"] is True


def test_an_unreadable_first_answer_is_shown_as_the_model_wrote_it() -> None:
    waves, record = drive(make("behavior"), ["  I am not sure.  ", "(A)"], intervention="reminder")
    assert "\nAnswer: I am not sure.\n\nQuestion: What will Mary" in waves[1][0].messages[1].content
    assert record.details["reminder"]["parsed"] is None and record.details["reminder"]["shown"] == "I am not sure."
    assert "unreadable" in record.message


def test_the_mental_state_item_and_unreminded_questions_ask_once() -> None:
    for kind in (MENTAL_STATE,):
        waves, record = drive(make(kind), ["(B)"], intervention="cot_tom_reminder")
        assert len(waves) == 1 and record.outcome is Outcome.CORRECT and record.details["intervention"] == "none"
        assert record.details["cot"] is False
    waves, _ = drive(make("behavior"), ["(B)"], intervention="cot_tom")
    assert len(waves) == 1


def test_the_reminder_stage_follows_a_rename_consistently() -> None:
    """A renamed sample asks the renamed mental-state question, exactly as the renamed mental-state item does."""
    renamed = {k: rename(make(k), {"Mary": "Alice"}) for k in QUESTIONS}
    config = config_from({"intervention": "reminder"})
    assert mental_state_request(renamed["behavior"], config).key == question_request(renamed[MENTAL_STATE], config).key
    assert "Alice" in mental_state_request(renamed["judgment"], config).messages[1].content


def test_a_sample_without_its_mental_state_question_cannot_be_reminded() -> None:
    import dataclasses

    sample = make("behavior")
    bare = dataclasses.replace(sample, extra=dataclasses.replace(sample.extra, ms_question=""))
    with pytest.raises(ValueError, match="no mental-state question"):
        next(solve(bare, config_from({"intervention": "reminder"})))


def test_every_first_stage_is_its_mental_state_items_own_request(fixtures_dir) -> None:  # type: ignore[no-untyped-def]
    """On the loader's samples (the bundled fixtures): the engine can dedupe the two, whatever the settings."""
    from pytest_tom.evals.simpletom import SimpleToM
    from pytest_tom.framework.base import DataSource

    for settings in ({"intervention": "reminder"}, {"intervention": "cot_tom_reminder", "persona": "lawyer",
                                                    "layout": "reference", "extra_options": "neither"}):
        bench = SimpleToM({"partial": "true", **settings})
        samples = bench.load(DataSource(fixtures_dir, False, fixtures_dir))
        own = {s.extra.story_id: next(bench.program(s))[0].key for s in samples if s.extra.question_type == MENTAL_STATE}
        others = [s for s in samples if s.extra.question_type != MENTAL_STATE]
        assert others and own
        for s in others:
            first = next(bench.program(s))
            assert len(first) == 1 and first[0].key == own[s.extra.story_id], s.id


def test_the_docs_show_a_real_failure_message() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[4] / "docs" / "benchmarks" / "simpletom.md").read_text(encoding="utf-8")
    _, record = drive(make("behavior"), ["(A)", "(A)"], intervention="reminder")
    assert f"```text\n{record.message}\n```" in readme
