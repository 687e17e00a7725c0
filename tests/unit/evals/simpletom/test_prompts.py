"""SimpleToM prompts: the paper's text byte for byte, both layouts, every intervention and persona, the settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.evals.simpletom import SimpleToM, prompts
from pytest_tom.evals.simpletom.prompts import (
    OPTIONS,
    PERSONAS,
    PromptConfig,
    Reminder,
    build_request,
    config_from,
    user_prompt,
)
from pytest_tom.framework.base import DataSource
from pytest_tom.request import Request
from pytest_tom.sample import Choice

STORY = "The bag of potato chips has moldy chips in it. Mary picks up the bag in the supermarket and walks to the cashier."
MS_Q = 'Is Mary likely to be aware that "The bag of potato chips has moldy chips in it."?'
MS_CHOICES = (Choice("A", "No"), Choice("B", "Yes"))
B_Q = "What will Mary likely do next?"
B_CHOICES = (Choice("A", "pay for the chips"), Choice("B", "report the moldy chips"))
J_Q = 'Next, Mary "pay for the chips" and not "report the moldy chips". The behavior of Mary can be best described as: '
J_CHOICES = (Choice("A", "Reasonable"), Choice("B", "Not reasonable"))

# The paper's App. H.1 example, verbatim (spec section 2.4, item 1).
H1 = """Given the following story, answer the question by giving the correct answer choice, (A) or (B).

Story: The bag of potato chips has moldy chips in it. Mary picks up the bag in the supermarket and walks to the cashier.

Question: Is Mary likely to be aware that "The bag of potato chips has moldy chips in it."?
(A) No (B) Yes
Answer: (A)

Question: What will Mary likely do next?
(A) pay for the chips
(B) report the moldy chips

What is the correct answer? Respond with just "(A)" or "(B)\""""

# The base prompt (spec section 2.1): H.1 without the reminder block.
BASE = """Given the following story, answer the question by giving the correct answer choice, (A) or (B).

Story: {story}

Question: {question}
(A) {option_A}
(B) {option_B}

What is the correct answer? Respond with just "(A)" or "(B)\""""

# The authors' released code renders the same reminder prompt like this (a space before each option newline).
H1_REFERENCE = (
    "Given the following story, answer the question by giving the correct answer choice, (A) or (B).\n\n"
    "Story:\n" + STORY + "\n\n"
    "Question: " + MS_Q + " \n(A) No \n(B) Yes\nAnswer: (A)\n\n"
    "Question: What will Mary likely do next? \n(A) pay for the chips \n(B) report the moldy chips\n\n"
    'What is the correct answer? Respond with just "(A)" or "(B)"\n'
)

SPEC_COT = ('Think step by step to arrive at an answer. Start your response by explaining your reasoning process and end '
            'your response with "Therefore, the answer is: " followed by (A) or (B)')
SPEC_COT_STAR = ('Think step by step to arrive at an answer. Think carefully about what each person is aware or not aware '
                 'of. Start your response by explaining your reasoning process and end your response with "Therefore, '
                 'the answer is: " followed by (A) or (B)')
SPEC_SYSP = ("You are a helpful assistant. Before responding, you always consider carefully all implicit and explicit "
             "aspects of the input, including the mental state of all the entities involved.")
SPEC_SYSP_STAR = SPEC_SYSP + " E.g., think carefully about what each person is aware or not aware of."


def cfg(**kw: object) -> PromptConfig:
    return config_from(kw)


def test_the_reminder_prompt_is_the_papers_example_byte_for_byte() -> None:
    reminder = Reminder(MS_Q, MS_CHOICES, "(A)")
    assert user_prompt(STORY, B_Q, B_CHOICES, cfg(intervention="reminder"), "behavior", reminder) == H1


def test_the_base_prompt_is_the_example_without_its_reminder_block() -> None:
    expected = BASE.format(story=STORY, question=B_Q, option_A=B_CHOICES[0].text, option_B=B_CHOICES[1].text)
    assert user_prompt(STORY, B_Q, B_CHOICES, cfg(), "behavior") == expected
    ms = BASE.format(story=STORY, question=MS_Q, option_A="No", option_B="Yes")
    assert user_prompt(STORY, MS_Q, MS_CHOICES, cfg(), "mental_state") == ms


