"""Meaning-preserving changes: the answer's correctness must not move. Characters renamed everywhere the model looks
(`renamings`), options reordered with the gold remapped (`choice_permutations`), sentences about nobody inserted where
they cannot change who knows what (`irrelevant_sentences`), spaces doubled (`whitespace_noise`), the question reworded
by the benchmark's own templates (`rephrasings`). What a strategy needs to know of a benchmark (its templates, its text
facets, whether its stories are narrative) it asks the benchmark's `Perturbable` (`base.perturbable`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_tom.robustness.base import Perturbation, StrategySpec, perturbable, reason
from pytest_tom.robustness.text import CJK, FILLERS_EN, FILLERS_ZH, NAME_POOLS, all_text, split_sentences
from pytest_tom.sample import Conversation, Sample, Story, permute_choices, rename


def _pool(sample: Sample[Any], names: str | Sequence[str]) -> list[str]:
    if isinstance(names, str):
        key = names
        if key == "any" and CJK.search(all_text(sample)):
            key = "zh"
        if key not in NAME_POOLS:
            raise InvalidArgument(f"names={names!r}: choose one of {', '.join(NAME_POOLS)} or give a list of names")
        pool = list(NAME_POOLS[key])
    else:
        pool = [str(n) for n in names]
        if not pool or any(not n.strip() for n in pool) or len(set(pool)) != len(pool):
            raise InvalidArgument("names must be a non-empty list of distinct, non-blank names")
    text = all_text(sample)
    taken = {c.lower() for c in sample.characters}
    return [n for n in pool if n.lower() not in taken and not re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text)]


def renamings(sample: Sample[Any], *, names: str | Sequence[str] = "any") -> st.SearchStrategy[Perturbation]:
    """Rename one or more of the sample's characters to names it does not contain (shrinks toward one rename)."""
    chars = [c for c in dict.fromkeys(sample.characters) if c]
    if not chars:
        raise InvalidArgument(f"{sample.benchmark} sample {sample.id} names no characters")
    free = _pool(sample, names)
    if not free:
        raise InvalidArgument(f"no name of the pool is free in {sample.id} (all occur in its text)")
    facets = perturbable(sample.benchmark).text_facets

    @st.composite
    def draw(data: st.DrawFn) -> Perturbation:
        picked = data(st.lists(st.sampled_from(chars), min_size=1, max_size=min(len(chars), len(free)), unique=True))
        new = data(st.lists(st.sampled_from(free), min_size=len(picked), max_size=len(picked), unique=True))
        mapping = dict(zip(picked, new, strict=True))
        out = rename(sample, mapping, facets=facets)
        return Perturbation("rename", "invariance", out, "renamed " + ", ".join(f"{a} -> {b}" for a, b in mapping.items()),
                            len(mapping))

    return draw()


def choice_permutations(sample: Sample[Any]) -> st.SearchStrategy[Perturbation]:
    """Another order of the option texts, gold remapped (shrinks toward the fewest moved options)."""
    n = len(sample.choices)
    if n < 2 or not isinstance(sample.gold, str):
        raise InvalidArgument(f"{sample.id} is not a multiple-choice question with a gold label")
    identity = list(range(n))

    def build(order: list[int]) -> Perturbation:
        out = permute_choices(sample, order)
        moved = sum(i != j for i, j in enumerate(order))
        shown = " ".join(f"({c.label}) {c.text}" for c in out.choices)
        return Perturbation("permute", "invariance", out,
                            f"options reordered to {shown}; gold {sample.gold} -> {out.gold}", moved)

    return st.permutations(identity).filter(lambda o: o != identity).map(build)


def irrelevant_sentences(sample: Sample[Any], *, max_insertions: int = 3) -> st.SearchStrategy[Perturbation]:
    """Insert 1..max_insertions sentences about nobody between the story's sentences (shrinks toward one, at the start)."""
    if max_insertions < 1:
        raise InvalidArgument(f"max_insertions={max_insertions}: must be at least 1")
    parts = split_sentences(sample.context.text) if isinstance(sample.context, Story) else []
    if not parts:
        raise InvalidArgument(f"{sample.id} has no narrative story to insert into (conversations are left alone: a "
                              "new line could change who was present)")
    fillers = FILLERS_ZH if CJK.search(sample.context.render()) else FILLERS_EN
    text = all_text(sample)
    usable = [f for f in fillers if f not in text]

    @st.composite
    def draw(data: st.DrawFn) -> Perturbation:
        k = data(st.integers(1, max_insertions))
        where = sorted(data(st.lists(st.integers(0, len(parts)), min_size=k, max_size=k)))
        what = data(st.lists(st.sampled_from(usable), min_size=k, max_size=k, unique=True))
        out_parts = list(parts)
        for pos, sentence in sorted(zip(where, what, strict=True), key=lambda t: -t[0]):
            out_parts.insert(pos, sentence)
        sep = "" if CJK.search(sample.context.render()) else " "
        story = Story(sep.join(p.strip() for p in out_parts))
        inserted = "; ".join(f"{s!r} before sentence {p + 1}" for p, s in zip(where, what, strict=True))
        return Perturbation("irrelevant", "invariance", dataclasses.replace(sample, context=story),
                            f"inserted {inserted}", k)

    if len(usable) < max_insertions:
        raise InvalidArgument(f"{sample.id}: its story already contains the filler sentences")
    return draw()


