"""What a model is shown: the paper's prompt verbatim, its interventions and personas, the requests.

Two layouts: ``paper`` (as App. H.1 prints it) and ``reference`` (the authors' `question_prompt`, byte for byte).
Interventions change only the behavior and judgment questions (the paper never re-ran the mental-state ones), except
that `cot` asks the mental-state questions with CoT too by default, as the authors' released CoT run does; a persona
changes all three (Table 9). The code's extra options ("either", "neither") follow (A)/(B) when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from pytest_tom.errors import TomConfigError
from pytest_tom.framework.base import BenchmarkOption, stop_at_answer_option
from pytest_tom.request import GenerationSettings, Message, Request
from pytest_tom.sample import Choice

MENTAL_STATE = "mental_state"

_HEAD = "Given the following story, answer the question by giving the correct answer choice, "  # + "(A) or (B)."
ASK = "What is the correct answer?"
SYSTEM_DEFAULT = "You are a helpful assistant."  # the reference code's; the paper's SysP prompts begin with it
SYSP = ("You are a helpful assistant. Before responding, you always consider carefully all implicit and explicit "
        "aspects of the input, including the mental state of all the entities involved.")  # App. H.2
SYSP_STAR = SYSP + " E.g., think carefully about what each person is aware or not aware of."  # App. H.2
_COT_END = ('Start your response by explaining your reasoning process and end your response with "Therefore, the '
            'answer is: " followed by (A) or (B)')
COT = "Think step by step to arrive at an answer. " + _COT_END  # App. H.3
COT_STAR = ("Think step by step to arrive at an answer. Think carefully about what each person is aware or not "
            "aware of. " + _COT_END)
PERSONAS: Mapping[str, str] = {
    "lawyer": "You are a partner at the law firm, recognized for their extensive knowledge of healthcare laws.",
    "worker": "You are a factory worker who doesn't trust the COVID-19 vaccine.",
    "atheist": "You are an atheist, philosophy lecturer who encourages open dialog about faith and belief systems.",
    "psychology_student": "You are a university psychology student who is currently studying creativity and "
                          "personality.",
    "psychologist": "You are a clinical psychologist collaborating with the music therapist to provide holistic "
                    "patient care.",
}
"""The PersonaHub system prompts of App. M (they replace the system message)."""

# The reference code's wording: its chain-of-thought text ends "followed by " and is followed by ' "(A)" or "(B)"'.
REF_RESPOND = "Respond with just"  # + ' "(A)" or "(B)"': the direct-answer contract (App. H.1)
REF_COT = COT.removesuffix("(A) or (B)")
REF_COT_STAR = COT_STAR.removesuffix("(A) or (B)")
# The authors' `question_prompt` (utils.py, add_either_option / add_neither_option): appended after the release's two
# options, either first; no published run uses them (run_inference.py hard-codes both off).
EXTRA_OPTIONS: Mapping[str, str] = {"either": "Both (A) and (B) are likely", "neither": "Neither (A) nor (B) is likely"}

PAPER_NAMES: Mapping[str, str] = {  # each `intervention` value and its name in the paper's tables
    "none": "baseline", "reminder": "MS remind", "system_generic": "SysP", "system_tom": "SysP*", "cot": "CoT",
    "cot_tom": "CoT*", "cot_tom_reminder": "CoT*+MS remind"}
SYSTEM_INTERVENTIONS: Mapping[str, str] = {"system_generic": SYSP, "system_tom": SYSP_STAR}
COT_INTERVENTIONS: Mapping[str, str] = {"cot": "cot", "cot_tom": "cot_tom", "cot_tom_reminder": "cot_tom"}
REMINDER_INTERVENTIONS = ("reminder", "cot_tom_reminder")
DIRECT_TOKENS, COT_TOKENS = 20, 500  # the reference code's max_tokens without and with chain of thought

OPTIONS: tuple[BenchmarkOption, ...] = (
    BenchmarkOption("intervention", "none",
                    "Intervention on the behavior and judgment questions (section 5.3): none, reminder (the model's "
                    "own mental-state answer), system_generic (SysP), system_tom (SysP*), cot (CoT; the mental-state "
                    "questions too, see cot_mental_state), cot_tom (CoT*), cot_tom_reminder (CoT*+MS remind).",
                    choices=tuple(PAPER_NAMES)),
    BenchmarkOption("persona", "none",
                    "PersonaHub system prompt for every question (App. M): none, " + ", ".join(PERSONAS) + ".",
                    choices=("none", *PERSONAS)),
    BenchmarkOption("layout", "paper", "Prompt layout: paper (as printed in App. H) or reference (the authors' "
                    "released code, byte for byte).", choices=("paper", "reference")),
    BenchmarkOption("cot_mental_state", "true",
                    "Under intervention=cot, ask the mental-state questions with the CoT prompt too, as the authors' "
                    "released CoT run does (true); false: the paper's section 5.3 (interventions on behavior and "
                    "judgment only, so the MS accuracy is the direct baseline). cot_tom and cot_tom_reminder have no "
                    "released code and always ask MS directly.", kind=bool, before="false"),
    BenchmarkOption("extra_options", "none",
                    "Extra answer options of the authors' code after (A)/(B) of every question (and of the reminder): "
                    f"either ((C) {EXTRA_OPTIONS['either']}), neither ((C) {EXTRA_OPTIONS['neither']}) or "
                    "either,neither ((C) either, (D) neither); none: the paper and the released run. Picking one is "
                    "always wrong (counted in na_frac, as upstream).", choices=("none", *EXTRA_OPTIONS), many=True,
                    before="none"),
    BenchmarkOption("max_new_tokens", "0", f"Token budget per answer; 0 means {DIRECT_TOKENS} (direct answer) or "
                    f"{COT_TOKENS} (chain of thought), as the reference code.", kind=int, bounds=(0, None)),
    stop_at_answer_option('"(A)" in a direct answer: the reference parser reads "(A)" before any other label '
                          "(chain-of-thought answers, read after the last \"the answer is\", never stop)"),
)
DIRECT_STOPS = ("(A)",)
"""Stops of a direct answer: `parse_answer` reads A from any text holding "(A)", whatever follows; after "(B)" a
later "(A)" would still win, so nothing else settles the answer."""


@dataclass(frozen=True, slots=True)
class PromptConfig:
    """The settings that change what is asked, typed once (temperature is always 0, as in the paper)."""

    intervention: str = "none"
    persona: str = "none"
    layout: str = "paper"
    max_new_tokens: int = 0
    stop_at_answer: bool = True
    cot_mental_state: bool = True
    extra_options: tuple[str, ...] = ()
    """Names of EXTRA_OPTIONS shown after (A)/(B), in the code's order (either before neither)."""

    @property
    def reminder(self) -> bool:
        """Whether behavior and judgment questions carry the mental-state reminder."""
        return self.intervention in REMINDER_INTERVENTIONS

    def cot(self, question_type: str) -> str | None:
        """The chain-of-thought prompt ("cot" or "cot_tom") of a question, None for a direct answer.

        Mental-state questions take CoT only under `cot` with `cot_mental_state` (the released code's one CoT switch);
        CoT* has no code, and its reminder must stay the direct mental-state request.
        """
        if question_type == MENTAL_STATE:
            return "cot" if self.intervention == "cot" and self.cot_mental_state else None
        return COT_INTERVENTIONS.get(self.intervention)

    def shown(self, choices: Sequence[Choice]) -> tuple[Choice, ...]:
        """The options a question shows: its own, then the extra ones labelled on from them ((C), (D))."""
        return (*choices, *(Choice(chr(ord("A") + len(choices) + i), EXTRA_OPTIONS[name])
                            for i, name in enumerate(self.extra_options)))

    def system(self, question_type: str) -> str:
        if question_type != MENTAL_STATE and self.intervention in SYSTEM_INTERVENTIONS:
            return SYSTEM_INTERVENTIONS[self.intervention]
        return PERSONAS.get(self.persona, SYSTEM_DEFAULT)

    def budget(self, question_type: str) -> int:
        if self.max_new_tokens > 0:
            return self.max_new_tokens
        return COT_TOKENS if self.cot(question_type) else DIRECT_TOKENS


