"""The ToMBench release: pinned files, the task/ability taxonomy, and release rows as typed samples.

The release is 20 JSONL files with both languages on every row; each row becomes one `Sample` per language. Stories are
not marked in the data (spec D3): they are recovered from INDEX restarts, and for FRT from blocks of four rows, which is
how the paper counts its 140 stories (spec D4). Known release defects are carried on the sample (`Sample.defect`) so the
item is an expected failure, not a surprise.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.errors import TomDataError
from pytest_tom.framework import fields
from pytest_tom.framework.base import slug
from pytest_tom.framework.checks import distinct_options, read_jsonl
from pytest_tom.metrics import groups
from pytest_tom.sample import KEEP, Choice, Sample, Story

BENCHMARK = "tombench"

OFFICIAL_REVISION = "4f491f0784ed31ef93a8837615fbc48f885cf78d"
OFFICIAL_BASE_URL = f"https://raw.githubusercontent.com/zhchen18/ToMBench/{OFFICIAL_REVISION}/"
_PINNED = {  # release file: (sha256, rows)
    "Ambiguous Story Task.jsonl": ("c99f365b6d3d0e982228623d4328afbafe11cf9a8da3a2838ed6c846e4f154d0", 200),
    "Completion of Failed Actions.jsonl": ("cb68348ef3eb53d7c6bf0e426b9279856264748b94f181ce042c91dcf56ba5af", 20),
    "Discrepant Desires.jsonl": ("73093d99923efac243e3610c393613c000b5dc04f88771c39a3b641b993a6b70", 20),
    "Discrepant Emotions.jsonl": ("100b7f05ba5b76aeaa8d2daf3897c90c6a4f08dc23b75a0dd87be0e82db11bf4", 40),
    "Discrepant Intentions.jsonl": ("d72c8353aa5b65f35073d72808996b6f8e980f7683539e25510a251ed8f1dac2", 40),
    "Emotion Regulation.jsonl": ("553d0ee61733cddfa3a9c531c3f7306c40929edc9f0e1e1dda7088ed8804c96c", 20),
    "False Belief Task.jsonl": ("1a5c38362c4c883b219381e24d7b51c1f60abd959f39b6dc3e977ca11d7abff8", 600),
    "Faux-pas Recognition Test.jsonl": ("374272690aedfe34529cb83fc4368a38960da288fb8d787a7bf50aba65dd349c", 560),
    "Hidden Emotions.jsonl": ("57d0882eafddca8fb8d81148bf4291db0c5c6bbdd3a8ad5004c445d249b05124", 80),
    "Hinting Task Test.jsonl": ("fd3a930403c7e0514e8730c48030da17d8bcd8a453e96001ca0795cbaee61afa", 103),
    "Knowledge-Attention Links.jsonl": ("9ea4c7bfc2086d4ebaa2a31cc1993ea2774f72e642d7415dbb9c9c0e21ead94f", 20),
    "Knowledge-Pretend Play Links.jsonl": ("67e3d451089db0a3ac4a7702f4c6c58c2909dbe338aa53bda5e00e4cf9396242", 30),
    "Moral Emotions.jsonl": ("fac3eb293d2901b35274eab8244515b7e138e9cb3311037d5c4a0bda3810dd51", 40),
    "Multiple Desires.jsonl": ("7a49186ab802a2a199806ca191160019ae21d9ff85db9203799fb36b8960a914", 20),
    "Percepts-Knowledge Links.jsonl": ("dda5b279b926eef0e0c440cef4ef68cbebbf82fc6c7b109b213c15c2f9d94804", 40),
    "Persuasion Story Task.jsonl": ("aefef5b6beb7097370cf3bc0c6503ed8caa495530297a4b184c4c31002e23169", 100),
    "Prediction of Actions.jsonl": ("23c56589e459d253bafc2cdc0ea786fba1912c8bf388861a96042666f10b8a47", 20),
    "Scalar Implicature Test.jsonl": ("4264d1842f556f8bcfd7fd56c5058aa8c55f6001931d27d253a85d7ecc19247e", 200),
    "Strange Story Task.jsonl": ("f0a1c6e12b9d9b8b5c936ea3383b24100ef28ed6610078c1fc7bd6769d7ef914", 407),
    "Unexpected Outcome Test.jsonl": ("f4ee872c98e17480272c40d5406a8eca31eed29b455f4155b9684328bf6dbf9c", 300),
}
OFFICIAL_SHA256 = {name: digest for name, (digest, _) in _PINNED.items()}
OFFICIAL_ROWS = {name: n for name, (_, n) in _PINNED.items()}
"""Rows of each pinned file (2,860 in all): Table 1's task counts and Table 18's extra-ability counts (spec 1.2, 1.3)."""

# Task abbreviation: (release file stem, which differs from the paper's name for SIT and HT; paper name).
_TASKS = {
    "uot": ("Unexpected Outcome Test", "Unexpected Outcome Test"),
    "sit": ("Scalar Implicature Test", "Scalar Implicature Task"),
    "pst": ("Persuasion Story Task", "Persuasion Story Task"),
    "fbt": ("False Belief Task", "False Belief Task"),
    "ast": ("Ambiguous Story Task", "Ambiguous Story Task"),
    "ht": ("Hinting Task Test", "Hinting Test"),
    "sst": ("Strange Story Task", "Strange Story Task"),
    "frt": ("Faux-pas Recognition Test", "Faux-pas Recognition Test"),
}
TASK_FILES = {stem: abbr for abbr, (stem, _) in _TASKS.items()}
TASK_NAMES = {abbr: name for abbr, (_, name) in _TASKS.items()}
TASK_ORDER = tuple(TASK_NAMES)
HUMAN_TASK_ACCURACY_ZH = {"uot": 0.893, "sit": 0.755, "pst": 0.700, "fbt": 0.868, "ast": 0.950, "ht": 0.971,
                          "sst": 0.892, "frt": 0.804}
"""Table 2's human row (Chinese only; the paper uses it as the reference for both languages)."""

