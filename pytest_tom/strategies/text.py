"""The words perturbations use: name pools, sentences about nobody, question templates per benchmark.

Name pools are the user's choice (`names="female"`, `"male"`, `"any"`, `"zh"`, or a list), so a
rename keeps gender and culture where that matters to a story. Filler sentences mention no
person, object or place of any story and state nothing anyone could learn from, so inserting
them cannot change who knows what. Rephrasing templates match a benchmark's own question
shapes and say the same thing in other words; a question no template matches is not rephrased.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pytest_tom.sample import Sample

CJK = re.compile(r"[\u3400-\u9fff]")

NAME_POOLS: dict[str, tuple[str, ...]] = {
    "female": ("Alice", "Maya", "Sofia", "Amara", "Yuki", "Leila", "Ingrid", "Nadia", "Carmen", "Hana"),
    "male": ("Ben", "Omar", "Luca", "Kenji", "Mateo", "Ravi", "Tariq", "Jonas", "Felix", "Arjun"),
    "neutral": ("Robin", "Sam", "Alex", "Jordan", "Casey", "Riley", "Quinn", "Avery"),
    "zh": ("李华", "王芳", "张伟", "刘洋", "陈静", "杨帆", "赵敏", "周杰"),
}
NAME_POOLS["any"] = NAME_POOLS["neutral"] + NAME_POOLS["female"] + NAME_POOLS["male"]

FILLERS_EN = (
    "The weather was mild that day.",
    "A clock ticked quietly somewhere.",
    "It was an ordinary afternoon.",
    "Outside, the wind was calm.",
    "The sky was slightly overcast.",
)
FILLERS_ZH = ("那天天气很温和。", "远处的钟轻轻地走着。", "这是一个普通的下午。", "外面风很平静。", "天空有些阴沉。")

TEXT_FACETS: dict[str, tuple[str, ...]] = {"fantom": ("character",)}
"""Facets that hold text a rename must rewrite (FANToM's asked character)."""

_TOMATO_WHEN = re.compile(r'^When ([^"]+?) says "(.*)", (how|what) (does|do) (he|she|they|[A-Z][\w.\'-]*) (.+)\?$', re.S)


def _tomato_when_last(m: re.Match[str]) -> str:
    """ToMATO asks both 'When X says "...", what does X think...?' and 'What does X think... when he says "..."?'."""
    speaker, utterance, wh, aux, who, rest = m.groups()
    pronoun = who in ("he", "she", "they")
    return f'{wh.capitalize()} {aux} {speaker} {rest} when {who if pronoun else speaker} says "{utterance}"?'


Rewrite = str | Callable[[re.Match[str]], str]
REPHRASINGS: dict[str, tuple[tuple[re.Pattern[str], Rewrite], ...]] = {
    "simpletom": (
        (re.compile(r"^Is (.+?) likely to be aware that "), r"Would \1 likely be aware that "),
        (re.compile(r"^What will (.+?) likely do next\?"), r"What is \1 likely to do next?"),
        (re.compile(r"The behavior of (.+?) can be best described as: $"), r"The best description of the behavior of "
                                                                             r"\1 is: "),
    ),
    "fantom": (
        (re.compile(r"^Does (.+?) know this information\?$"), r"Is \1 aware of this information?"),
        (re.compile(r"^List all the characters who know this information\.$"),
         "List every character who knows this information."),
    ),
    "tomato": ((_TOMATO_WHEN, _tomato_when_last),),
    "tomvalley": (
        (re.compile(r"^What is the (belief|emotion|intention|action) of (.+?) in scenario (\d+)\?$"),
         r"In scenario \3, what is the \1 of \2?"),
    ),
}


def all_text(sample: Sample[Any]) -> str:
    """Everything a name could collide with: context, question, choices and characters."""
    return "\n".join([sample.context.render(), sample.question, *(c.text for c in sample.choices),
                      *sample.characters])


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


def split_sentences(text: str) -> list[str]:
    """Sentences of a story, end punctuation kept; text without any stays one sentence."""
    parts = [p for p in _SENTENCE.split(text.strip()) if p]
    return parts or [text]
