"""What a model is shown: the official prompts verbatim, the option shuffles, the requests of each try.

The user prompt is rendered from the sample's own fields at run time, so a rewritten sample is asked as rewritten.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_tom.evals.tombench.data import LETTERS, ToMBenchSample
from pytest_tom.request import GenerationSettings, Message, Request
from pytest_tom.scoring.choice import bracketed_stops

# Official prompts, byte-for-byte from the ToMBench repository's prompts.py (typo "serveral" kept).
SYSTEM_ZH = '下面给你提供一段故事，一个问题和若干答案选项，请你根据故事内容和给定的问题，按照常理推测，选择一个最可能的答案选项，并输出答案序号。\n注意：\n（1）请只输出最可能的答案序号，格式为：[[答案序号]]，例如，最可能的答案选项为“A. 手提包”，则输出“[[A]]”；\n（2）请必须从给定的答案选项“A、B、C、D”中选择一个做为最可能的答案作为输出，无论故事中是否提供足够的信息，如果你认为故事里没有足够的信息选出答案，请随机输出“[[A]]”，“[[B]]”，“[[C]]”，“[[D]]”其中之一；\n（3）请只输出在给定的信息下最可能的答案序号，不要输出其他内容。'  # noqa: E501
SYSTEM_ZH_COT = '下面给你提供一段故事，一个问题和若干答案选项，请你根据故事内容和给定的问题，按照常理推测，选择一个最可能的答案选项，并输出答案序号。\n注意：\n（1）请先一步步思考，对问题的答案进行推理分析，最后请输出最可能的答案序号，格式为：[[答案序号]]，例如，最可能的答案选项为“A. 手提包”，则输出“[[A]]”；\n（2）请必须从给定的答案选项“A、B、C、D”中选择一个做为最可能的答案作为输出，无论故事中是否提供足够的信息，如果你认为故事里没有足够的信息选出答案，请随机输出“[[A]]”，“[[B]]”，“[[C]]”，“[[D]]”其中之一；\n（3）再次强调，你必须先给出一步步推理的结果，最后再输出最可能的答案序号。你不应该直接输出答案。'  # noqa: E501
SYSTEM_EN = 'Below is a multiple-choice question with a story and serveral answer options. Based on the content of the story and the given question, please infer the most likely answer and output the answer index.\nNote:\n(1) Please only output the most likely answer index in the format: [[Answer Index]], for example, if the most likely answer option is \'A. Handbag\', then output \'[[A]]\';\n(2) You must choose one of the given answer options \'A, B, C, D\' as the most likely answer, regardless of whether the story provides enough information. If you think there is not enough information in the story to choose an answer, please randomly output one of "[[A]]", "[[B]]", "[[C]]", or "[[D]]";\n(3) Please only output the most likely answer index based on the given information, and do not output any other content.'  # noqa: E501
SYSTEM_EN_COT = 'Below is a multiple-choice question with a story and serveral answer options. Based on the content of the story and the given question, please infer the most likely answer and output the answer index.\nNote:\n(1) Please first think step by step, conduct analysis on the answers to the questions, and finally output the most likely answer index in the format: [[Answer Index]], for example, if the most likely answer option is \'A. Handbag\', then output \'[[A]]\';\n(2) You must choose one of the given answer options \'A, B, C, D\' as the most likely answer, regardless of whether the story provides enough information. If you think there is not enough information in the story to choose an answer, please randomly output one of "[[A]]", "[[B]]", "[[C]]", or "[[D]]";\n(3) Again, you must first output the results of step-by-step reasoning, and finally output the most likely answer index. You should not directly output the answer index.'  # noqa: E501
USER_4_ZH = '[故事]\n{story}\n\n[问题]\n{question}\n\n[答案选项]\nA. {choice_a}\nB. {choice_b}\nC. {choice_c}\nD. {choice_d}'
USER_2_ZH = '[故事]\n{story}\n\n[问题]\n{question}\n\n[答案选项]\nA. {choice_a}\nB. {choice_b}'
USER_4_EN = '[Story]\n{story}\n\n[Question]\n{question}\n\n[Candidate Answers]\nA. {choice_a}\nB. {choice_b}\nC. {choice_c}\nD. {choice_d}'  # noqa: E501
USER_2_EN = '[Story]\n{story}\n\n[Question]\n{question}\n\n[Candidate Answers]\nA. {choice_a}\nB. {choice_b}'

SYSTEM_PROMPTS = {("zh", "vanilla"): SYSTEM_ZH, ("zh", "cot"): SYSTEM_ZH_COT, ("en", "vanilla"): SYSTEM_EN, ("en", "cot"): SYSTEM_EN_COT}  # noqa: E501
USER_TEMPLATES = {("zh", 4): USER_4_ZH, ("zh", 2): USER_2_ZH, ("en", 4): USER_4_EN, ("en", 2): USER_2_EN}


@dataclass(frozen=True, slots=True)
class Config:
    """The benchmark settings that change what is asked or how it is scored, typed once."""

    prompt: str = "vanilla"
    tries: int = 5
    permutations: str = "random"
    shuffle_seed: int = 42
    extraction: str = "lenient"
    scoring: str = "generate"
    ll_target: str = "letter"
    ll_normalise: str = "none"
    max_new_tokens: int = 0
    stop_at_answer: bool = True

    @property
    def stops(self) -> tuple[str, ...]:
        """Answer-contract stops of the extraction (`bracketed_stops`), when stopping there is on."""
        return bracketed_stops(self.extraction, LETTERS) if self.stop_at_answer else ()

    @property
    def budget(self) -> int:
        """Tokens per answer: chain-of-thought needs room to reason before its `[[X]]`."""
        return self.max_new_tokens if self.max_new_tokens > 0 else (1024 if self.prompt == "cot" else 64)


def permutation(n: int, seed: int, item_key: str, trial: int, scheme: str) -> tuple[int, ...]:
    """The original option shown at each position: from (seed, item, trial), so deselection changes nothing (P3)."""
    if scheme == "none":
        return tuple(range(n))
    if scheme == "cyclic":
        k = trial % n
        return tuple((i + k) % n for i in range(n))
    digest = hashlib.sha256(f"{seed}:{item_key}:{trial}".encode()).digest()
    order = list(range(n))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return tuple(order)


def item_key(sample: ToMBenchSample) -> str:
    """The shuffle key: file and row, the same for both languages of a release row."""
    return f"{sample.extra.file}:{sample.extra.row}"


def render_user(sample: ToMBenchSample, order: Sequence[int]) -> str:
    """The official user prompt with the choices shown in `order` (original indices by displayed position)."""
    template = USER_TEMPLATES[(sample.extra.language, len(sample.choices))]
    shown = [sample.choices[i].text for i in order]
    fields = dict(zip(("choice_a", "choice_b", "choice_c", "choice_d"), shown, strict=False))
    return template.format(story=sample.context.render(), question=sample.question, **fields)


@dataclass(frozen=True, slots=True)
class Try:
    """One shuffled asking of a question: the displayed order and the request that shows it."""

    order: tuple[int, ...]
    request: Request


def tries(sample: ToMBenchSample, config: Config, kind: str = "generate") -> list[Try]:
    """The requests of every try, generation or log-likelihood, in try order."""
    system = SYSTEM_PROMPTS[(sample.extra.language, config.prompt)]
    n = len(sample.choices)
    settings = GenerationSettings(max_new_tokens=config.budget, temperature=0.0, stop_after=config.stops)
    out = []
    for trial in range(config.tries):
        order = permutation(n, config.shuffle_seed, item_key(sample), trial, config.permutations)
        messages = (Message("system", system), Message("user", render_user(sample, order)))
        if kind == "loglikelihood":
            choices = (tuple(f"[[{LETTERS[pos]}]]" for pos in range(n)) if config.ll_target == "letter"
                       else tuple(sample.choices[i].text for i in order))
            req = Request(messages=messages, settings=GenerationSettings(max_new_tokens=0), kind="loglikelihood", choices=choices)
        else:
            req = Request(messages=messages, settings=settings, answer_labels=tuple(LETTERS[:n]), answer_format="[[{}]]")
        out.append(Try(order, req))
    return out
