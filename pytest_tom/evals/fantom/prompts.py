"""FANToM's official prompts (upstream's `setup_fantom` inputs byte for byte), rendered from the sample, and requests.

Only the fact shown with list and yes/no questions comes from the extension (the sample has no field for it).
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from pytest_tom.evals.fantom.data import FantomExtra
from pytest_tom.request import GenerationSettings, Message, Request, Response
from pytest_tom.sample import Sample

PROMPT_HEADER = ("This is a theory-of-mind test. Please answer the question regarding facts or beliefs, based on the "
                 "following in-person conversation between individuals who have just met.\n\n")
"""Defined as `FantomEvalAgent.prompt_header` upstream but never added to an input."""

TEMPLATES = {
    "fact": "{context}\n\nQuestion: {question}\nAnswer:",
    "belief_free": "{context}\n\nQuestion: {question}\nAnswer:",
    "belief_choice": "{context}\n\nQuestion: {question}\n{choices}\n\nChoose an answer from above:",
    "answerability_list": "{context}\n\nTarget: {fact_q}\nQuestion: {question}\nAnswer:",
    "answerability_yn": "{context}\n\nTarget: {fact_q}\nQuestion: {question} Answer yes or no.\nAnswer:",
    "info_accessibility_list": "{context}\n\nInformation: {fact_q} {fact_a}\nQuestion: {question}\nAnswer:",
    "info_accessibility_yn": "{context}\n\nInformation: {fact_q} {fact_a}\nQuestion: {question} Answer yes or no.\nAnswer:",
}
COT_TRIGGER = " Let's think step by step."
COT_FOLLOW_UP = "\n\nTherefore, the answer is:"


def render_prompt(sample: Sample[FantomExtra]) -> str:
    """The official input text of one question (upstream's `setup_fantom`), from the sample's fields."""
    x = sample.extra
    choices = "".join(f"({c.label}) {c.text}\n" for c in sample.choices).strip()  # each template takes what it shows
    return TEMPLATES[x.qtype].format(context=sample.context.render(), question=sample.question, choices=choices,
                                     fact_q=x.fact_question, fact_a=x.fact_answer)


def parse_response(text: str) -> str:
    """Upstream's `parse_response`: keep what follows the last "Answer:" (else "Choose an answer from above:")."""
    marker = next((m for m in ("Answer:", "Choose an answer from above:") if m in text), None)
    return text if marker is None else text.split(marker)[-1].strip()


def requests_shape(sample: Sample[FantomExtra]) -> tuple[tuple[str, ...], str]:
    """What a well-formed answer looks like, for the random baseline."""
    qtype = sample.extra.qtype
    if qtype == "belief_choice":
        return tuple(c.label for c in sample.choices), "({})"
    if qtype.endswith("_yn"):
        return ("yes", "no"), "{}"
    if qtype.endswith("_list"):
        names = sorted({*sample.gold, *sample.extra.list_wrong})
        if len(names) <= 6:  # every non-empty subset: a uniform random guess at the set
            return tuple(", ".join(c) for k in range(1, len(names) + 1) for c in itertools.combinations(names, k)), "{}"
        return tuple(names), "{}"
    return (), "{}"


def ask(sample: Sample[FantomExtra], settings: Mapping[str, Any]) -> Generator[Sequence[Request], Sequence[Response], list[str]]:
    """Send the question; with CoT, upstream's two calls (reasoning, then "Therefore, the answer is:")."""
    prompt = (PROMPT_HEADER if settings["header"] == "official" else "") + render_prompt(sample)
    labels, fmt = requests_shape(sample)
    gen = GenerationSettings(max_new_tokens=int(settings["max_new_tokens"]), temperature=0.0)
    if settings["prompt"] == "cot":
        # 2024: the batch path every README model but text-* took ("Answer:" stripped, the reasoning sent raw);
        # 2023: the per-prompt path of the paper's API models (trigger after "Answer:", reasoning parsed).
        batch = settings.get("evaluator", "2024") == "2024"
        first = (prompt.removesuffix("Answer:") if batch else prompt) + COT_TRIGGER
        (r1,) = yield [Request(messages=(Message("user", first),), settings=gen)]
        second = first + " " + ((r1.text or "") if batch else parse_response(r1.text or "")) + COT_FOLLOW_UP
        (r2,) = yield [Request(messages=(Message("user", second),), settings=gen, answer_labels=labels, answer_format=fmt)]
        return [r1.text or "", r2.text or ""]
    (r,) = yield [Request(messages=(Message("user", prompt),), settings=gen, answer_labels=labels, answer_format=fmt)]
    return [r.text or ""]
