"""The typed sample: one benchmark question as a frozen record any later code can read and rewrite. Strategies,
baselines and reports never need to know the benchmark: context (a story or a conversation), question, labelled choices,
gold and characters are fields of their own; a benchmark keeps its own in `extra` and builds prompts from the sample at
run time, so a rewritten sample (a renamed character, permuted choices) is asked exactly as rewritten.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, TypeVar

E = TypeVar("E")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Story:
    """A narrative context (ToMBench, SimpleToM)."""

    text: str

    def render(self) -> str:
        """The context as the benchmark's prompt shows it."""
        return self.text


@dataclass(frozen=True, slots=True)
class Turn:
    """One line of a conversation: who speaks, and what they say."""

    speaker: str
    """Empty for a line that has no "Speaker: " prefix (narration, a blank line)."""
    text: str

    def render(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


_SPEAKER = re.compile(r"^([^\n:]+): ")


@dataclass(frozen=True, slots=True)
class Conversation:
    """A dialogue context (FANToM, ToMATO, ToMValley), one `Turn` per line."""

    turns: tuple[Turn, ...]

    @classmethod
    def parse(cls, text: str) -> Conversation:
        """Split "Name: utterance" lines into turns; `render()` gives `text` back byte for byte."""
        matches = ((line, _SPEAKER.match(line)) for line in text.split("\n"))
        return cls(tuple(Turn(m.group(1), line[m.end() :]) if m else Turn("", line) for line, m in matches))

    def render(self) -> str:
        return "\n".join(t.render() for t in self.turns)

    @property
    def speakers(self) -> tuple[str, ...]:
        """Distinct speakers in order of first appearance."""
        return tuple(dict.fromkeys(t.speaker for t in self.turns if t.speaker))


Context = Story | Conversation


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer option: the label the model is asked to give, and the option's text."""

    label: str
    text: str


@dataclass(frozen=True, slots=True)
class Sample(Generic[E]):
    """One question of one benchmark in one setting: a pytest item's data. `gold` is a choice label for multiple-choice
    questions, a tuple of names for set-valued answers (FANToM's "who knows" lists, compared as sets), or the reference
    text of a free-response question.
    """

    benchmark: str
    """Registry name of the benchmark, e.g. "tombench"."""
    id: str
    """Unique within its suite and stable across runs and machines: the item id and the baseline key."""
    context: Context
    question: str
    choices: tuple[Choice, ...]
    """Empty for free-response, yes/no and list questions."""
    gold: str | tuple[str, ...]
    characters: tuple[str, ...]
    """Names a consistent rename must replace everywhere (context, question, choices, gold, extra)."""
    facets: Mapping[str, str]
    """Grouping keys for tables and sampling strata (language, task, ability...); nothing else."""
    marks: tuple[str, ...]
    """pytest marks the item carries, e.g. ("tombench", "en", "fbt", "belief")."""
    extra: E
    """The benchmark's own fields (a frozen dataclass); only its module looks inside."""
    source: str = ""
    """File and record, for messages."""
    defect: str = ""
    """A known defect of the released record; the item is then an expected failure."""

    @property
    def gold_label(self) -> str:
        """The gold of a multiple-choice sample as a label; raises for other answer kinds."""
        if not self.choices or not isinstance(self.gold, str):
            raise TypeError(f"{self.benchmark} sample {self.id} is not a multiple-choice question")
        return self.gold

    def choice(self, label: str) -> Choice:
        """The choice with `label`; KeyError when there is none."""
        for c in self.choices:
            if c.label == label:
                return c
        raise KeyError(label)


KEEP: Mapping[str, bool] = MappingProxyType({"rewrite": False})
"""Field metadata for identifiers in a benchmark's `extra` that a rename must never touch:
``file: str = dataclasses.field(metadata=KEEP)``."""


def map_text(value: T, fn: Callable[[str], str]) -> T:
    """Apply `fn` to every string inside `value`: dataclasses (frozen or not), tuples, lists, mappings. Mapping keys
    (field names, ids) and dataclass fields marked ``metadata=KEEP`` are left alone, so `rewrite_text` renames a
    benchmark's `extra` without its own code when it holds plain containers.
    """
    if isinstance(value, str):
        return fn(value)  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: map_text(getattr(value, f.name), fn) for f in dataclasses.fields(value)
                   if f.init and f.metadata.get("rewrite", True)}
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(map_text(v, fn) for v in value)  # type: ignore[return-value]
    if isinstance(value, list):
        return [map_text(v, fn) for v in value]  # type: ignore[return-value]
    if isinstance(value, Mapping):
        return type(value)({k: map_text(v, fn) for k, v in value.items()})  # type: ignore[call-arg]
    return value