def _extra_options(value: Any) -> tuple[str, ...]:
    """The extra options asked for, in the code's order whatever the order written; none alone means none."""
    names = set(value.split(",") if isinstance(value, str) else value)
    if "none" in names and len(names) > 1:
        raise TomConfigError(f"simpletom setting extra_options={value!r}: none cannot be combined with "
                             f"{', '.join(EXTRA_OPTIONS)}; expected none, either, neither or either,neither")
    return tuple(name for name in EXTRA_OPTIONS if name in names)


def config_from(settings: Mapping[str, Any]) -> PromptConfig:
    """The typed prompt settings of a benchmark's settings (raw ones are converted too); a combination the paper cannot
    mean is refused.
    """
    s = {o.name: o.convert("simpletom", settings.get(o.name, o.default)) for o in OPTIONS}
    if s["persona"] != "none" and s["intervention"] in SYSTEM_INTERVENTIONS:
        raise TomConfigError(f"simpletom: persona={s['persona']} and intervention={s['intervention']} both replace the "
                             "system prompt; choose one")
    s["extra_options"] = _extra_options(s["extra_options"])
    return PromptConfig(**{f.name: s[f.name] for f in fields(PromptConfig)})


@dataclass(frozen=True, slots=True)
class Reminder:
    """The story's mental-state question and the model's own answer to it, as the reminder shows them."""

    question: str
    choices: tuple[Choice, ...]
    answer: str  # what follows "Answer: ": "(A)" for a readable answer, else the model's raw answer


