"""ToMBench (Chen et al., ACL 2024): loader, official prompts, parsing, metrics, story coherence.

Faithful to the official repository (zhchen18/ToMBench) where it is well defined,
and explicit where it is not (see docs in README, "ToMBench"):

* official system/user prompts, byte for byte, vanilla and CoT, Chinese and English;
* several shuffled tries per item with a majority vote (default 5, as upstream),
  permutations derived from (seed, file, row, try) so a selection (-m, -k,
  sampling) never changes which orders an item sees;
* the official answer extraction, plus a lenient mode (the default: official
  rules, but an answer with no letter is "unparseable" instead of silently "A")
  and a strict mode;
* the paper's aggregation (task micro accuracy, ability accuracy pooled across
  files, unweighted category/AVG means, the Desire sub-label weighting) or a clean
  variant, and the coherent test (a story passes only if all its questions pass).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tom.benchmarks.base import Benchmark, BenchmarkOption, DataSource, Program, slug
from pytest_tom.data import fetch_pinned
from pytest_tom.errors import TomDataError
from pytest_tom.stats import mean, tally
from pytest_tom.types import GenerationSettings, Group, ItemResult, Message, Outcome, Question, Request

# Official prompts, byte-for-byte from the ToMBench repository's prompts.py (typo "serveral" kept).
SYSTEM_ZH = '下面给你提供一段故事，一个问题和若干答案选项，请你根据故事内容和给定的问题，按照常理推测，选择一个最可能的答案选项，并输出答案序号。\n注意：\n（1）请只输出最可能的答案序号，格式为：[[答案序号]]，例如，最可能的答案选项为“A. 手提包”，则输出“[[A]]”；\n（2）请必须从给定的答案选项“A、B、C、D”中选择一个做为最可能的答案作为输出，无论故事中是否提供足够的信息，如果你认为故事里没有足够的信息选出答案，请随机输出“[[A]]”，“[[B]]”，“[[C]]”，“[[D]]”其中之一；\n（3）请只输出在给定的信息下最可能的答案序号，不要输出其他内容。'
SYSTEM_ZH_COT = '下面给你提供一段故事，一个问题和若干答案选项，请你根据故事内容和给定的问题，按照常理推测，选择一个最可能的答案选项，并输出答案序号。\n注意：\n（1）请先一步步思考，对问题的答案进行推理分析，最后请输出最可能的答案序号，格式为：[[答案序号]]，例如，最可能的答案选项为“A. 手提包”，则输出“[[A]]”；\n（2）请必须从给定的答案选项“A、B、C、D”中选择一个做为最可能的答案作为输出，无论故事中是否提供足够的信息，如果你认为故事里没有足够的信息选出答案，请随机输出“[[A]]”，“[[B]]”，“[[C]]”，“[[D]]”其中之一；\n（3）再次强调，你必须先给出一步步推理的结果，最后再输出最可能的答案序号。你不应该直接输出答案。'
SYSTEM_EN = 'Below is a multiple-choice question with a story and serveral answer options. Based on the content of the story and the given question, please infer the most likely answer and output the answer index.\nNote:\n(1) Please only output the most likely answer index in the format: [[Answer Index]], for example, if the most likely answer option is \'A. Handbag\', then output \'[[A]]\';\n(2) You must choose one of the given answer options \'A, B, C, D\' as the most likely answer, regardless of whether the story provides enough information. If you think there is not enough information in the story to choose an answer, please randomly output one of "[[A]]", "[[B]]", "[[C]]", or "[[D]]";\n(3) Please only output the most likely answer index based on the given information, and do not output any other content.'
SYSTEM_EN_COT = 'Below is a multiple-choice question with a story and serveral answer options. Based on the content of the story and the given question, please infer the most likely answer and output the answer index.\nNote:\n(1) Please first think step by step, conduct analysis on the answers to the questions, and finally output the most likely answer index in the format: [[Answer Index]], for example, if the most likely answer option is \'A. Handbag\', then output \'[[A]]\';\n(2) You must choose one of the given answer options \'A, B, C, D\' as the most likely answer, regardless of whether the story provides enough information. If you think there is not enough information in the story to choose an answer, please randomly output one of "[[A]]", "[[B]]", "[[C]]", or "[[D]]";\n(3) Again, you must first output the results of step-by-step reasoning, and finally output the most likely answer index. You should not directly output the answer index.'
USER_4_ZH = '[故事]\n{story}\n\n[问题]\n{question}\n\n[答案选项]\nA. {choice_a}\nB. {choice_b}\nC. {choice_c}\nD. {choice_d}'
USER_2_ZH = '[故事]\n{story}\n\n[问题]\n{question}\n\n[答案选项]\nA. {choice_a}\nB. {choice_b}'
USER_4_EN = '[Story]\n{story}\n\n[Question]\n{question}\n\n[Candidate Answers]\nA. {choice_a}\nB. {choice_b}\nC. {choice_c}\nD. {choice_d}'
USER_2_EN = '[Story]\n{story}\n\n[Question]\n{question}\n\n[Candidate Answers]\nA. {choice_a}\nB. {choice_b}'

SYSTEM_PROMPTS = {("zh", "vanilla"): SYSTEM_ZH, ("zh", "cot"): SYSTEM_ZH_COT, ("en", "vanilla"): SYSTEM_EN, ("en", "cot"): SYSTEM_EN_COT}
USER_TEMPLATES = {("zh", 4): USER_4_ZH, ("zh", 2): USER_2_ZH, ("en", 4): USER_4_EN, ("en", 2): USER_2_EN}

# --- data layout -------------------------------------------------------------------------------

OFFICIAL_REVISION = "4f491f0784ed31ef93a8837615fbc48f885cf78d"
OFFICIAL_BASE_URL = f"https://raw.githubusercontent.com/zhchen18/ToMBench/{OFFICIAL_REVISION}/"
OFFICIAL_SHA256 = {
    "Ambiguous Story Task.jsonl": "c99f365b6d3d0e982228623d4328afbafe11cf9a8da3a2838ed6c846e4f154d0",
    "Completion of Failed Actions.jsonl": "cb68348ef3eb53d7c6bf0e426b9279856264748b94f181ce042c91dcf56ba5af",
    "Discrepant Desires.jsonl": "73093d99923efac243e3610c393613c000b5dc04f88771c39a3b641b993a6b70",
    "Discrepant Emotions.jsonl": "100b7f05ba5b76aeaa8d2daf3897c90c6a4f08dc23b75a0dd87be0e82db11bf4",
    "Discrepant Intentions.jsonl": "d72c8353aa5b65f35073d72808996b6f8e980f7683539e25510a251ed8f1dac2",
    "Emotion Regulation.jsonl": "553d0ee61733cddfa3a9c531c3f7306c40929edc9f0e1e1dda7088ed8804c96c",
    "False Belief Task.jsonl": "1a5c38362c4c883b219381e24d7b51c1f60abd959f39b6dc3e977ca11d7abff8",
    "Faux-pas Recognition Test.jsonl": "374272690aedfe34529cb83fc4368a38960da288fb8d787a7bf50aba65dd349c",
    "Hidden Emotions.jsonl": "57d0882eafddca8fb8d81148bf4291db0c5c6bbdd3a8ad5004c445d249b05124",
    "Hinting Task Test.jsonl": "fd3a930403c7e0514e8730c48030da17d8bcd8a453e96001ca0795cbaee61afa",
    "Knowledge-Attention Links.jsonl": "9ea4c7bfc2086d4ebaa2a31cc1993ea2774f72e642d7415dbb9c9c0e21ead94f",
    "Knowledge-Pretend Play Links.jsonl": "67e3d451089db0a3ac4a7702f4c6c58c2909dbe338aa53bda5e00e4cf9396242",
    "Moral Emotions.jsonl": "fac3eb293d2901b35274eab8244515b7e138e9cb3311037d5c4a0bda3810dd51",
    "Multiple Desires.jsonl": "7a49186ab802a2a199806ca191160019ae21d9ff85db9203799fb36b8960a914",
    "Percepts-Knowledge Links.jsonl": "dda5b279b926eef0e0c440cef4ef68cbebbf82fc6c7b109b213c15c2f9d94804",
    "Persuasion Story Task.jsonl": "aefef5b6beb7097370cf3bc0c6503ed8caa495530297a4b184c4c31002e23169",
    "Prediction of Actions.jsonl": "23c56589e459d253bafc2cdc0ea786fba1912c8bf388861a96042666f10b8a47",
    "Scalar Implicature Test.jsonl": "4264d1842f556f8bcfd7fd56c5058aa8c55f6001931d27d253a85d7ecc19247e",
    "Strange Story Task.jsonl": "f0a1c6e12b9d9b8b5c936ea3383b24100ef28ed6610078c1fc7bd6769d7ef914",
    "Unexpected Outcome Test.jsonl": "f4ee872c98e17480272c40d5406a8eca31eed29b455f4155b9684328bf6dbf9c",
}

# Task files (release names, which differ from the paper's for SIT and HT) -> task abbreviation.
TASK_FILES = {
    "Unexpected Outcome Test": "uot",
    "Scalar Implicature Test": "sit",
    "Persuasion Story Task": "pst",
    "False Belief Task": "fbt",
    "Ambiguous Story Task": "ast",
    "Hinting Task Test": "ht",
    "Strange Story Task": "sst",
    "Faux-pas Recognition Test": "frt",
}
TASK_NAMES = {
    "uot": "Unexpected Outcome Test",
    "sit": "Scalar Implicature Task",
    "pst": "Persuasion Story Task",
    "fbt": "False Belief Task",
    "ast": "Ambiguous Story Task",
    "ht": "Hinting Test",
    "sst": "Strange Story Task",
    "frt": "Faux-pas Recognition Test",
}
TASK_ORDER = tuple(TASK_NAMES)
HUMAN_TASK_ACCURACY_ZH = {"uot": 0.893, "sit": 0.755, "pst": 0.700, "fbt": 0.868, "ast": 0.950, "ht": 0.971, "sst": 0.892, "frt": 0.804}
"""Table 2's human row (Chinese only; the paper uses it as the reference for both languages)."""