CATEGORIES = {"Emotion": "emotion", "Desire": "desire", "Intention": "intention", "Knowledge": "knowledge",
              "Belief": "belief", "Non-Literal Communication": "nonliteral"}

# The 31 canonical abilities (Table 18 names), by category.
ABILITIES: dict[str, tuple[str, ...]] = {
    "Emotion": ("Typical emotional reactions", "Atypical emotional reactions", "Discrepant emotions", "Mixed emotions",
                "Hidden emotions", "Moral emotions", "Emotion regulation"),
    "Desire": ("Multiple desires", "Desires influence on actions/emotions", "Desire-action contradiction", "Discrepant desires"),
    "Intention": ("Discrepant intentions", "Prediction of actions", "Intentions explanations", "Completion of failed actions"),
    "Knowledge": ("Knowledge-pretend play links", "Percepts-knowledge links", "Information-knowledge links",
                  "Knowledge-attention links"),
    "Belief": ("Content false beliefs", "Location false beliefs", "Identity false beliefs", "Second-order beliefs",
               "Beliefs based action/emotions", "Sequence false beliefs"),
    "Non-Literal Communication": ("Irony/Sarcasm", "Egocentric lies", "White lies", "Involuntary lies", "Humor", "Faux pas"),
}
ABILITY_CATEGORY = {ability: cat for cat, abilities in ABILITIES.items() for ability in abilities}
_CASEFOLD_ABILITY = {a.lower(): a for a in ABILITY_CATEGORY}
# Raw labels that do not name their canonical ability directly (spec section 1.3, defect D1).
_RAW_ALIASES = {
    "belief: content false beliefs belief: second-order beliefs": "Second-order beliefs",
    "belief: location false beliefs belief: second-order beliefs": "Second-order beliefs",
    "desire: desires influence on actions": "Desires influence on actions/emotions",
    "desire: desires influence on emotions (beliefs)": "Desires influence on actions/emotions",
}
DESIRE_II = "Desires influence on actions/emotions"
DESIRE_II_SUB_LABELS = ("Desires influence on actions", "Desires influence on emotions (beliefs)")
"""The two raw variants the paper averages instead of pooling (spec section 2.5)."""

FRT_DEFECTIVE_BLOCKS = frozenset({114, 115})
"""FRT rows 456-463 break the four-questions-per-story pattern (spec D4)."""
DEFECT_FRT_BLOCK = "FRT block breaks the 4-questions-per-story pattern (release defect)"

LETTERS = "ABCD"

F_ABILITY = "能力\nABILITY"
F_INDEX = "序号\nINDEX"
F_ANSWER = "答案\nANSWER"
FIELDS = {
    "zh": ("故事", "问题", ("选项A", "选项B", "选项C", "选项D")),
    "en": ("STORY", "QUESTION", ("OPTION-A", "OPTION-B", "OPTION-C", "OPTION-D")),
}
"""Story, question and option fields of each language in a release row."""

