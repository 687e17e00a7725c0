"""Hi-ToM's release read into samples: one item per prompt file (`Hi-ToM_prompts/`), its gold from `Hi-ToM_data/`.

Each prompt file is parsed, rendered back and compared with the file, so what the harness sends equals the release.
MC and CoT data files disagree on 138 of 600 golds (spec §5): both are kept, the `gold` setting picks one. A copy
must be the whole pinned release unless `partial`; errors name the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import product
from pathlib import Path

from pytest_tom.errors import TomDataError
from pytest_tom.framework.checks import read_text
from pytest_tom.framework.pinned import PinnedTrees
from pytest_tom.sample import KEEP, Choice, Sample, Story

LAYOUT = tuple(product(("No_Tell", "Tell"), ("CoT", "MC"), (1, 2, 3), range(1, 21), range(5)))
"""(tell, style folder, length, sample, order) of every file of each tree, in the release's order."""
STYLE = {"MC": "vanilla", "CoT": "cot"}
"""Folder -> `style` facet: MC is the paper's vanilla prompting (VP), CoT its chain-of-thought (CoTP)."""
KEY = {"cot": "CoT", "mc": "MC"}
"""`gold` setting -> the folder whose answer is the gold (`own`: the item's own folder)."""
TREES = ("Hi-ToM_data", "Hi-ToM_prompts")
REVISION = "56dda76fbbbcd510d51e91837fe19b7df2108562"
SHA256 = {"Hi-ToM_data": "26b3f3d19a83e3f0b08a031820cbc6b68a1f2992a5cf1907f1bfbbf914121a10",
          "Hi-ToM_prompts": "9b71063962ad3325ea61d0efb2172d0416e8172c1032625536ea4fd7ce877c22"}
"""Each tree's `tree_digest` at REVISION: the sha256 of its `sha256sum` manifest in shared/data/hitom/SOURCE.md."""
DISAGREEMENTS = 138
ASK = "Read the following story and answer the multiple-choice question. "
INSTRUCTION = {"MC": ASK + "Please provide answer without explanations.",
               "CoT": ASK + "Think step-by-step. Provide the answer first, and then explain it."}
NOTE = ("Note: You should assume the following. (1) An agent witnesses everything and every movements before exiting a "
        "location. (2) An agent A can infer another agent B's mental state only if A and B have been in the same "
        "location, or have private or public interactions. (3) Note that every agent tend to lie. What a character tells "
        "others doesn't affect his actual belief. An agent tend to trust a agent that exited the room later than himself."
        " The exit order is known to all agents. (4) Agents in private communications know that others won't hear "
        "them, but they know that anyone can hear any public claims.")
LETTERS = "ABCDEFGHIJKLMNO"
_QUESTION = re.compile(r"Where (?:is the (\w+) really|does (\w+) really think the (\w+) is"
                       r"|does (\w+) think ((?:\w+ thinks )+)the (\w+) is)\?")
_ENTER = re.compile(r"\d+ (.+) entered the \w+\.")


@dataclass(frozen=True, slots=True)
class HiToMExtra:
    """Where the item sits in the release (`path`: the spec's unit id), and both folders' golds (container names)."""

    tell: str = field(metadata=KEEP)
    style: str = field(metadata=KEEP)
    length: int
    sample: int
    order: int
    path: str = field(metadata=KEEP)
    gold_mc: str
    gold_cot: str


HiToMSample = Sample[HiToMExtra]


@dataclass(frozen=True, slots=True)
class Parsed:
    """One data or prompt file's fields (`answer` is None for a prompt file)."""

    story: tuple[str, ...]
    question: str
    answer: str | None
    choices: tuple[str, ...]


rel = "{}/{}/length_{}/sample_{}/order_{}".format  # (tell, style, length, sample, order) -> a file's path, less .txt
FILES = tuple(f"{rel(*k)}.txt" for k in LAYOUT)  # each tree's files, as its pin's manifest names them
PINS = PinnedTrees("hitom", "Hi-ToM", "github.com/ying-hui-he/Hi-ToM_dataset", REVISION,
                   f"https://raw.githubusercontent.com/ying-hui-he/Hi-ToM_dataset/{REVISION}", FILES, SHA256)


def parse(text: str, path: Path, *, style: str, data: bool) -> Parsed:
    """The fields of a data file (`data`) or a prompt file, in spec §2.2's line structure."""
    lines = text.split("\n")
    while lines and lines[-1] in ("", "***"):  # 6 CoT data files end in "***" and no newline (kept as released)
        lines.pop()
    q = next((i for i, line in enumerate(lines) if line.startswith("Question: ")), len(lines))
    tail = ["Question: ", *(["Answer: "] if data else []), "Choices: ", "", NOTE]
    options = lines[-3][len("Choices: "):].split(", ") if len(lines) > 3 else []
    checks = [
        (0, lines[:2] == [INSTRUCTION[style], "Story:"], f"expected the {style} instruction line, then 'Story:'"),
        *((no, lines[no].startswith(f"{no - 1} "), f"expected story line '{no - 1} ...'") for no in range(2, q)),
        (q, len(lines) - q == len(tail) and all(a.startswith(b) for a, b in zip(lines[q:], tail, strict=False)),
         "expected Question:, " + "Answer:, " * data + "Choices:, a blank line and the release's Note line"),
        (len(lines) - 3, [o[:3] for o in options] == [f"{c}. " for c in LETTERS] and len({o[3:] for o in options}) == 15,
         "expected 15 distinct options 'A. <container>' to 'O. <container>'"),
    ]
    for no, ok, why in checks:
        if not ok:
            raise TomDataError(why, path=path, record=f"line {no + 1}")
    answer = lines[q + 1][len("Answer: "):] if data else None
    if answer is not None and answer not in (containers := [o[3:] for o in options]):
        raise TomDataError(f"the gold {answer!r} is not among the choices {containers}", path=path,
                           record=f"line {q + 2}", field="Answer")
    return Parsed(tuple(lines[2:q]), lines[q][len("Question: "):], answer, tuple(o[3:] for o in options))


