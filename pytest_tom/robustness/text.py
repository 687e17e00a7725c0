"""The words perturbations use: name pools and sentences about nobody (a benchmark's own templates live with it). Name
pools are the user's choice (`names="female"`, `"male"`, `"any"`, `"zh"`, or a list), so a rename keeps gender and
culture where that matters to a story. Filler sentences mention no person, object or place of any story and state
nothing anyone could learn from, so inserting them cannot change who knows what.
"""

from __future__ import annotations

import re
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

FILLERS_EN = ("The weather was mild that day.", "A clock ticked quietly somewhere.", "It was an ordinary afternoon.",
              "Outside, the wind was calm.", "The sky was slightly overcast.")
FILLERS_ZH = ("那天天气很温和。", "远处的钟轻轻地走着。", "这是一个普通的下午。", "外面风很平静。", "天空有些阴沉。")


def all_text(sample: Sample[Any]) -> str:
    """Everything a name could collide with: context, question, choices and characters."""
    return "\n".join([sample.context.render(), sample.question, *(c.text for c in sample.choices),
                      *sample.characters])


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


def split_sentences(text: str) -> list[str]:
    """Sentences of a story, end punctuation kept; text without any stays one sentence."""
    parts = [p for p in _SENTENCE.split(text.strip()) if p]
    return parts or [text]