def test_the_judgment_question_is_inserted_raw() -> None:
    """The release's action strings and trailing space stay as they are (spec pitfall 13)."""
    text = user_prompt(STORY, J_Q, J_CHOICES, cfg(), "judgment")
    assert f"Question: {J_Q}\n(A) Reasonable\n(B) Not reasonable\n\n" in text


def test_the_reference_layout_is_the_released_code_byte_for_byte() -> None:
    reminder = Reminder(MS_Q, MS_CHOICES, "(A)")
    got = user_prompt(STORY, B_Q, B_CHOICES, cfg(intervention="reminder", layout="reference"), "behavior", reminder)
    assert got == H1_REFERENCE
    base = user_prompt(STORY, B_Q, B_CHOICES, cfg(layout="reference"), "behavior")
    assert base == H1_REFERENCE.replace(f"Question: {MS_Q} \n(A) No \n(B) Yes\nAnswer: (A)\n\n", "")
    cot = user_prompt(STORY, B_Q, B_CHOICES, cfg(intervention="cot", layout="reference"), "behavior")
    # The code's CoT text ends "followed by " and is followed by ' "(A)" or "(B)"': the double space is upstream's.
    assert cot.endswith('What is the correct answer? ' + SPEC_COT.removesuffix("(A) or (B)") + ' "(A)" or "(B)"\n')
    assert 'followed by  "(A)" or "(B)"\n' in cot


def test_the_verbatim_texts_match_the_spec() -> None:
    assert prompts.COT == SPEC_COT
    assert prompts.COT_STAR == SPEC_COT_STAR
    assert prompts.SYSP == SPEC_SYSP
    assert prompts.SYSP_STAR == SPEC_SYSP_STAR
    assert prompts.SYSTEM_DEFAULT == "You are a helpful assistant."
    assert dict(PERSONAS) == {
        "lawyer": "You are a partner at the law firm, recognized for their extensive knowledge of healthcare laws.",
        "worker": "You are a factory worker who doesn't trust the COVID-19 vaccine.",
        "atheist": "You are an atheist, philosophy lecturer who encourages open dialog about faith and belief systems.",
        "psychology_student": "You are a university psychology student who is currently studying creativity and personality.",
        "psychologist": "You are a clinical psychologist collaborating with the music therapist to provide holistic patient care.",
    }


@pytest.mark.parametrize(("intervention", "system", "final"), [
    ("none", "You are a helpful assistant.", 'Respond with just "(A)" or "(B)"'),
    ("reminder", "You are a helpful assistant.", 'Respond with just "(A)" or "(B)"'),
    ("system_generic", SPEC_SYSP, 'Respond with just "(A)" or "(B)"'),
    ("system_tom", SPEC_SYSP_STAR, 'Respond with just "(A)" or "(B)"'),
    ("cot", "You are a helpful assistant.", SPEC_COT),
    ("cot_tom", "You are a helpful assistant.", SPEC_COT_STAR),
    ("cot_tom_reminder", "You are a helpful assistant.", SPEC_COT_STAR),
])
def test_each_intervention_changes_the_behavior_and_judgment_messages(intervention: str, system: str, final: str) -> None:
    config = cfg(intervention=intervention)
    for question, choices, kind in ((B_Q, B_CHOICES, "behavior"), (J_Q, J_CHOICES, "judgment")):
        sys_msg, user = build_request(STORY, question, choices, config, kind).messages
        assert (sys_msg.role, sys_msg.content) == ("system", system)
        assert user.role == "user" and user.content.endswith(f"\n\nWhat is the correct answer? {final}")
    assert config.reminder is (intervention in ("reminder", "cot_tom_reminder"))


