"""What the model is shown: the official one-request-per-context prompt, and one question per prompt.

The official code (GAIR-NLP/DynToM @ 0d6c913) puts a context's questions into one system message (instruction,
characters, `str(story)` without backgrounds, `str(questions)`, instruction) and asks for one JSON object. Both reprs
are rebuilt from the sample, so a rewritten sample is asked as rewritten; the official typos stay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from itertools import islice
from typing import Any

from pytest_tom.evals.tomvalley.data import ToMValleyExtra, ToMValleySample
from pytest_tom.framework.base import BenchmarkOption
from pytest_tom.framework.decoding import decoding_options
from pytest_tom.request import GenerationSettings, Message, Request
from pytest_tom.sample import Conversation, Turn

VANILLA = "Answer all the {n} questions based on the story"
COT = ("Answer all the {n} questions based on the story, Please first think step by step, conduct analysis on the "
       "answers to the questions, and finally output the most likely answers.")
USER = ('answer the {n} question, and response in JSON format:{{[question_id]:[a, b, c or d], [question_id]:a, b, c '
        'or d, ...}}. for example: {{"type_d_how_1":"a","type_d_how_2":"b","type_d_how_3":"c"}}')
SINGLE = "answer the floowing question based on the story"
SINGLE_COT = (SINGLE + ". Please first think step by step, conduct analysis on the answers to the questions, and "
              "finally output the most likely answers.")

OPTIONS = (
    BenchmarkOption("protocol", "context",
                    "context (official, the paper's tables): all questions of a social context in one request, "
                    "answered as one JSON object, so 100 contexts are 100 requests; question: one question per request "
                    "(the layout of the official CoT case study; a different protocol whose numbers do not match the "
                    "paper's tables).", choices=("context", "question")),
    BenchmarkOption("style", "vanilla", "vanilla or cot: the official instruction, or its chain-of-thought variant "
                    "(\"Please first think step by step...\").", choices=("vanilla", "cot")),
    BenchmarkOption("backgrounds", "false",
                    "true shows each scenario's background text, which the official evaluation removes because it "
                    "states the main character's mental states outright.", kind=bool),
    *decoding_options(("8192", "the official local-model runs used 8192 (71 answers and, with cot, the reasoning "
                       "before them)"), ("0.0", "the official runs used 0.0 (OpenAI) and 0.01 (vLLM)")),
)


@dataclass(frozen=True, slots=True)
class PromptConfig:
    protocol: str = "context"
    style: str = "vanilla"
    backgrounds: bool = False
    max_new_tokens: int = 8192
    temperature: float = 0.0

    @property
    def settings(self) -> GenerationSettings:
        return GenerationSettings(max_new_tokens=self.max_new_tokens, temperature=self.temperature)


def config_from(settings: Mapping[str, Any]) -> PromptConfig:
    return PromptConfig(**{f.name: settings[f.name] for f in fields(PromptConfig)})  # typed by the options


def _dialogue(form: str, groups: tuple[int, ...], turns: list[Turn]) -> Any:
    if form == "str":
        return Conversation(tuple(turns)).render()
    rest = iter(turns)
    dicts = [{t.speaker: t.text for t in islice(rest, size)} for size in groups]
    return dicts[0] if form == "dict" else dicts


def story_dict(sample: ToMValleySample, backgrounds: bool) -> dict[str, Any]:
    """The story as the official code holds it after popping the backgrounds, rebuilt from the sample's turns."""
    extra = sample.extra
    assert isinstance(sample.context, Conversation)
    turns = list(sample.context.turns)
    need = sum(sum(s.groups) for s in extra.scenarios)
    if need != len(turns):
        raise ValueError(f"{sample.id}: the context has {len(turns)} turns but its scenario layout needs {need}; a "
                         "rewrite that adds or removes turns must update extra.scenarios too")
    rest = iter(turns)
    return {scen.key: {**({"background": scen.background} if backgrounds else {}),
                       "dialogue": _dialogue(scen.form, scen.groups, list(islice(rest, sum(scen.groups))))}
            for scen in extra.scenarios}


def questions_dict(sample: ToMValleySample, only_own: bool = False) -> dict[str, dict[str, Any]]:
    """`{qid: {"question", "options"}}` in file order; the sample's own entry comes from its (possibly rewritten) fields."""
    extra: ToMValleyExtra = sample.extra
    own = {"question": sample.question, "options": [f"{c.label}. {c.text}" for c in sample.choices]}
    if only_own:
        return {extra.qid: own}
    return {q.qid: (own if q.qid == extra.qid else {"question": q.question, "options": list(q.options)})
            for q in extra.questions}


def context_request(sample: ToMValleySample, config: PromptConfig) -> Request:
    """The official request for the sample's whole context: identical for all its questions, so sent once."""
    n = len(sample.extra.questions)
    instruction = (COT if config.style == "cot" else VANILLA).format(n=n)
    system = "\n".join([instruction, sample.extra.characters_information, str(story_dict(sample, config.backgrounds)),
                        str(questions_dict(sample)), instruction])
    # For model-free baselines (random:, mock:): one letter valid for every question, in every slot of the object.
    fewest = min(len(q.options) for q in sample.extra.questions)
    fmt = "{{" + ",".join(f'"{q.qid}":"{{0}}"' for q in sample.extra.questions) + "}}"
    return Request(messages=(Message("system", system), Message("user", USER.format(n=n))), settings=config.settings,
                   answer_labels=tuple(chr(ord("a") + i) for i in range(fewest)), answer_format=fmt)


def question_request(sample: ToMValleySample, config: PromptConfig) -> Request:
    """One question per request, in the official case-study layout (characters, story, instruction, the question)."""
    instruction = SINGLE_COT if config.style == "cot" else SINGLE
    text = "\n".join([sample.extra.characters_information, str(story_dict(sample, config.backgrounds)), instruction,
                      str(questions_dict(sample, only_own=True))]) + "\n"
    return Request(messages=(Message("user", text),), settings=config.settings,
                   answer_labels=tuple(c.label for c in sample.choices), answer_format="{}")


def request_for(sample: ToMValleySample, config: PromptConfig) -> Request:
    return context_request(sample, config) if config.protocol == "context" else question_request(sample, config)
