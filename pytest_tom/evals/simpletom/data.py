"""The SimpleToM release: four configs (`<config>/test.jsonl`) joined by story id into typed samples, one per question.

The three QA configs hold one question per story (ids `<story>_aware` (the mental-state question), `_action`,
`_judge`), `story-data` one row per story. Severity siblings share their gold text, so everything is keyed by id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomDataError
from pytest_tom.framework import fields
from pytest_tom.framework.checks import distinct_options, read_jsonl
from pytest_tom.framework.release import partial_advice
from pytest_tom.sample import KEEP, Choice, Sample, Story

BENCHMARK = "simpletom"

OFFICIAL_REVISION = "cccd8ae9a4ef7d33b1278443d20ce9725e5461c8"
OFFICIAL_BASE_URL = f"https://huggingface.co/datasets/allenai/SimpleToM/resolve/{OFFICIAL_REVISION}/"
FILE = "test.jsonl"
STORY_CONFIG = "story-data"
QA_CONFIGS = ("mental-state-qa", "behavior-qa", "judgment-qa")
CONFIGS = (*QA_CONFIGS, STORY_CONFIG)
QUESTION_TYPES = ("mental_state", "behavior", "judgment")
CONFIG_TYPE = dict(zip(QA_CONFIGS, QUESTION_TYPES, strict=True))
ID_SUFFIX = {"mental_state": "_aware", "behavior": "_action", "judgment": "_judge"}
"""The release's question-id suffix of each question type (spec 1.3)."""
SAMPLE_SUFFIX = {"mental_state": "ms", "behavior": "behavior", "judgment": "judgment"}
"""Our sample id is f"{story_id}-{SAMPLE_SUFFIX[type]}": the story id stays visible, so the three are one family."""
TYPE_NAMES = {"mental_state": "mental state", "behavior": "behavior", "judgment": "judgment"}

OFFICIAL_ROWS = dict.fromkeys(CONFIGS, 1147)
"""Rows of each config at the pinned revision: 1,147 stories, one question of each type per story (3,441)."""

SCENARIOS = {
    "food_item_in_grocery_store": ("food item in grocery store", 168),
    "inside_reuse_labeled_containers": ("inside reuse labeled containers", 164),
    "inside_containers_for_personal_belongings": ("inside containers for personal belongings", 142),
    "true_property_pretentious_labels": ("true property pretentious labels", 139),
    "provider_info_healthcare": ("provider info healthcare", 130),
    "behind_the_scene_service_industry": ("behind the scene service industry", 119),
    "seller_info_in_second_hand_market": ("seller info in second hand market", 99),
    "unobserved_unethical_actions": ("unobserved unethical actions", 87),
    "locked_devices_accounts": ("locked devices accounts", 62),
    "hidden_body_part_feature": ("hidden body part feature", 37),
}
"""The ten scenarios (release keys), with the paper's name and story count (Table 8; the release agrees)."""
SEVERITIES = {"1": "mild", "2": "base", "3": "high"}
"""`severity_original` as released: 1 = the mild variant, 2 = the seed's key information, 3 = the severe one (spec 1.4)."""


def severity_mark(level: str) -> str:
    """Facet value and mark of a severity level: "sev1", "sev2", "sev3" (as in the release's ids)."""
    return f"sev{level}"


@dataclass(frozen=True, slots=True)
class SimpleToMExtra:
    story_id: str = field(metadata=KEEP)
    question_type: str = field(metadata=KEEP)
    scenario: str = field(metadata=KEEP)
    severity: str = field(metadata=KEEP)  # as released: "1", "2" or "3"
    ms_question: str = ""  # the story's mental-state question, its options and gold (for the reminder)
    ms_choices: tuple[Choice, ...] = ()
    ms_gold: str = ""


SimpleToMSample = Sample[SimpleToMExtra]