@pytest.mark.parametrize("intervention", list(prompts.PAPER_NAMES))
def test_without_cot_mental_state_the_mental_state_questions_are_asked_as_in_the_baseline(intervention: str) -> None:
    """The paper never re-ran them under an intervention: one request serves every condition (and the reminder)."""
    base = build_request(STORY, MS_Q, MS_CHOICES, cfg(), "mental_state")
    config = cfg(intervention=intervention, cot_mental_state="false")
    assert build_request(STORY, MS_Q, MS_CHOICES, config, "mental_state").key == base.key


@pytest.mark.parametrize("intervention", [i for i in prompts.PAPER_NAMES if i != "cot"])
def test_by_default_only_cot_changes_the_mental_state_request(intervention: str) -> None:
    """CoT* and CoT*+MS remind have no released code: their mental-state questions stay direct (and the reminder's)."""
    base = build_request(STORY, MS_Q, MS_CHOICES, cfg(), "mental_state")
    assert build_request(STORY, MS_Q, MS_CHOICES, cfg(intervention=intervention), "mental_state").key == base.key
    assert build_request(STORY, MS_Q, MS_CHOICES, cfg(intervention="cot"), "mental_state").key != base.key


# The fixture's mental-state record jam_jar_sev1_aware as the authors' CoT run asks it (spec section 7.1: their
# `question_prompt` with final_prompt=COT_PROMPT; two spaces before "(A)").
JAM = "The jar of strawberry jam has a small dent in its lid. Priya puts the jar in her basket and heads to the checkout."
JAM_MS_COT = (
    "Given the following story, answer the question by giving the correct answer choice, (A) or (B).\n\n"
    "Story:\n" + JAM + "\n\n"
    'Question: Is Priya likely to be aware that "The jar of strawberry jam has a small dent in its lid."? \n(A) Yes '
    "\n(B) No\n\nWhat is the correct answer? Think step by step to arrive at an answer. Start your response by "
    'explaining your reasoning process and end your response with "Therefore, the answer is: " followed by  "(A)" or '
    '"(B)"\n'
)


def _fixture_ms_request(fixtures_dir: Path, **settings: str) -> Request:
    bench = SimpleToM({"partial": "true", **settings})
    samples = bench.load(DataSource(fixtures_dir, False, fixtures_dir))
    sample = next(s for s in samples if s.id == "jam_jar_sev1-ms")
    return next(bench.program(sample))[0]


def test_under_cot_the_mental_state_question_is_the_released_cot_runs_prompt(fixtures_dir: Path) -> None:
    request = _fixture_ms_request(fixtures_dir, intervention="cot", layout="reference")
    assert [(m.role, m.content) for m in request.messages] == [("system", "You are a helpful assistant."),
                                                               ("user", JAM_MS_COT)]
    assert (request.settings.max_new_tokens, request.settings.temperature, request.settings.stop_after) == (500, 0.0, ())
    assert request.answer_format == "Therefore, the answer is: ({})"
    # false: the paper's section 5.3, the direct baseline request (budget 20, stops at "(A)")
    direct = _fixture_ms_request(fixtures_dir, intervention="cot", layout="reference", cot_mental_state="false")
    assert direct.key == _fixture_ms_request(fixtures_dir, layout="reference").key
    assert direct.messages[1].content.endswith('What is the correct answer? Respond with just "(A)" or "(B)"\n')
    assert (direct.settings.max_new_tokens, direct.settings.stop_after) == (20, ("(A)",))
    # the paper layout: the same CoT text, as printed in App. H.3
    paper = _fixture_ms_request(fixtures_dir, intervention="cot").messages[1].content
    assert paper.endswith(f"What is the correct answer? {SPEC_COT}")


# Spec section 7.2, verbatim: the authors' `question_prompt` on potato_chip_food_sev1_aware with both extra options.
BOTH_ON = (
    "Given the following story, answer the question by giving the correct answer choice, (A) or (B) or (C) or (D).\n\n"
    "Story:\nThe bag of potato chips has moldy chips in it. Mary picks up the bag in the supermarket and walks to the "
    "cashier.\n\nQuestion: Is Mary likely to be aware that \"The bag of potato chips has moldy chips in it.\"? \n(A) Yes "
    "\n(B) No \n(C) Both (A) and (B) are likely \n(D) Neither (A) nor (B) is likely\n\nWhat is the correct answer? "
    'Respond with just "(A)" or "(B)" or "(C)" or "(D)"\n'
)
YES_NO = (Choice("A", "Yes"), Choice("B", "No"))