_PREFIX = re.compile(r"^\s*([A-D])\s*[.．、:：]\s*")
_GOLD = re.compile(r"^\s*([A-D])\s*(?:[.．、:：]\s*)?$")
"""One letter, optionally with the separator of the release's dirty gold "A. " (spec D2); "BC" is no gold."""


def canonical_ability(raw: str) -> tuple[str, str, str]:
    """(canonical ability, category, paper sub-label) of a raw label; the sub-label keeps Desire II's variants apart."""
    norm = " ".join(raw.split()).lower()
    ability = _RAW_ALIASES.get(norm) or _CASEFOLD_ABILITY.get(norm.partition(": ")[2])
    if ability is None:
        raise KeyError(raw)
    sub = DESIRE_II_SUB_LABELS[int("emotions" in norm)] if ability == DESIRE_II else ability
    return ability, ABILITY_CATEGORY[ability], sub


def strip_option_prefix(text: str, letter: str) -> str:
    """Remove a leading "A. "/"A."/"A、" only when it is the option's own letter (spec P6: not upstream's replace)."""
    m = _PREFIX.match(text)
    return text[m.end() :] if m and m.group(1) == letter else text


def is_missing(value: Any) -> bool:
    """An absent option: None, JSON NaN (a float, which upstream's `!= None` misses, spec P5) or blank text."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and not value.strip())


@dataclass(frozen=True, slots=True)
class ToMBenchExtra:
    """What only ToMBench needs about a sample: where it comes from and how the paper groups it."""

    file: str = field(metadata=KEEP)
    row: int
    """1-based line in `file` (the release file stem); with it, seeds the item's option shuffles."""
    language: str = field(metadata=KEEP)
    task: str = field(metadata=KEEP)
    """Task abbreviation, or "extra" for the 390 ability-only items."""
    ability: str = field(metadata=KEEP)
    ability_raw: str = field(metadata=KEEP)
    sub_label: str = field(metadata=KEEP)
    category: str = field(metadata=KEEP)
    index: int
    story_id: str = field(metadata=KEEP)
    """Task-file story key ("" for extra items); stories are delimited by INDEX restarts, FRT by blocks of 4."""
    story_size: int
    """Questions in the whole story (0 for extra items), so a partial selection is never scored as a story."""


ToMBenchSample = Sample[ToMBenchExtra]


def _options(rec: Mapping[str, Any], names: Sequence[str], path: Path, row: int) -> tuple[str, ...]:
    values: list[Any] = [rec.get(f) for f in names]
    c_missing, d_missing = is_missing(values[2]), is_missing(values[3])
    if c_missing != d_missing and not any(is_missing(v) or not isinstance(v, str) for v in values[:2]):
        raise TomDataError("a 4-option item needs both C and D (2-option items leave both empty)", path=path,
                           record=f"line {row}", field=names[2] if c_missing else names[3])
    count = 2 if c_missing else 4  # a binary item: the release stores C and D as NaN (spec P5)
    for f, v in zip(names[:count], values[:count], strict=True):
        if is_missing(v):
            raise TomDataError("option missing", path=path, record=f"line {row}", field=f)
        if not isinstance(v, str):
            raise TomDataError(fields.wrong_type("text", v), path=path, record=f"line {row}", field=f)
    return tuple(strip_option_prefix(v.strip(), letter).strip() for letter, v in zip(LETTERS, values[:count], strict=False))


_Row = tuple[ToMBenchExtra, Mapping[str, tuple[str, str, tuple[str, ...]]], str, str]
"""One validated release row: its extra (language and story size still blank), each language's (story, question,
options), the gold letter and the row's defect."""