@dataclass(frozen=True, slots=True)
class Question:
    """One validated QA record."""

    config: str
    line: int
    story_id: str
    question_type: str
    story: str
    question: str
    choices: tuple[Choice, ...]
    gold: str
    scenario: str


@dataclass(frozen=True, slots=True)
class StoryRow:
    """One validated story-data record."""

    line: int
    story_id: str
    scenario: str
    severity: str
    story: str
    person_x: str
    listed: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # question id -> (question, correct text)


@dataclass
class Release:
    """What one folder holds: stories and questions by id, and the rows read per config (absent: no file)."""

    folder: Path
    stories: dict[str, StoryRow] = field(default_factory=dict)
    questions: dict[tuple[str, str], Question] = field(default_factory=dict)  # by (story id, question type)
    rows: dict[str, int | None] = field(default_factory=dict)


def path_of(folder: Path, config: str) -> Path:
    return folder / config / FILE


def _scenario(rec: Mapping[str, Any], path: Path, line: int) -> str:
    value = fields.text(rec, "scenario_name", path, f"line {line}")
    if value not in SCENARIOS:
        raise TomDataError(f"unknown scenario {value!r} (the release has ten: {', '.join(SCENARIOS)})",
                           path=path, record=f"line {line}", field="scenario_name")
    return value


def parse_question(rec: Mapping[str, Any], config: str, path: Path, line: int) -> Question:
    qtype, where = CONFIG_TYPE[config], f"line {line}"

    def bad(message: str, name: str) -> TomDataError:
        return TomDataError(message, path=path, record=where, field=name)

    rid = fields.text(rec, "id", path, where)
    suffix = ID_SUFFIX[qtype]
    if not rid.endswith(suffix) or len(rid) == len(suffix):
        raise bad(f"id {rid!r} does not end in {suffix!r}, the {config} suffix", "id")
    choices = rec.get("choices")
    if not isinstance(choices, dict):
        raise bad(fields.wrong_type("an object with 'text' and 'label'", choices), "choices")
    texts, labels = choices.get("text"), choices.get("label")
    if not isinstance(texts, list) or len(texts) != 2:
        raise bad(fields.wrong_type("a list of 2 option texts", texts), "choices.text")
    for i, t in enumerate(texts):
        if not isinstance(t, str) or not t.strip():
            raise bad(fields.wrong_type("option text", t), f"choices.text[{i}]")
    if labels != ["A", "B"]:
        raise bad(f"expected labels ['A', 'B'], got {labels!r}", "choices.label")
    gold = rec.get("answerKey")
    if gold not in ("A", "B"):
        raise bad(f"gold {gold!r} is not 'A' or 'B'", "answerKey")
    distinct_options(texts, "AB".index(str(gold)), path, where, ("choices.text[0]", "choices.text[1]"))
    return Question(config, line, rid[: -len(suffix)], qtype, fields.text(rec, "story", path, where),
                    fields.text(rec, "question", path, where), (Choice("A", texts[0]), Choice("B", texts[1])),
                    str(gold), _scenario(rec, path, line))


def parse_story(rec: Mapping[str, Any], path: Path, line: int) -> StoryRow:
    sid = fields.text(rec, "story_id", path, f"line {line}")
    sev = rec.get("severity_original")
    if isinstance(sev, str) and sev.strip().isdigit():
        sev = int(sev)
    if isinstance(sev, bool) or not isinstance(sev, int) or str(sev) not in SEVERITIES:
        raise TomDataError(f"severity {sev!r} is not 1, 2 or 3", path=path, record=f"line {line}",
                           field="severity_original")
    entities = rec.get("entities")
    person = entities.get("Person X") if isinstance(entities, dict) else None
    story = fields.text(rec, "story", path, f"line {line}")
    key_info = rec.get("key_information")
    if isinstance(key_info, str) and key_info.strip() and key_info.strip() not in story:
        raise TomDataError(f"the story does not contain its key_information {key_info.strip()!r:.80}: the story of "
                           "another id?", path=path, record=f"line {line}", field="story")
    return StoryRow(line=line, story_id=sid, scenario=_scenario(rec, path, line), severity=str(sev), story=story,
                    person_x=person if isinstance(person, str) else "", listed=_listed(rec, sid, path, line))