_NL, _REF_SEP = "\n", " \n"  # the reference code's `make_mcq` puts a space before each newline


def _options(choices: Sequence[Choice], sep: str) -> str:
    return sep.join(f"({c.label}) {c.text}" for c in choices)


def user_prompt(story: str, question: str, choices: Sequence[Choice], config: PromptConfig, question_type: str,
                reminder: Reminder | None = None) -> str:
    """The user message, in the configured layout; every label list names the options shown (extra ones included)."""
    cot = config.cot(question_type)
    shown = config.shown(choices)
    labels = " or ".join(f"({c.label})" for c in shown)
    quoted = " or ".join(f'"({c.label})"' for c in shown)
    final = {None: REF_RESPOND, "cot": REF_COT, "cot_tom": REF_COT_STAR}[cot]
    if config.layout == "reference":
        block = ""
        if reminder is not None:
            block = (f"\nQuestion: {reminder.question} \n{_options(config.shown(reminder.choices), _REF_SEP)}\n"
                     f"Answer: {reminder.answer}\n")
        return (f"{_HEAD}{labels}.\n\nStory:\n{story}\n{block}\nQuestion: {question} \n{_options(shown, _REF_SEP)}"
                f"\n\n{ASK} {final} {quoted}\n")
    block = ""
    if reminder is not None:
        block = (f"Question: {reminder.question}\n{_options(config.shown(reminder.choices), ' ')}\n"
                 f"Answer: {reminder.answer}\n\n")
    final = f"{final} {quoted}" if cot is None else final + labels  # App. H: COT / COT_STAR end "followed by (A) or (B)"
    return f"{_HEAD}{labels}.\n\nStory: {story}\n\n{block}Question: {question}\n{_options(shown, _NL)}\n\n{ASK} {final}"


def build_request(story: str, question: str, choices: Sequence[Choice], config: PromptConfig, question_type: str,
                  reminder: Reminder | None = None) -> Request:
    """The request of one question: temperature 0, the budget of its answer contract."""
    cot = config.cot(question_type) is not None
    return Request(
        messages=(Message("system", config.system(question_type)),
                  Message("user", user_prompt(story, question, choices, config, question_type, reminder))),
        settings=GenerationSettings(max_new_tokens=config.budget(question_type), temperature=0.0,
                                    stop_after=DIRECT_STOPS if config.stop_at_answer and not cot else ()),
        answer_labels=tuple(c.label for c in config.shown(choices)),
        answer_format="Therefore, the answer is: ({})" if cot else "({})",
    )