def _read_rows(path: Path, stem: str, task: str, languages: Sequence[str]) -> list[_Row]:
    """Validate every row of one file, in order; every error names the file, the line and the field."""
    rows: list[_Row] = []
    story_no = 0
    for row, rec in read_jsonl(path):
        def bad(message: str, name: str = F_ANSWER, row: int = row) -> TomDataError:
            return TomDataError(message, path=path, record=f"line {row}", field=name)

        raw_ability = rec.get(F_ABILITY)
        if raw_ability is None:
            raise bad("missing ability label", F_ABILITY)
        if not isinstance(raw_ability, str):
            raise bad(fields.wrong_type("text", raw_ability), F_ABILITY)
        try:
            ability, category, sub = canonical_ability(raw_ability)
        except KeyError:
            raise bad(f"unknown ability label {raw_ability!r}", F_ABILITY) from None
        index = rec.get(F_INDEX)
        if isinstance(index, float) and index.is_integer():
            index = int(index)
        if not isinstance(index, int) or isinstance(index, bool):
            raise bad(fields.wrong_type("an integer", index), F_INDEX)
        raw_answer = rec.get(F_ANSWER)
        if raw_answer is not None and not isinstance(raw_answer, str):
            raise bad(fields.wrong_type("a letter A-D as text", raw_answer))
        # One release item stores its gold as "A. " (spec D2): one letter, a separator allowed; "BC" is refused.
        gold = _GOLD.match(raw_answer or "")
        if gold is None:
            raise bad(f"gold answer {raw_answer!r} is not a letter A-D")
        answer = gold.group(1)
        row_no = len(rows)
        if task == "frt":
            story_id = f"story{row_no // 4 + 1:03d}"  # blocks of 4 reproduce the paper's 140 stories (spec D4)
        elif task != "extra":
            story_no += index == 1 or story_no == 0
            story_id = f"story{story_no:03d}"
        else:
            story_id = ""
        texts = {lang: (fields.text(rec, sf, path, f"line {row}").strip(), fields.text(rec, qf, path, f"line {row}").strip(),
                        _options(rec, of, path, row)) for lang, (sf, qf, of) in FIELDS.items()}
        defect = ""
        if len(texts["zh"][2]) != len(texts["en"][2]):
            # SST row 292: Zh is binary, En a 4-option question copied from another story (spec D5).
            defect = f"Chinese and English versions differ in option count ({len(texts['zh'][2])} vs {len(texts['en'][2])})"
        if task == "frt" and row_no // 4 in FRT_DEFECTIVE_BLOCKS:
            defect = defect or DEFECT_FRT_BLOCK
        for lang in languages:
            if LETTERS.index(answer) >= len(texts[lang][2]):
                raise bad(f"gold {answer!r} is not among the {len(texts[lang][2])} {lang} options")
            # Two English rows of the real release (Unexpected Outcome Test 166, 168) double a distractor ("Angry"):
            # only a gold whose text is also another option's is ambiguous.
            distinct_options(texts[lang][2], LETTERS.index(answer), path, f"line {row}", FIELDS[lang][2], gold_only=True)
        extra = ToMBenchExtra(stem, row, "", task, ability, raw_ability, sub, category, index, story_id, 0)
        rows.append((extra, texts, answer, defect))
    return rows


def load_file(path: Path, languages: Sequence[str]) -> list[ToMBenchSample]:
    """Samples of one release file, one per row and language; both languages are always validated."""
    stem = path.name[: -len(".jsonl")]
    rows = _read_rows(path, stem, TASK_FILES.get(stem, "extra"), languages)
    sizes = Counter(x.story_id for x, *_ in rows if x.story_id)
    return [to_sample(dataclasses.replace(x, language=lang, story_size=sizes[x.story_id] if x.story_id else 0),
                      *texts[lang], answer, defect)
            for x, texts, answer, defect in rows for lang in languages]


def to_sample(extra: ToMBenchExtra, story: str, question: str, options: Sequence[str], answer: str,
              defect: str = "") -> ToMBenchSample:
    """The sample of one row in one language; ids, facets and marks are those of the old items."""
    file_slug = slug(extra.file)
    qtype = "two_choice" if len(options) == 2 else "four_choice"
    facets = {"language": extra.language, "task": extra.task, "category": extra.category, "ability": extra.ability,
              "sub_label": extra.sub_label, "qtype": qtype,
              "story": f"{extra.language}-{file_slug}-{extra.story_id}" if extra.story_id else ""}
    return Sample(
        benchmark=BENCHMARK, id=f"{extra.language}-{file_slug}-{extra.row:04d}", context=Story(story),
        question=question, choices=tuple(Choice(letter, text) for letter, text in zip(LETTERS, options, strict=False)),
        gold=answer, characters=(), facets=facets,
        marks=(BENCHMARK, extra.language, extra.task, CATEGORIES[extra.category], slug(extra.ability), qtype),
        extra=extra, source=f"tombench/data/{extra.file}.jsonl line {extra.row}", defect=defect,
    )


def stories(samples: Sequence[ToMBenchSample]) -> list[Derived]:
    """One coherence assertion per story: it passes only if every question of the story passes (Table 22)."""
    return [Derived(benchmark=BENCHMARK, id=sid, kind="coherence", members=tuple(s.id for s in group),
                    marks=(BENCHMARK, x.language, x.task, "coherence"),
                    facets={"language": x.language, "task": x.task, "story": sid})
            for (sid,), group in groups(samples, ("story",)).items() if sid for x in (group[0].extra,)]