CATEGORIES = {
    "Emotion": "emotion",
    "Desire": "desire",
    "Intention": "intention",
    "Knowledge": "knowledge",
    "Belief": "belief",
    "Non-Literal Communication": "nonliteral",
}

# The 31 canonical abilities (Table 18 names), by category.
ABILITIES: dict[str, tuple[str, ...]] = {
    "Emotion": (
        "Typical emotional reactions", "Atypical emotional reactions", "Discrepant emotions", "Mixed emotions",
        "Hidden emotions", "Moral emotions", "Emotion regulation",
    ),
    "Desire": ("Multiple desires", "Desires influence on actions/emotions", "Desire-action contradiction", "Discrepant desires"),
    "Intention": ("Discrepant intentions", "Prediction of actions", "Intentions explanations", "Completion of failed actions"),
    "Knowledge": (
        "Knowledge-pretend play links", "Percepts-knowledge links", "Information-knowledge links", "Knowledge-attention links",
    ),
    "Belief": (
        "Content false beliefs", "Location false beliefs", "Identity false beliefs", "Second-order beliefs",
        "Beliefs based action/emotions", "Sequence false beliefs",
    ),
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

FRT_DEFECTIVE_BLOCKS = frozenset({114, 115})
"""FRT rows 456-463 break the four-questions-per-story pattern (spec D4)."""

_PREFIX = re.compile(r"^\s*([A-D])\s*[.．、:：]\s*")
LETTERS = "ABCD"


def canonical_ability(raw: str) -> tuple[str, str, str]:
    """Map a raw release label to (canonical ability, category, paper sub-label).

    The sub-label keeps Desire II's two raw variants apart, because the paper's
    Desire numbers average them instead of pooling (spec section 2.5).
    """
    norm = " ".join(raw.split()).lower()
    ability = _RAW_ALIASES.get(norm)
    if ability is None:
        _, _, name = norm.partition(": ")
        ability = _CASEFOLD_ABILITY.get(name)
    if ability is None:
        raise KeyError(raw)
    sub = ability
    if ability == "Desires influence on actions/emotions":
        sub = "Desires influence on emotions (beliefs)" if "emotions" in norm else "Desires influence on actions"
    return ability, ABILITY_CATEGORY[ability], sub


def strip_option_prefix(text: str, letter: str) -> str:
    """Remove a leading "A. "/"A."/"A、" only when it is the option's own letter (spec P6)."""
    m = _PREFIX.match(text)
    if m and m.group(1) == letter:
        return text[m.end() :]
    return text


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and not value.strip())