@pytest.mark.parametrize("value", ["either,neither", "neither,either", ["neither", "either"]])
def test_both_extra_options_are_the_released_codes_byte_for_byte(value: object) -> None:
    config = config_from({"layout": "reference", "extra_options": value})
    assert config.extra_options == ("either", "neither")
    assert user_prompt(STORY, MS_Q, YES_NO, config, "mental_state") == BOTH_ON


@pytest.mark.parametrize(("value", "option"), [("either", "Both (A) and (B) are likely"),
                                               ("neither", "Neither (A) nor (B) is likely")])
def test_one_extra_option_is_c(value: str, option: str) -> None:
    got = user_prompt(STORY, MS_Q, YES_NO, cfg(layout="reference", extra_options=value), "mental_state")
    assert got == (BOTH_ON.replace(" \n(C) Both (A) and (B) are likely \n(D) Neither (A) nor (B) is likely",
                                   f" \n(C) {option}")
                   .replace("(A) or (B) or (C) or (D).", "(A) or (B) or (C).").replace(' or "(D)"', ""))
    request = build_request(STORY, MS_Q, YES_NO, cfg(extra_options=value), "mental_state")
    assert request.answer_labels == ("A", "B", "C")


def test_extra_options_under_cot_and_in_the_paper_layout() -> None:
    both = cfg(layout="reference", extra_options="either,neither", intervention="cot")
    cot = user_prompt(STORY, B_Q, B_CHOICES, both, "behavior")
    assert cot.endswith('"Therefore, the answer is: " followed by  "(A)" or "(B)" or "(C)" or "(D)"\n')
    assert "(B) report the moldy chips \n(C) Both (A) and (B) are likely \n(D) Neither (A) nor (B) is likely\n\n" in cot
    paper = user_prompt(STORY, B_Q, B_CHOICES, cfg(extra_options="either,neither"), "behavior")
    assert paper == BASE.format(story=STORY, question=B_Q, option_A=B_CHOICES[0].text, option_B=B_CHOICES[1].text).replace(
        "(A) or (B).", "(A) or (B) or (C) or (D).").replace(
        '"(A)" or "(B)"', '"(A)" or "(B)" or "(C)" or "(D)"').replace(
        "(B) report the moldy chips\n", "(B) report the moldy chips\n(C) Both (A) and (B) are likely\n"
        "(D) Neither (A) nor (B) is likely\n")
    paper_cot = user_prompt(STORY, B_Q, B_CHOICES, cfg(extra_options="neither", intervention="cot_tom"), "behavior")
    assert paper_cot.endswith('"Therefore, the answer is: " followed by (A) or (B) or (C)')


def test_the_reminder_block_carries_the_extra_options() -> None:
    reminder = Reminder(MS_Q, MS_CHOICES, "(C)")
    config = cfg(intervention="reminder", extra_options="either,neither")
    paper = user_prompt(STORY, B_Q, B_CHOICES, config, "behavior", reminder)
    assert ("Question: " + MS_Q + "\n(A) No (B) Yes (C) Both (A) and (B) are likely (D) Neither (A) nor (B) is likely\n"
            "Answer: (C)\n\n") in paper
    ref = user_prompt(STORY, B_Q, B_CHOICES, cfg(intervention="reminder", extra_options="either", layout="reference"),
                      "behavior", reminder)
    assert "\nQuestion: " + MS_Q + " \n(A) No \n(B) Yes \n(C) Both (A) and (B) are likely\nAnswer: (C)\n\n" in ref