def rewrite_text(sample: Sample[E], fn: Callable[[str], str], *, facets: Sequence[str] = ()) -> Sample[E]:
    """A copy of `sample` with `fn` applied to all of its text: context, question, choices, gold, characters, extra.
    Ids, labels, marks and facets stay (they identify the item), except the facets named in `facets`, which hold text
    (FANToM's "character").
    """
    ctx: Context
    if isinstance(sample.context, Conversation):
        ctx = Conversation(tuple(Turn(fn(t.speaker) if t.speaker else "", fn(t.text)) for t in sample.context.turns))
    else:
        ctx = Story(fn(sample.context.text))
    choices = tuple(Choice(c.label, fn(c.text)) for c in sample.choices)
    gold = sample.gold if sample.choices else map_text(sample.gold, fn)  # a choice label stays
    new_facets = {k: (fn(v) if k in facets else v) for k, v in sample.facets.items()}
    return dataclasses.replace(
        sample, context=ctx, question=fn(sample.question), choices=choices, gold=gold,
        characters=tuple(fn(c) for c in sample.characters), facets=new_facets, extra=map_text(sample.extra, fn),
    )


def rename(sample: Sample[E], mapping: Mapping[str, str], *, facets: Sequence[str] = (), lower: bool = True) -> Sample[E]:
    """Consistently rename characters (whole words, all at once, so swaps work) everywhere in `sample`. Names match
    case-sensitively as whole words; with `lower` the lower-case form is renamed too, as some benchmarks key on it
    (FANToM); turn it off for names that are also words ("Will").
    """
    if not mapping:
        return sample
    table: dict[str, str] = {}
    for old, new in mapping.items():
        if not old:
            raise ValueError("cannot rename an empty name")
        table[old] = new
        if lower:
            table.setdefault(old.lower(), new.lower())
    pattern = re.compile(r"(?<![\w])(" + "|".join(re.escape(k) for k in sorted(table, key=len, reverse=True)) + r")(?![\w])")
    return rewrite_text(sample, functools.partial(pattern.sub, lambda m: table[m.group(1)]), facets=facets)


def permute_choices(sample: Sample[E], order: Sequence[int]) -> Sample[E]:
    """Show the choice texts in a new order under the same labels, with the gold remapped. `order[i]` is the index of
    the original choice displayed at position i, so the correct option moves with the shuffle and the gold label follows
    it.
    """
    gold = sample.gold_label
    labels = [c.label for c in sample.choices]
    if gold not in labels:
        raise ValueError(f"{sample.benchmark} sample {sample.id}: gold {gold!r} is not one of the choice labels {labels}")
    n = len(sample.choices)
    if sorted(order) != list(range(n)):
        raise ValueError(f"order {list(order)} is not a permutation of {n} choices")
    texts = [sample.choices[i].text for i in order]
    choices = tuple(Choice(c.label, t) for c, t in zip(sample.choices, texts, strict=True))
    new_gold = labels[list(order).index(labels.index(gold))]
    return dataclasses.replace(sample, choices=choices, gold=new_gold)