def _listed(rec: Mapping[str, Any], sid: str, path: Path, line: int) -> dict[str, tuple[str, str]]:
    """A story row's `questions` (the release lists its mental-state and behavior ones): each id names this story."""
    out: dict[str, tuple[str, str]] = {}
    listed = rec.get("questions")
    if not isinstance(listed, list):
        return out  # not needed to ask anything; the QA configs hold the questions
    for i, q in enumerate(listed):
        qid = q.get("question_id") if isinstance(q, dict) else None
        if not isinstance(qid, str):
            continue
        if not any(qid == sid + suffix for suffix in ID_SUFFIX.values()):
            raise TomDataError(f"question id {qid!r} is not a question of story {sid!r} (expected {sid!r} + "
                               f"{' or '.join(repr(x) for x in ID_SUFFIX.values())})", path=path,
                               record=f"line {line}", field=f"questions[{i}].question_id")
        question, correct = q.get("question"), q.get("answer_correct")
        if isinstance(question, str) and isinstance(correct, str):
            out[qid] = (question, correct)
    return out


def read_release(folder: Path) -> Release:
    """Read and cross-check every config present in `folder` (absent files are recorded as such, not errors here)."""
    rel = Release(folder)
    story_path = path_of(folder, STORY_CONFIG)
    texts: dict[str, StoryRow] = {}
    if story_path.is_file():
        recs = read_jsonl(story_path)
        rel.rows[STORY_CONFIG] = len(recs)
        for line, rec in recs:
            row = parse_story(rec, story_path, line)
            if row.story_id in rel.stories:
                raise TomDataError(f"story id {row.story_id!r} also on line {rel.stories[row.story_id].line}",
                                   path=story_path, record=f"line {line}", field="story_id")
            twin = texts.setdefault(row.story, row)
            if twin is not row:
                raise TomDataError(f"story {row.story_id!r} has the same text as story {twin.story_id!r} on line "
                                   f"{twin.line}: one story under two ids", path=story_path, record=f"line {line}",
                                   field="story")
            rel.stories[row.story_id] = row
    for config in QA_CONFIGS:
        path = path_of(folder, config)
        if not path.is_file():
            continue
        recs = read_jsonl(path)
        rel.rows[config] = len(recs)
        for line, rec in recs:
            q = parse_question(rec, config, path, line)
            key = (q.story_id, q.question_type)
            if key in rel.questions:
                raise TomDataError(f"id {rec['id']!r} also on line {rel.questions[key].line}", path=path,
                                   record=f"line {line}", field="id")
            _join(rel, q, path)
            rel.questions[key] = q
    return rel


def _join(rel: Release, q: Question, path: Path) -> None:
    """A question must belong to a story of story-data and agree with it on the story text and scenario."""
    if rel.rows.get(STORY_CONFIG) is None:
        return  # reported by the completeness check, which needs story-data for every question

    def bad(message: str, name: str) -> TomDataError:
        return TomDataError(message, path=path, record=f"line {q.line}", field=name)

    row, sd = rel.stories.get(q.story_id), f"{STORY_CONFIG}/{FILE}"
    if row is None:
        raise bad(f"story {q.story_id!r} is not in {sd}", "id")
    if q.story != row.story:
        raise bad(f"story text differs from {sd} line {row.line}", "story")
    if q.scenario != row.scenario:
        raise bad(f"scenario {q.scenario!r} differs from {row.scenario!r} in {sd} line {row.line}", "scenario_name")
    listed = row.listed.get(q.story_id + ID_SUFFIX[q.question_type])
    if listed is None:
        return
    question, correct = listed
    if q.question != question:
        raise bad(f"question differs from the one {sd} line {row.line} lists for this id", "question")
    gold_text = next(c.text for c in q.choices if c.label == q.gold)
    if gold_text != correct:
        raise bad(f"the gold {q.gold} is {gold_text!r:.60}, but {sd} line {row.line} gives {correct!r:.60} as this "
                  "question's correct answer", "answerKey")