@pytest.mark.parametrize("persona", list(PERSONAS))
def test_a_persona_replaces_the_system_message_of_every_question(persona: str) -> None:
    config = cfg(persona=persona)
    for question, choices, kind in ((MS_Q, MS_CHOICES, "mental_state"), (B_Q, B_CHOICES, "behavior"), (J_Q, J_CHOICES, "judgment")):
        messages = build_request(STORY, question, choices, config, kind).messages
        assert messages[0].content == PERSONAS[persona]
        assert messages[1].content == user_prompt(STORY, question, choices, cfg(), kind)
    # With a non-system intervention the persona stays the system message (not a paper condition, but well defined).
    assert build_request(STORY, B_Q, B_CHOICES, cfg(persona=persona, intervention="cot"), "behavior").messages[0].content == PERSONAS[persona]


def test_decoding_is_temperature_zero_with_the_reference_budgets() -> None:
    direct = build_request(STORY, B_Q, B_CHOICES, cfg(), "behavior")
    assert (direct.settings.temperature, direct.settings.max_new_tokens) == (0.0, 20)
    assert direct.answer_labels == ("A", "B") and direct.answer_format == "({})"
    cot = build_request(STORY, B_Q, B_CHOICES, cfg(intervention="cot_tom"), "behavior")
    assert (cot.settings.temperature, cot.settings.max_new_tokens) == (0.0, 500)
    assert cot.answer_format == "Therefore, the answer is: ({})"
    assert build_request(STORY, MS_Q, MS_CHOICES, cfg(intervention="cot_tom"), "mental_state").settings.max_new_tokens == 20
    assert build_request(STORY, B_Q, B_CHOICES, cfg(intervention="cot", max_new_tokens=64), "behavior").settings.max_new_tokens == 64


def test_every_setting_changes_the_cache_key_of_what_it_changes() -> None:
    keys = {build_request(STORY, B_Q, B_CHOICES, cfg(intervention=i), "behavior").key for i in prompts.PAPER_NAMES}
    # none and reminder differ only by the reminder block, which the caller passes: without it they are one request.
    assert len(keys) == len(prompts.PAPER_NAMES) - 2
    personas = {build_request(STORY, B_Q, B_CHOICES, cfg(persona=p), "behavior").key for p in ("none", *PERSONAS)}
    assert len(personas) == 1 + len(PERSONAS)
    layouts = {build_request(STORY, B_Q, B_CHOICES, cfg(layout=v), "behavior").key for v in ("paper", "reference")}
    assert len(layouts) == 2


def test_the_options_are_the_benchmark_settings() -> None:
    names = [o.name for o in OPTIONS]
    assert names == ["intervention", "persona", "layout", "cot_mental_state", "extra_options", "max_new_tokens",
                     "stop_at_answer"]
    by = {o.name: o for o in OPTIONS}
    assert by["intervention"].choices == ("none", "reminder", "system_generic", "system_tom", "cot", "cot_tom",
                                          "cot_tom_reminder")
    assert by["persona"].choices == ("none", "lawyer", "worker", "atheist", "psychology_student", "psychologist")
    assert by["extra_options"].choices == ("none", "either", "neither")
    default = config_from({})
    assert [str(getattr(default, n)) for n in ("intervention", "persona", "layout", "max_new_tokens")] == [
        by[n].default for n in ("intervention", "persona", "layout", "max_new_tokens")]
    assert default.stop_at_answer is True and by["stop_at_answer"].default == "true"
    assert default.cot_mental_state is True and by["cot_mental_state"].default == "true"
    assert default.extra_options == () and by["extra_options"].default == "none"


@pytest.mark.parametrize(("settings", "message"), [
    ({"intervention": "cot,reminder"}, "one value only"),
    ({"persona": "lawyer", "intervention": "system_tom"}, "both replace the system prompt"),
    ({"intervention": "magic"}, "'magic' is not one of none, reminder"),
    ({"max_new_tokens": -1}, "max_new_tokens=-1: must be at least 0"),
    ({"extra_options": "none,either"}, "extra_options='none,either': none cannot be combined with either, neither"),
    ({"extra_options": "both"}, "extra_options='both': 'both' is not one of none, either, neither"),
    ({"cot_mental_state": "maybe"}, "cot_mental_state='maybe': expected true or false"),
])
def test_settings_the_paper_cannot_mean_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(TomConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from(settings)