# --- records -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToMBenchItem:
    """One release row in one language, normalised."""

    file: str
    row: int
    """1-based line number in the file."""
    language: str
    task: str
    """Task abbreviation, or "extra" for the 390 ability-only items."""
    ability: str
    ability_raw: str
    sub_label: str
    category: str
    index: int
    story: str
    question: str
    options: tuple[str, ...]
    answer: str
    story_id: str
    """Task-file story key ("" for extra items); stories are delimited by INDEX restarts, FRT by blocks of 4."""
    defect: str = ""
    """Known release defect affecting this item, if any."""


def _record_text(rec: Mapping[str, Any], field: str, path: Path, row: int) -> str:
    value = rec.get(field)
    if not isinstance(value, str) or not value.strip():
        raise TomDataError("missing or empty text", path=path, record=f"line {row}", field=field)
    return value.strip()


_FIELDS = {
    "zh": ("故事", "问题", ("选项A", "选项B", "选项C", "选项D")),
    "en": ("STORY", "QUESTION", ("OPTION-A", "OPTION-B", "OPTION-C", "OPTION-D")),
}
F_ABILITY = "能力\nABILITY"
F_INDEX = "序号\nINDEX"
F_ANSWER = "答案\nANSWER"


def _options(rec: Mapping[str, Any], fields: Sequence[str], path: Path, row: int) -> tuple[str, ...]:
    values = [rec.get(f) for f in fields]
    for f, v in zip(fields[:2], values[:2]):
        if _is_missing(v) or not isinstance(v, str):
            raise TomDataError("option missing", path=path, record=f"line {row}", field=f)
    c_missing, d_missing = _is_missing(values[2]), _is_missing(values[3])
    if c_missing and d_missing:
        count = 2  # binary item: the release stores C and D as NaN (spec P5)
    elif c_missing or d_missing:
        missing = fields[2] if c_missing else fields[3]
        raise TomDataError("a 4-option item needs both C and D (2-option items leave both empty)", path=path, record=f"line {row}", field=missing)
    else:
        count = 4
    out = []
    for letter, f, v in zip(LETTERS, fields, values[:count]):
        if not isinstance(v, str):
            raise TomDataError(f"expected text, got {type(v).__name__}", path=path, record=f"line {row}", field=f)
        out.append(strip_option_prefix(v.strip(), letter).strip())
    return tuple(out)