PARTIAL_ADVICE = partial_advice("simpletom", fresh="fresh")


def check_whole(rel: Release, *, expect_rows: Mapping[str, int] | None) -> None:
    """One error naming every config of a copy that should be the whole release: missing, short, lacking a question."""
    out: list[tuple[Path, str]] = []
    for config in CONFIGS:
        path, found = path_of(rel.folder, config), rel.rows.get(config)
        if found is None:
            out.append((path, "is missing"))
        elif expect_rows is not None and found != expect_rows[config]:
            more = ("" if found < expect_rows[config]
                    else " (another revision? give its checksums with --tom-set simpletom.sha256)")
            out.append((path, f"has {found} rows, not {expect_rows[config]}{more}"))
    if rel.rows.get(STORY_CONFIG) is not None:
        for config in QA_CONFIGS:
            if rel.rows.get(config) is None:
                continue
            qtype = CONFIG_TYPE[config]
            lacking = [sid for sid in rel.stories if (sid, qtype) not in rel.questions]
            if lacking:
                shown = ", ".join(repr(s) for s in lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
                out.append((path_of(rel.folder, config),
                            f"lacks the {TYPE_NAMES[qtype]} question of {len(lacking)} stories ({shown})"))
    if not out:
        return
    why = "a file missing, emptied or cut short would drop its questions and chains silently"
    if len(out) == 1:
        raise TomDataError(f"the SimpleToM release is incomplete: this file {out[0][1]}; {why}: {PARTIAL_ADVICE}",
                           path=out[0][0])
    listed = "; ".join(f"{p.parent.name}/{p.name} {what}" for p, what in out)
    raise TomDataError(f"the SimpleToM release is incomplete: {listed}; {why}: {PARTIAL_ADVICE}", path=rel.folder)


def samples(rel: Release) -> list[SimpleToMSample]:
    """One sample per question, in story-data order, then mental state, behavior, judgment (needs story-data)."""
    if rel.rows.get(STORY_CONFIG) is None:
        raise TomDataError(
            f"{STORY_CONFIG}/{FILE} is missing: SimpleToM needs it for each story's severity, even in a partial copy",
            path=path_of(rel.folder, STORY_CONFIG))
    out = [to_sample(row, q, rel.questions.get((sid, "mental_state"))) for sid, row in rel.stories.items()
           for qtype in QUESTION_TYPES if (q := rel.questions.get((sid, qtype))) is not None]
    if not out:
        raise TomDataError("no SimpleToM questions in this folder", path=rel.folder)
    return out


def to_sample(row: StoryRow, q: Question, ms: Question | None) -> SimpleToMSample:
    """The sample of one question; `ms` is its story's mental-state question (for the reminder), when present."""
    extra = SimpleToMExtra(row.story_id, q.question_type, row.scenario, row.severity, ms.question if ms else "",
                           ms.choices if ms else (), ms.gold if ms else "")
    sev = severity_mark(row.severity)
    person = row.person_x if row.person_x and row.person_x in q.story else ""
    return Sample(benchmark=BENCHMARK, id=f"{row.story_id}-{SAMPLE_SUFFIX[q.question_type]}", context=Story(q.story),
                  question=q.question, choices=q.choices, gold=q.gold, characters=(person,) if person else (),
                  facets={"question_type": q.question_type, "scenario": row.scenario, "severity": sev,
                          "story": row.story_id},
                  marks=(BENCHMARK, q.question_type, row.scenario, sev), extra=extra,
                  source=f"simpletom/{q.config}/{FILE} line {q.line}")

