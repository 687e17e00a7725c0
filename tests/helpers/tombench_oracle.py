"""A ToMBench "model" that knows the gold answers: it proves the plugin scores a perfect model as perfect.

It reads the official files, maps (question, option texts) to the gold option
text, and answers with whichever displayed letter shows it. `wrong` lists
questions to answer wrongly on purpose; `garble` lists questions to answer with
unreadable text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_tom.benchmarks.tombench import LETTERS, load_file

_OPTION = re.compile(r"^([A-D])\. (.*)$", re.S)


def build_gold(data_dir: Path) -> dict[str, str]:
    gold: dict[str, str] = {}
    for path in sorted((data_dir / "tombench" / "data").glob("*.jsonl")):
        for it in load_file(path, ["en", "zh"]):
            gold[_key(it.story, it.question, it.options)] = it.options[LETTERS.index(it.answer)]
            gold.setdefault(_key("", it.question, it.options), it.options[LETTERS.index(it.answer)])
    return gold


def _key(story: str, question: str, options: tuple[str, ...] | list[str]) -> str:
    return "\x00".join([story, question, *sorted(options)])


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start) + len(start)
    return text[i : text.index(end, i)]


class Oracle:
    def __init__(self, data_dir: Path, wrong: tuple[str, ...] = (), garble: tuple[str, ...] = ()) -> None:
        self.gold = build_gold(data_dir)
        self.wrong = wrong
        self.garble = garble
        self.tom_fingerprint = f"oracle:{sorted(wrong)}:{sorted(garble)}"

    def answer(self, user: str) -> str:
        heads = ("[Story]\n", "\n\n[Question]\n", "\n\n[Candidate Answers]\n")
        if not user.startswith(heads[0]):
            heads = ("[故事]\n", "\n\n[问题]\n", "\n\n[答案选项]\n")
        story = _between(user, heads[0], heads[1])
        question = _between(user, heads[1], heads[2])
        options = {}
        block = user.split(heads[2], 1)[1]
        for part in re.split(r"\n(?=[A-D]\. )", block):  # an option may span lines
            m = _OPTION.match(part)
            if m:
                options[m.group(1)] = m.group(2)
        if any(w in question for w in self.garble):
            return "I would rather not say."
        # A story may itself contain the block headers; fall back to question + options.
        target = self.gold.get(_key(story, question, list(options.values()))) or self.gold[_key("", question, list(options.values()))]
        letter = next(k for k, v in options.items() if v == target)
        if any(w in question for w in self.wrong):
            letter = next(k for k in options if k != letter)
        return f"Let me think. [[{letter}]]"

    def __call__(self, batch: list[list[dict[str, str]]], settings: dict[str, Any]) -> list[str]:
        return [self.answer(conv[-1]["content"]) for conv in batch]