def load_file(path: Path, languages: Sequence[str]) -> list[ToMBenchItem]:
    """Parse one release JSONL file into items, one per row and language."""
    stem = path.name[: -len(".jsonl")]
    task = TASK_FILES.get(stem, "extra")
    items: list[ToMBenchItem] = []
    story_no = 0
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TomDataError(f"cannot read: {exc}", path=path) from exc
    row_no = 0
    for row, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TomDataError(f"invalid JSON ({exc.msg} at column {exc.colno})", path=path, record=f"line {row}") from None
        if not isinstance(rec, dict):
            raise TomDataError("expected a JSON object", path=path, record=f"line {row}")
        raw_ability = rec.get(F_ABILITY)
        if not isinstance(raw_ability, str):
            raise TomDataError("missing ability label", path=path, record=f"line {row}", field=F_ABILITY)
        try:
            ability, category, sub = canonical_ability(raw_ability)
        except KeyError:
            raise TomDataError(f"unknown ability label {raw_ability!r}", path=path, record=f"line {row}", field=F_ABILITY) from None
        index = rec.get(F_INDEX)
        if isinstance(index, float) and index.is_integer():
            index = int(index)
        if not isinstance(index, int) or isinstance(index, bool):
            raise TomDataError(f"expected an integer, got {index!r}", path=path, record=f"line {row}", field=F_INDEX)
        raw_answer = rec.get(F_ANSWER)
        # One release item stores its gold as "A. " (spec D2): strip, take the first character.
        answer = raw_answer.strip()[:1] if isinstance(raw_answer, str) else ""
        if answer not in LETTERS or not answer:
            raise TomDataError(f"gold answer {raw_answer!r} is not a letter A-D", path=path, record=f"line {row}", field=F_ANSWER)
        if task == "frt":
            story_id = f"story{row_no // 4 + 1:03d}"  # blocks of 4 reproduce the paper's 140 stories (spec D4)
        elif task != "extra":
            if index == 1 or story_no == 0:
                story_no += 1
            story_id = f"story{story_no:03d}"
        else:
            story_id = ""
        per_lang = {}
        for lang in ("zh", "en"):
            sf, qf, of = _FIELDS[lang]
            per_lang[lang] = (_record_text(rec, sf, path, row), _record_text(rec, qf, path, row), _options(rec, of, path, row))
        defect = ""
        if len(per_lang["zh"][2]) != len(per_lang["en"][2]):
            # SST row 292: Zh is binary, En a 4-option question copied from another story (spec D5).
            defect = f"Chinese and English versions differ in option count ({len(per_lang['zh'][2])} vs {len(per_lang['en'][2])})"
        if task == "frt" and row_no // 4 in FRT_DEFECTIVE_BLOCKS:
            defect = defect or "FRT block breaks the 4-questions-per-story pattern (release defect)"
        for lang in languages:
            story, question, options = per_lang[lang]
            if LETTERS.index(answer) >= len(options):
                raise TomDataError(
                    f"gold {answer!r} is not among the {len(options)} {lang} options", path=path, record=f"line {row}", field=F_ANSWER
                )
            items.append(
                ToMBenchItem(
                    file=stem, row=row, language=lang, task=task, ability=ability, ability_raw=raw_ability,
                    sub_label=sub, category=category, index=index, story=story, question=question,
                    options=options, answer=answer, story_id=story_id, defect=defect,
                )
            )
        row_no += 1
    return items


# --- answer extraction ---------------------------------------------------------------------------

_DOUBLE = re.compile(r"\[\[([A-D])\]\]")


def extract_official(text: str) -> tuple[str, bool]:
    """Upstream's `extract_answer`: priority by letter, then the last capital A-D anywhere, else "A".

    Returns the letter and whether anything matched (False means upstream's silent default).
    """
    for pattern in ("[[{}]]", "[{}]"):
        for letter in LETTERS:
            if pattern.format(letter) in text:
                return letter, True
    for ch in reversed(text):
        if ch in LETTERS:
            return ch, True
    return "A", False


def extract_answer(text: str | None, mode: str, n_options: int) -> str | None:
    """The displayed letter a response chose, or None when it cannot be read.

    `official` reproduces upstream exactly (never None); `lenient` is upstream
    without the default "A"; `strict` accepts only the last ``[[X]]`` with X valid
    for the item.
    """
    text = text or ""
    if mode == "strict":
        found = _DOUBLE.findall(text)
        if not found or LETTERS.index(found[-1]) >= n_options:
            return None
        return found[-1]
    letter, matched = extract_official(text)
    if mode == "official":
        return letter
    return letter if matched else None


def majority(votes: Sequence[str]) -> str:
    """Most frequent vote; ties go to the vote recorded first (upstream's sequential runner)."""
    counts = Counter(votes)
    best = max(counts.values())
    return next(v for v in votes if counts[v] == best)


def permutation(n: int, seed: int, item_key: str, trial: int, scheme: str) -> tuple[int, ...]:
    """Which original option is displayed at each position in this trial.

    Derived from (seed, item, trial) rather than one process-wide RNG (spec P3), so
    deselecting other items never changes the orders an item sees.
    """
    if scheme == "none":
        return tuple(range(n))
    if scheme == "cyclic":
        k = trial % n
        return tuple((i + k) % n for i in range(n))
    digest = hashlib.sha256(f"{seed}:{item_key}:{trial}".encode()).digest()
    order = list(range(n))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return tuple(order)


