"""SimpleToM prompts: the paper's text byte for byte, both layouts, every intervention and persona, the settings."""

from __future__ import annotations

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.evals.simpletom import prompts
from pytest_tom.evals.simpletom.prompts import (
    OPTIONS,
    PERSONAS,
    PromptConfig,
    Reminder,
    build_request,
    config_from,
    user_prompt,
)
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
def test_mental_state_questions_are_always_asked_as_in_the_baseline(intervention: str) -> None:
    """The paper never re-ran them under an intervention: one request serves every condition (and the reminder)."""
    base = build_request(STORY, MS_Q, MS_CHOICES, cfg(), "mental_state")
    assert build_request(STORY, MS_Q, MS_CHOICES, cfg(intervention=intervention), "mental_state").key == base.key


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
    assert names == ["intervention", "persona", "layout", "max_new_tokens", "stop_at_answer"]
    by = {o.name: o for o in OPTIONS}
    assert by["intervention"].choices == ("none", "reminder", "system_generic", "system_tom", "cot", "cot_tom",
                                          "cot_tom_reminder")
    assert by["persona"].choices == ("none", "lawyer", "worker", "atheist", "psychology_student", "psychologist")
    assert all(o.default == config_from({}).__getattribute__(o.name).__str__() for o in OPTIONS[:-1])
    assert config_from({}).stop_at_answer is True and by["stop_at_answer"].default == "true"


@pytest.mark.parametrize(("settings", "message"), [
    ({"intervention": "cot,reminder"}, "one value per run"),
    ({"persona": "lawyer", "intervention": "system_tom"}, "both replace the system prompt"),
    ({"intervention": "magic"}, "expected one of"),
    ({"max_new_tokens": -1}, "expected 0 (automatic) or more"),
])
def test_settings_the_paper_cannot_mean_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(TomConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from(settings)