def whitespace_noise(sample: Sample[Any], *, max_edits: int = 4) -> st.SearchStrategy[Perturbation]:
    """Double a single space at 1..max_edits places of the context (shrinks toward one, the first space)."""
    if max_edits < 1:
        raise InvalidArgument(f"max_edits={max_edits}: must be at least 1")
    # the texts an edit may touch: the story, or each turn's utterance (never a speaker or a line break)
    texts = [sample.context.text] if isinstance(sample.context, Story) else [t.text for t in sample.context.turns]
    spaces = [(i, m.start()) for i, t in enumerate(texts) for m in re.finditer(r"(?<! ) (?! )", t)]
    if not spaces:
        raise InvalidArgument(f"{sample.id}: its context has no single space to double")

    @st.composite
    def draw(data: st.DrawFn) -> Perturbation:
        picked = data(st.lists(st.sampled_from(range(len(spaces))), min_size=1, max_size=min(max_edits, len(spaces)),
                               unique=True))
        chosen = {spaces[k] for k in picked}
        new = ["".join("  " if (i, j) in chosen else ch for j, ch in enumerate(t)) for i, t in enumerate(texts)]
        ctx = Story(new[0]) if isinstance(sample.context, Story) else Conversation(
            tuple(dataclasses.replace(turn, text=text) for turn, text in zip(sample.context.turns, new, strict=True)))
        where = ", ".join(f"{'line ' + str(i + 1) + ' ' if len(texts) > 1 else ''}character {j}" for i, j in sorted(chosen))
        return Perturbation("whitespace", "invariance", dataclasses.replace(sample, context=ctx),
                            f"doubled the space at {where}", len(chosen))

    return draw()


def rephrasings(sample: Sample[Any]) -> st.SearchStrategy[Perturbation]:
    """The question rewritten by one of the benchmark's meaning-preserving templates."""
    rules = [(p, r) for p, r in perturbable(sample.benchmark).rephrasings if p.search(sample.question)]
    if not rules:
        raise InvalidArgument(f"no rephrasing template of {sample.benchmark} matches the question of {sample.id}")

    def build(i: int) -> Perturbation:
        pattern, repl = rules[i]
        question = pattern.sub(repl, sample.question, count=1)
        return Perturbation("rephrase", "invariance", dataclasses.replace(sample, question=question),
                            f"question rephrased: {sample.question!r} -> {question!r}", 1)

    return st.integers(0, len(rules) - 1).map(build)


def _narrative(sample: Sample[Any]) -> str | None:
    if not perturbable(sample.benchmark).narrative:
        return f"{sample.benchmark} does not declare narrative stories (a new sentence could change who was present)"
    return reason(irrelevant_sentences)(sample)


RENAME = StrategySpec("rename", "invariance", ("context", "question", "choices", "gold", "characters", "extra"), ("*",),
                      reason(renamings), renamings, "consistent, collision-free renaming of the characters")
PERMUTE = StrategySpec("permute", "invariance", ("choices", "gold"), ("*",), reason(choice_permutations),
                       choice_permutations, "the options in another order, gold remapped")
IRRELEVANT = StrategySpec("irrelevant", "invariance", ("context",), ("*",), _narrative, irrelevant_sentences,
                          "sentences about nobody inserted between the story's sentences")
WHITESPACE = StrategySpec("whitespace", "invariance", ("context",), ("*",), reason(whitespace_noise), whitespace_noise,
                          "single spaces of the context doubled")
REPHRASE = StrategySpec("rephrase", "invariance", ("question",), ("*",), reason(rephrasings), rephrasings,
                        "the question rephrased by the benchmark's templates")