Chain = tuple[str, tuple[str, ...]]


def chain(question: str) -> Chain | None:
    """(object, agents X1..Xk) of an order-k question, or None when it matches no template of spec §2.4."""
    if (m := _QUESTION.fullmatch(question)) is None:
        return None
    return (m[1], ()) if m[1] else (m[3], (m[2],)) if m[2] else (m[6], (m[4], *m[5].split(" thinks ")[:-1]))


def check_chain(s: HiToMSample, seen: dict[tuple[str, int], Chain], path: Path) -> None:
    """Each question is its order's template; a story's questions share the object and nest their agents (§2.4)."""
    got, lower = chain(s.question), seen.get((s.facets["story"], s.extra.order - 1))
    if got is None or len(got[1]) != s.extra.order:
        raise TomDataError(f"not the order-{s.extra.order} question template", path=path, field="Question")
    if lower is not None and (lower[0] != got[0] or got[1][1:] != lower[1]):
        raise TomDataError(f"not the order-{s.extra.order - 1} question with one agent prepended", path=path, field="Question")
    seen[(s.facets["story"], s.extra.order)] = got


def render(sample: HiToMSample) -> str:
    """The official prompt (spec §3.1): rebuilds every release prompt file byte for byte."""
    choices = ", ".join(f"{c.label}. {c.text}" for c in sample.choices)
    return (f"{INSTRUCTION[sample.extra.style]}\nStory:\n{sample.context.render()}\nQuestion: {sample.question}\n"
            f"Choices: {choices}\n\n{NOTE}\n")


def load(folder: Path, *, prompt: str, gold: str, pins: Mapping[str, str], partial: bool) -> list[HiToMSample]:
    """The items the `prompt` setting asks for, scored against the `gold` setting's key, after the checks of §8."""
    if not partial:
        PINS.check(folder, pins)
    files = {(t, k): folder / t / f"{rel(*k)}.txt" for t in TREES for k in LAYOUT}
    data = {k: parse(read_text(p), p, style=k[1], data=True) for k in LAYOUT if (p := files[TREES[0], k]).is_file()}
    samples, differ, seen = [], 0, dict[tuple[str, int], Chain]()
    for key in LAYOUT:
        tell, style, length, sample, order = key
        pair = {s: (tell, s, length, sample, order) for s in STYLE}
        golds = {s: data[k].answer or "" for s, k in pair.items() if k in data}
        if style == "MC" and len(golds) == 2:
            differ += golds["MC"] != golds["CoT"]
            if replace(data[key], answer=None) != replace(data[pair["CoT"]], answer=None):
                raise TomDataError("the MC and CoT data files differ in story, question or choices", path=files[TREES[0], key])
        if prompt not in (STYLE[style], "both") or not (path := files[TREES[1], key]).is_file():
            continue
        parsed = parse(text := read_text(path), path, style=style, data=False)
        if (need := KEY.get(gold, style)) not in golds:
            raise TomDataError(f"no data file {rel(*pair[need])}.txt to read the gold from (gold={gold})", path=path)
        if key in data and replace(data[key], answer=None) != parsed:
            raise TomDataError(f"differs from its data file {rel(*key)}.txt in story, question or choices", path=path)
        item = build(key, parsed, golds, gold)
        if render(item) != text:
            raise TomDataError("not the official prompt template (spec §3.1) byte for byte", path=path)
        check_chain(item, seen, path)
        samples.append(item)
    if not partial and dict(pins) == SHA256 and differ != DISAGREEMENTS:
        raise TomDataError(f"MC and CoT golds differ in {differ} questions, not {DISAGREEMENTS}: another revision; "
                           + PINS.advice, path=folder / "Hi-ToM_data")
    return samples


def build(key: tuple[str, str, int, int, int], prompt: Parsed, golds: Mapping[str, str], gold: str) -> HiToMSample:
    """One item; `gold` (cot, mc, own) says which folder's answer it is scored against."""
    tell, style, length, sample, order = key
    agents = dict.fromkeys(a for line in prompt.story if (m := _ENTER.fullmatch(line))
                           for a in m[1].replace(" and ", ", ").split(", "))
    story, path = f"{tell}/length_{length}/sample_{sample}", rel(*key)
    facets = {"order": str(order), "length": str(length), "deception": "tell" if tell == "Tell" else "no_tell",
              "style": STYLE[style], "story": story, "chain": f"{STYLE[style]}/{story}"}
    return Sample(
        benchmark="hitom", id=path.replace("/", "-"), context=Story("\n".join(prompt.story)), question=prompt.question,
        choices=tuple(Choice(c, t) for c, t in zip(LETTERS, prompt.choices, strict=True)),
        gold=LETTERS[prompt.choices.index(golds[KEY.get(gold, style)])],
        characters=tuple(agents), facets=facets, source=f"Hi-ToM_prompts/{path}.txt",
        marks=("hitom", f"order{order}", f"length{length}", STYLE[style], *(("deception",) if tell == "Tell" else ())),
        extra=HiToMExtra(tell, style, length, sample, order, path, golds.get("MC", ""), golds.get("CoT", "")),
    )
