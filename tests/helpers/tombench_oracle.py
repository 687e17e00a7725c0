"""A ToMBench "model" that knows the gold answers: it proves the plugin scores a perfect model as perfect.

It reads the official files itself, with the json module and nothing from
pytest_tom (so a loader bug cannot hide behind an oracle that shares it), maps
(story, question, option texts) to the gold option text, and answers with
whichever displayed letter shows it. `wrong` lists questions to answer wrongly
on purpose; `garble` lists questions to answer with unreadable text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_OPTION = re.compile(r"^([A-D])\. (.*)$", re.S)
_LANGUAGES = {
    "zh": ("故事", "问题", ("选项A", "选项B", "选项C", "选项D")),
    "en": ("STORY", "QUESTION", ("OPTION-A", "OPTION-B", "OPTION-C", "OPTION-D")),
}
_ANSWER = "答案\nANSWER"


def _option_text(value: Any, letter: str) -> str | None:
    """An option as a prompt shows it: None when absent (JSON NaN, null, blank), its own "A."/"A、" prefix removed."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    m = re.match(r"\s*" + letter + r"\s*[.．、:：]", text)
    return text[m.end() :].strip() if m else text


def build_gold(data_dir: Path) -> dict[str, str]:
    """(story, question, options) -> gold option text, for every row and language of the release files."""
    gold: dict[str, str] = {}
    for path in sorted((data_dir / "tombench" / "data").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            letter = str(rec[_ANSWER]).strip()[:1]
            if not letter or letter not in "ABCD":
                continue
            for story_field, question_field, option_fields in _LANGUAGES.values():
                options = [_option_text(rec.get(f), "ABCD"[i]) for i, f in enumerate(option_fields)]
                shown = [o for o in options if o is not None]
                answer = options["ABCD".index(letter)]
                if answer is None:
                    continue  # the gold is not among this language's options (the loader refuses such a row)
                story, question = str(rec[story_field]).strip(), str(rec[question_field]).strip()
                gold[_key(story, question, shown)] = answer
                gold.setdefault(_key("", question, shown), answer)
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
        texts = list(options.values())
        target = self.gold.get(_key(story, question, texts)) or self.gold[_key("", question, texts)]
        letter = next(k for k, v in options.items() if v == target)
        if any(w in question for w in self.wrong):
            letter = next(k for k in options if k != letter)
        return f"Let me think. [[{letter}]]"

    def __call__(self, batch: list[list[dict[str, str]]], settings: dict[str, Any]) -> list[str]:
        return [self.answer(conv[-1]["content"]) for conv in batch]