def render_user(item: ToMBenchItem, order: Sequence[int]) -> str:
    template = USER_TEMPLATES[(item.language, len(item.options))]
    shown = [item.options[i] for i in order]
    fields = dict(zip(("choice_a", "choice_b", "choice_c", "choice_d"), shown))
    return template.format(story=item.story, question=item.question, **fields)


# --- the benchmark -------------------------------------------------------------------------------


class ToMBench(Benchmark):
    name = "tombench"
    description = "ToMBench: 2,860 bilingual multiple-choice items, 8 tasks, 31 abilities (Chen et al., ACL 2024)"
    options = (
        BenchmarkOption("languages", "en,zh", "Languages to test, comma-separated.", choices=("en", "zh")),
        BenchmarkOption("prompt", "vanilla", "Official prompt: vanilla or chain-of-thought.", choices=("vanilla", "cot")),
        BenchmarkOption("tries", "5", "Shuffled tries per item, majority-voted (official: 5).", kind=int),
        BenchmarkOption(
            "permutations", "random", "Option orders: random (official), cyclic (each option once per position), none.",
            choices=("random", "cyclic", "none"),
        ),
        BenchmarkOption("shuffle_seed", "42", "Seed of the option shuffles (official default 42).", kind=int),
        BenchmarkOption(
            "extraction", "lenient",
            "Answer extraction: official (upstream, unreadable answers become 'A'), lenient (upstream rules, "
            "unreadable answers are unparseable), strict (last [[X]] only).",
            choices=("lenient", "official", "strict"),
        ),
        BenchmarkOption("aggregation", "paper", "Metrics: paper (reproduces the tables) or clean.", choices=("paper", "clean")),
        BenchmarkOption(
            "scoring", "generate",
            "generate (official: parse the generated answer), loglikelihood (pick the option the model scores "
            "highest), or both (items scored by generation; the report gives how often the two disagree).",
            choices=("generate", "loglikelihood", "both"),
        ),
        BenchmarkOption(
            "ll_target", "letter",
            "Log-likelihood continuation: letter ('[[A]]', the official answer format) or text (the option itself).",
            choices=("letter", "text"),
        ),
        BenchmarkOption(
            "ll_normalise", "none", "Log-likelihood normalisation: none, or bytes (divide by the continuation's UTF-8 length).",
            choices=("none", "bytes"),
        ),
        BenchmarkOption("max_new_tokens", "0", "Token budget per answer; 0 means 64 (vanilla) or 1024 (cot).", kind=int),
        BenchmarkOption("source_url", OFFICIAL_BASE_URL, "Where --tom-download fetches data/*.jsonl (pinned revision)."),
    )
    strata = ("language", "ability")
    summary_facets = (("language",), ("language", "task"), ("language", "category"), ("language", "ability"))
    mark_docs = {
        "tombench": "ToMBench items (Chen et al., 2024).",
        "en": "English version of an item.",
        "zh": "Chinese version of an item.",
        **{abbr: f"ToMBench task: {name}." for abbr, name in TASK_NAMES.items()},
        "extra": "ToMBench extra-ability items (no task).",
        **{mark: f"Ability category: {cat}." for cat, mark in CATEGORIES.items()},
        **{slug(a): f"ToMBench ability: {a} ({c})." for a, c in ABILITY_CATEGORY.items()},
        "two_choice": "Question with 2 options (yes/no style).",
        "four_choice": "Question with 4 options.",
        "coherence": "Consistency test: passes only if every question of its story/set passes.",
    }

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        langs = self.settings["languages"]
        self.languages = tuple(dict.fromkeys(langs.split(",") if isinstance(langs, str) else langs))
        if self.settings["tries"] < 1:
            from pytest_tom.errors import TomConfigError

            raise TomConfigError(f"tombench tries must be at least 1, got {self.settings['tries']}")
        self.settings["languages"] = ",".join(self.languages)

    # -- data ------------------------------------------------------------------------------------
    def data_dir(self, source: DataSource) -> Path:
        candidates = []
        if source.root is not None:
            candidates += [source.root / "tombench" / "data", source.root / "data", source.root]
        for c in candidates:
            if c.is_dir() and any(c.glob("*.jsonl")):
                return c
        cached = source.cache_dir / "tombench" / OFFICIAL_REVISION / "data"
        if source.download:
            fetch_pinned(self.settings["source_url"].rstrip("/") + "/data/", OFFICIAL_SHA256, cached)
            return cached
        if cached.is_dir() and all((cached / n).exists() for n in OFFICIAL_SHA256):
            return cached
        where = ", ".join(str(c) for c in candidates) or "(no --tom-data-dir given)"
        raise TomDataError(
            f"ToMBench data not found; looked in {where}. Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding "
            "tombench/data/*.jsonl, or pass --tom-download to fetch the official files at revision "
            f"{OFFICIAL_REVISION[:12]} (sha256-checked). ToMBench is for evaluation only, never for training."
        )

    def load_items(self, source: DataSource) -> list[ToMBenchItem]:
        folder = self.data_dir(source)
        files = sorted(folder.glob("*.jsonl"))
        known = [f for f in files if f.name in OFFICIAL_SHA256]
        if not known:
            raise TomDataError("no ToMBench release files (e.g. 'False Belief Task.jsonl') in this folder", path=folder)
        items: list[ToMBenchItem] = []
        for f in known:
            items.extend(load_file(f, self.languages))
        order = {lang: i for i, lang in enumerate(self.languages)}
        items.sort(key=lambda it: (order[it.language], it.file, it.row))
        return items

    def load(self, source: DataSource) -> list[Question]:
        items = self.load_items(source)
        sizes = Counter((it.language, it.file, it.story_id) for it in items if it.story_id)
        return [self._question(it, sizes[(it.language, it.file, it.story_id)]) for it in items]

    def _question(self, it: ToMBenchItem, story_size: int = 0) -> Question:
        file_slug = slug(it.file)
        qtype = "two_choice" if len(it.options) == 2 else "four_choice"
        task_mark = it.task
        facets = {
            "language": it.language,
            "task": it.task,
            "category": it.category,
            "ability": it.ability,
            "sub_label": it.sub_label,
            "qtype": qtype,
            "story": f"{it.language}-{file_slug}-{it.story_id}" if it.story_id else "",
        }
        if it.story_id:
            facets["story_size"] = str(story_size)
        if it.defect:
            facets["defect"] = it.defect
        return Question(
            benchmark=self.name,
            qid=f"{it.language}-{file_slug}-{it.row:04d}",
            marks=(self.name, it.language, task_mark, CATEGORIES[it.category], slug(it.ability), qtype),
            facets=facets,
            payload=it,
            source=f"tombench/data/{it.file}.jsonl line {it.row}",
        )

    def groups(self, questions: Sequence[Question]) -> list[Group]:
        stories: dict[str, list[Question]] = defaultdict(list)
        for q in questions:
            if q.facets.get("story"):
                stories[q.facets["story"]].append(q)
        out = []
        for sid, members in stories.items():
            first = members[0].payload
            out.append(
                Group(
                    benchmark=self.name,
                    gid=sid,
                    kind="coherence",
                    members=tuple(q.qid for q in members),
                    marks=(self.name, first.language, first.task, "coherence"),
                    facets={"language": first.language, "task": first.task, "story": sid},
                )
            )
        return out

    # -- requests and scoring --------------------------------------------------------------------
    def _budget(self) -> int:
        budget = int(self.settings["max_new_tokens"])
        return budget if budget > 0 else (1024 if self.settings["prompt"] == "cot" else 64)

    def requests_for(self, it: ToMBenchItem, kind: str = "generate") -> list[tuple[tuple[int, ...], Request]]:
        system = SYSTEM_PROMPTS[(it.language, self.settings["prompt"])]
        n = len(it.options)
        settings = GenerationSettings(max_new_tokens=self._budget(), temperature=0.0)
        out = []
        for trial in range(self.settings["tries"]):
            order = permutation(n, self.settings["shuffle_seed"], f"{it.file}:{it.row}", trial, self.settings["permutations"])
            messages = (Message("system", system), Message("user", render_user(it, order)))
            if kind == "loglikelihood":
                if self.settings["ll_target"] == "letter":
                    choices = tuple(f"[[{LETTERS[pos]}]]" for pos in range(n))
                else:
                    choices = tuple(it.options[i] for i in order)
                req = Request(messages=messages, settings=GenerationSettings(max_new_tokens=0), kind="loglikelihood", choices=choices)
            else:
                req = Request(messages=messages, settings=settings, answer_labels=tuple(LETTERS[:n]), answer_format="[[{}]]")
            out.append((order, req))
        return out

    def solve(self, question: Question) -> Program:
        it: ToMBenchItem = question.payload
        mode = self.settings["scoring"]
        gen = self.requests_for(it) if mode in ("generate", "both") else []
        ll = self.requests_for(it, "loglikelihood") if mode in ("loglikelihood", "both") else []
        responses = yield [r for _, r in gen + ll]
        gen_resp, ll_resp = responses[: len(gen)], responses[len(gen) :]
        if mode == "loglikelihood":
            return self.score(question, [o for o, _ in ll], [None] * len(ll), ll_choice=self._ll_choices(ll, ll_resp))
        result = self.score(question, [o for o, _ in gen], [r.text for r in gen_resp])
        if mode == "both":
            ll_result = self.score(question, [o for o, _ in ll], [None] * len(ll), ll_choice=self._ll_choices(ll, ll_resp))
            result.details["loglikelihood_answer"] = ll_result.parsed
            result.details["loglikelihood_correct"] = ll_result.outcome is Outcome.CORRECT
        return result

    def _ll_choices(self, planned: Sequence[tuple[tuple[int, ...], Request]], responses: Sequence[Any]) -> list[str | None]:
        """The displayed letter with the highest (optionally byte-normalised) log-probability per try."""
        out: list[str | None] = []
        for (_, req), resp in zip(planned, responses):
            lps = resp.logprobs
            if not lps or len(lps) != len(req.choices):
                out.append(None)
                continue
            scores = list(lps)
            if self.settings["ll_normalise"] == "bytes":
                scores = [lp / max(1, len(c.encode("utf-8"))) for lp, c in zip(lps, req.choices)]
            best = max(range(len(scores)), key=lambda i: (scores[i], -i))
            out.append(LETTERS[best])
        return out

    def score(
        self,
        question: Question,
        orders: Sequence[Sequence[int]],
        texts: Sequence[str | None],
        ll_choice: Sequence[str | None] | None = None,
    ) -> ItemResult:
        """Majority-vote the tries; `ll_choice` replaces text extraction in log-likelihood scoring."""
        it: ToMBenchItem = question.payload
        n = len(it.options)
        mode = self.settings["extraction"]
        votes: list[str] = []
        trials = []
        for k, (order, text) in enumerate(zip(orders, texts)):
            shown = ll_choice[k] if ll_choice is not None else extract_answer(text, mode, n)
            if shown is None:
                original = None
            else:
                pos = LETTERS.index(shown)
                # A C/D answer on a binary item maps to "" upstream: a vote that is always wrong.
                original = LETTERS[order[pos]] if pos < n else ""
                votes.append(original)
            trials.append({"order": "".join(LETTERS[i] for i in order), "shown": shown, "original": original})
        parse_rate = len(votes) / len(texts) if texts else 0.0
        facets = dict(question.facets)
        if not votes:
            outcome, final = Outcome.UNPARSEABLE, None
        else:
            final = majority(votes)
            outcome = Outcome.CORRECT if final == it.answer else Outcome.INCORRECT
        details = {"trials": trials, "votes": votes, "first_try": trials[0]["original"] if trials else None}
        result = ItemResult(
            benchmark=self.name, qid=question.qid, outcome=outcome, facets=facets, parsed=final, gold=it.answer,
            responses=list(texts), parse_rate=parse_rate, details=details,
        )
        if outcome is not Outcome.CORRECT:
            result.message = self.explain(it, orders, texts, trials, final, outcome)
        return result

    def explain(self, it: ToMBenchItem, orders: Sequence[Sequence[int]], texts: Sequence[str | None], trials: list[dict[str, Any]], final: str | None, outcome: Outcome) -> str:
        """Everything a user needs to judge a failure without opening the data file."""
        story = it.story if len(it.story) <= 400 else it.story[:400] + " [...]"
        lines = [
            f"ToMBench {it.language} {TASK_NAMES.get(it.task, 'extra ability')} / {it.ability} "
            f"({it.file}.jsonl line {it.row}): {outcome.value}",
            f"story: {story}",
            f"question: {it.question}",
            "options (original order):",
            *[f"  {LETTERS[i]}. {opt}" for i, opt in enumerate(it.options)],
            f"gold: {it.answer}. {it.options[LETTERS.index(it.answer)]}",
            f"final answer (majority of {len(texts)} tries, {self.settings['extraction']} extraction): {final if final is not None else 'unparseable'}",
        ]
        for k, (order, text, trial) in enumerate(zip(orders, texts, trials)):
            shown = " ".join(f"{LETTERS[pos]}={LETTERS[i]}" for pos, i in enumerate(order))
            raw = (text or "").strip().replace("\n", " ")
            if len(raw) > 200:
                raw = raw[:200] + " [...]"
            parsed = "unparseable" if trial["shown"] is None else f"{trial['shown']} -> {trial['original'] or 'invalid'}"
            lines.append(f"  try {k + 1} [shown {shown}]: {raw!r} -> {parsed}")
        if it.defect:
            lines.append(f"note: known release defect: {it.defect}")
        return "\n".join(lines)

    # -- metrics ---------------------------------------------------------------------------------
    def metrics(self, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return aggregate(records, self.settings["aggregation"])

    def metric_lines(self, metrics: Mapping[str, Any]) -> list[str]:
        lines = []
        for lang, m in metrics.get("languages", {}).items():
            def pct(v: float | None) -> str:
                return "  n/a" if v is None else f"{100 * v:5.1f}"

            lines.append(
                f"tombench {lang} ({metrics['aggregation']} aggregation): task AVG {pct(m['task_avg'])}"
                f" | ability AVG {pct(m['ability_avg'])} | coherent AVG {pct(m['coherent_avg'])}"
                + ("" if m["complete"] else " (partial selection: AVGs over the tasks present)")
            )
            cells = []
            for task in TASK_ORDER:
                t = m["tasks"].get(task)
                if t is None:
                    continue
                coh = m["coherent"].get(task)
                cells.append(f"{task.upper()} {pct(t['accuracy'])}" + (f"/{pct(coh['accuracy']).strip()}" if coh else ""))
            if cells:
                lines.append("  tasks (accuracy/coherent): " + ", ".join(cells))
            if m.get("generate_vs_loglikelihood_disagreement") is not None:
                lines.append(
                    f"  log-likelihood scoring: accuracy {pct(m['loglikelihood_accuracy'])}, disagrees with generation on "
                    f"{pct(m['generate_vs_loglikelihood_disagreement']).strip()}% of items"
                )
            cats = [f"{c} {pct(v)}" for c, v in m["categories"].items()]
            if cats:
                lines.append("  categories: " + ", ".join(cats))
        return lines


def aggregate(records: Sequence[Mapping[str, Any]], mode: str = "paper") -> dict[str, Any]:
    """The paper's aggregation over result records (dicts), per language.

    `paper` reproduces Tables 2, 3 and 22 (Desire II as the mean of its two raw
    sub-labels, the Desire category over five raw-label groups); `clean` pools
    Desire II and drops FRT's two malformed story blocks from the coherent test.
    Errors are not answers, so they are left out of every denominator.
    """
    out: dict[str, Any] = {"aggregation": mode, "languages": {}}
    by_lang: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        by_lang[r["facets"]["language"]].append(r)
    for lang, recs in sorted(by_lang.items()):
        scored = [r for r in recs if r["outcome"] != "error"]

        def acc(rs: Sequence[Mapping[str, Any]]) -> float | None:
            return sum(r["outcome"] == "correct" for r in rs) / len(rs) if rs else None

        by_task: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        by_ability: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        by_sub: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for r in scored:
            f = r["facets"]
            if f["task"] != "extra":
                by_task[f["task"]].append(r)
            by_ability[f["ability"]].append(r)
            by_sub[f.get("sub_label", f["ability"])].append(r)
        tasks = {t: tally(by_task[t]).to_dict() for t in TASK_ORDER if by_task.get(t)}
        abilities: dict[str, float | None] = {}
        for ability, rs in by_ability.items():
            if mode == "paper" and ability == "Desires influence on actions/emotions":
                parts = [acc(by_sub[s]) for s in ("Desires influence on actions", "Desires influence on emotions (beliefs)") if by_sub.get(s)]
                abilities[ability] = mean(p for p in parts if p is not None)
            else:
                abilities[ability] = acc(rs)
        categories: dict[str, float | None] = {}
        for cat, names in ABILITIES.items():
            if mode == "paper" and cat == "Desire":
                groups = [s for a in names for s in (
                    ("Desires influence on actions", "Desires influence on emotions (beliefs)")
                    if a == "Desires influence on actions/emotions" else (a,)
                )]
                vals = [acc(by_sub[s]) for s in groups if by_sub.get(s)]
            else:
                vals = [abilities[a] for a in names if abilities.get(a) is not None]
            value = mean(v for v in vals if v is not None)
            if value is not None:
                categories[CATEGORIES[cat]] = value
        # Coherent test: a story counts only if every one of its questions was scored.
        stories: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for r in recs:
            if r["facets"].get("story"):
                stories[r["facets"]["story"]].append(r)
        coherent: dict[str, dict[str, Any]] = {}
        story_total: dict[str, int] = defaultdict(int)
        story_pass: dict[str, int] = defaultdict(int)
        for sid, rs in stories.items():
            size = rs[0]["facets"].get("story_size")
            if size is not None and len(rs) != int(size):
                continue
            if any(r["outcome"] == "error" for r in rs):
                continue
            if mode == "clean" and any(r["facets"].get("defect") for r in rs):
                continue
            task = rs[0]["facets"]["task"]
            story_total[task] += 1
            story_pass[task] += all(r["outcome"] == "correct" for r in rs)
        for task in TASK_ORDER:
            if story_total.get(task):
                c = story_pass[task] / story_total[task]
                orig = tasks[task]["accuracy"] if task in tasks else None
                coherent[task] = {"stories": story_total[task], "passed": story_pass[task], "accuracy": c,
                                  "drop": (orig - c) if orig is not None else None}
        both = [r for r in scored if "loglikelihood_answer" in (r.get("details") or {})]
        disagreement = (
            sum(r["parsed"] != r["details"]["loglikelihood_answer"] for r in both) / len(both) if both else None
        )
        task_avg = mean(t["accuracy"] for t in tasks.values() if t["accuracy"] is not None)
        human = {t: HUMAN_TASK_ACCURACY_ZH[t] - v["accuracy"] for t, v in tasks.items() if v["accuracy"] is not None}
        out["languages"][lang] = {
            "n": len(scored),
            "micro_accuracy": acc(scored),
            "tasks": tasks,
            "task_avg": task_avg,
            "abilities": abilities,
            "categories": categories,
            "ability_avg": mean(categories.values()),
            "coherent": coherent,
            "coherent_avg": mean(c["accuracy"] for c in coherent.values()),
            "human_gap": human,
            "generate_vs_loglikelihood_disagreement": disagreement,
            "loglikelihood_accuracy": (sum(bool(r["details"]["loglikelihood_correct"]) for r in both) / len(both)) if both else None,
            "complete": set(tasks) == set(TASK_ORDER) and len(categories) == len(CATEGORIES),
        }
    return out
