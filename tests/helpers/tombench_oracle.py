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

_OPTION = re.compile(r"^([A-D])\. (.*)$")


def build_gold(data_dir: Path) -> dict[str, str]:
    gold: dict[str, str] = {}
    for path in sorted((data_dir / "tombench" / "data").glob("*.jsonl")):
        for it in load_file(path, ["en", "zh"]):
            gold[it.question + "\x00" + "\x00".join(sorted(it.options))] = it.options[LETTERS.index(it.answer)]
    return gold


class Oracle:
    def __init__(self, data_dir: Path, wrong: tuple[str, ...] = (), garble: tuple[str, ...] = ()) -> None:
        self.gold = build_gold(data_dir)
        self.wrong = wrong
        self.garble = garble
        self.tom_fingerprint = f"oracle:{sorted(wrong)}:{sorted(garble)}"

    def answer(self, user: str) -> str:
        question = user.split("\n\n")[1].split("\n", 1)[1]
        options = {}
        for line in user.split("\n\n")[2].split("\n")[1:]:
            m = _OPTION.match(line)
            if m:
                options[m.group(1)] = m.group(2)
        if any(w in question for w in self.garble):
            return "I would rather not say."
        key = question + "\x00" + "\x00".join(sorted(options.values()))
        target = self.gold[key]
        letter = next(k for k, v in options.items() if v == target)
        if any(w in question for w in self.wrong):
            letter = next(k for k in options if k != letter)
        return f"Let me think. [[{letter}]]"

    def __call__(self, batch: list[list[dict[str, str]]], settings: dict[str, Any]) -> list[str]:
        return [self.answer(conv[-1]["content"]) for conv in batch]
