"""ToMValley's records as typed samples: one per question, with the whole social context it is asked about.

A context (`trial<N>`: a setting, two profiles, a dialogue in 4 to 7 scenarios) has 15n-4 questions. The
official prompt shows them all and `str()`s the stored story, so each sample carries the context's question list
and layout (scenario keys as spelled, dialogue form and grouping); the dialogue's text is `Sample.context`, so a
rename reaches everything the model sees. The release's irregular keys, dialogue forms, 4 to 24 options and
duplicated distractors (kept, as the official code keeps them) are all handled here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_tom.errors import TomDataError
from pytest_tom.sample import KEEP, Choice, Conversation, Sample, Turn

BENCHMARK = "tomvalley"
ITEMS = ("belief", "emotion", "intention", "action")  # in the order the official generator numbers them
QTYPES = ("understanding", "influence", "transformation")  # Tables 3, 4 and 6; transformation = T1 + T2 + T3
SUBTYPES = ("understanding", "influence", "transformation1", "transformation2", "transformation3")
SUBTYPE_NAMES = {
    "understanding": "Understanding-1 (what is the state in scenario s)",
    "influence": "Influence-1 (how one state influences the next in scenario s)",
    "transformation1": "Transformation-1 (whether the state changes from s to s+1, and from what to what)",
    "transformation2": "Transformation-2 (why the state changes from s to s+1)",
    "transformation3": "Transformation-3 (how the state changes across all scenarios)",
}
RELATIONS = (("belief", "emotion"), ("belief&emotion", "intention"), ("intention", "action"))
"""Influence questions by relation; each is counted under its *start* state's item (so there is no action influence)."""
RELATION_ITEM = {"belief": "belief", "belief&emotion": "emotion", "intention": "intention"}
FAMILY = {"type_a_what": "understanding", "type_c_how": "influence", "type_d_whether": "transformation1",
          "type_d_why": "transformation2", "type_d_how": "transformation3"}  # question-id family -> sub-type
_QID = re.compile(r"^(type_a_what|type_c_how|type_d_whether|type_d_why|type_d_how)_([1-9][0-9]*)$")
_SCENARIO_KEY = re.compile(r"^(?:scenario[ _]?)?([1-9][0-9]*)$", re.IGNORECASE)


def questions_per_context(n: int) -> int:
    """4n understanding + 3n influence + 4(n-1) transformation-1 and -2 each + 4 transformation-3."""
    return 15 * n - 4


@dataclass(frozen=True, slots=True)
class ContextQuestion:
    """One question of the context as the official prompt lists it (id, text, lettered options)."""

    qid: str = dataclasses.field(metadata=KEEP)
    question: str
    options: tuple[str, ...]  # as stored, with their "a. " prefixes


@dataclass(frozen=True, slots=True)
class ScenarioLayout:
    """How one scenario's dialogue is stored, so `str()` of the rebuilt dict matches the official prompt."""

    key: str = dataclasses.field(metadata=KEEP)  # as spelled in the file ("scenario 1", "1", "scenario_1"...)
    form: str = dataclasses.field(metadata=KEEP)  # "list" (of speaker dicts), "dict" or "str" ("Name: line")
    groups: tuple[int, ...] = dataclasses.field(metadata=KEEP)  # turns per dict; one group for "dict" and "str"
    background: str = ""  # shown only with tomvalley.backgrounds=true: it states the mental states outright


@dataclass(frozen=True, slots=True)
class ToMValleyExtra:
    """What only ToMValley needs: the context's layout and question list, and this question's coordinates."""

    context_id: str = dataclasses.field(metadata=KEEP)
    qid: str = dataclasses.field(metadata=KEEP)
    subtype: str = dataclasses.field(metadata=KEEP)
    item: str = dataclasses.field(metadata=KEEP)
    scenario: int  # of an understanding or influence question, the first of a T1/T2 span; 0 for T3
    scenario_count: int
    characters_information: str
    scenarios: tuple[ScenarioLayout, ...]
    questions: tuple[ContextQuestion, ...]  # every question of the context, in file order
    relation: str = dataclasses.field(default="", metadata=KEEP)  # "belief->emotion" etc. (influence questions)


ToMValleySample = Sample[ToMValleyExtra]


def _speaker_dict(value: Any, where: str) -> list[Turn]:
    if not isinstance(value, dict) or not value:
        raise TomDataError(f"{where}: expected a non-empty {{speaker: utterance}} object, got {type(value).__name__}")
    for speaker, text in value.items():
        if not isinstance(text, str):
            raise TomDataError(f"{where}: the utterance of {speaker!r} is {type(text).__name__}, expected a string")
    return [Turn(str(speaker), text) for speaker, text in value.items()]


def parse_dialogue(value: Any, where: str) -> tuple[str, tuple[int, ...], list[Turn]]:
    """The dialogue's form, its grouping and its turns."""
    if isinstance(value, list):
        turns: list[Turn] = []
        groups = []
        for i, element in enumerate(value):
            got = _speaker_dict(element, f"{where}[{i}]")
            groups.append(len(got))
            turns.extend(got)
        if not turns:
            raise TomDataError(f"{where}: the dialogue is empty")
        return "list", tuple(groups), turns
    if isinstance(value, dict):
        got = _speaker_dict(value, where)
        return "dict", (len(got),), got
    if isinstance(value, str) and value.strip():
        conv = Conversation.parse(value)
        return "str", (len(conv.turns),), list(conv.turns)
    raise TomDataError(f"{where}: the dialogue is {type(value).__name__}, expected a list of speaker objects, an "
                       "object or a string")


def classify(qid: str, n: int, where: str) -> tuple[str, str, int, str]:
    """(sub-type, item, scenario, relation) of a question id in a context of `n` scenarios, as the generator numbers them."""
    m = _QID.match(qid)
    if not m:
        raise TomDataError(f"{where}: question id {qid!r} is not one of the official families ({', '.join(FAMILY)})")
    subtype, k = FAMILY[m.group(1)], int(m.group(2)) - 1
    size, what = {"understanding": (4 * n, f"understanding questions of {n} scenarios"),
                  "influence": (3 * n, f"influence questions of {n} scenarios"),
                  "transformation3": (4, "transformation-3 questions")}.get(
        subtype, (4 * (n - 1), f"{subtype} questions of {n} scenarios"))
    if k >= size:
        raise TomDataError(f"{where}: {qid} is beyond the {size} {what}")
    if subtype == "understanding":
        return subtype, ITEMS[k // n], k % n + 1, ""
    if subtype == "influence":
        start, target = RELATIONS[k // n]
        return subtype, RELATION_ITEM[start], k % n + 1, f"{start}->{target}"
    if subtype == "transformation3":
        return subtype, ITEMS[k], 0, ""
    return subtype, ITEMS[k // (n - 1)], k % (n - 1) + 1, ""


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise TomDataError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def letter(i: int) -> str:
    return chr(ord("a") + i)


def context_samples(context_id: str, record: Mapping[str, Any], source: str) -> list[ToMValleySample]:
    """All samples of one context (`{"stage": story.json, "question": question_new.json}`), in file order."""
    where = f"{source} context {context_id}"
    stage, questions = record.get("stage"), record.get("question")
    if not isinstance(stage, dict):
        raise TomDataError(f"{where}: field 'stage' (the story) is missing or not an object")
    if not isinstance(questions, dict) or not questions:
        raise TomDataError(f"{where}: field 'question' is missing, empty or not an object")
    main = _text(stage.get("main character"), f"{where} field 'stage.main character'")
    info = _text(stage.get("characters information"), f"{where} field 'stage.characters information'")
    story = stage.get("story")
    if not isinstance(story, dict) or not story:
        raise TomDataError(f"{where}: field 'stage.story' is missing or not an object of scenarios")
    layouts: list[ScenarioLayout] = []
    turns: list[Turn] = []
    numbers = []
    for key, scen in story.items():
        w = f"{where} field 'stage.story.{key}'"
        if not (m := _SCENARIO_KEY.match(key.strip())):
            raise TomDataError(f"{w}: scenario key {key!r} is not 'scenario N', 'scenario_N', 'scenarioN' or 'N'")
        numbers.append(int(m.group(1)))
        if not isinstance(scen, dict) or "dialogue" not in scen:
            raise TomDataError(f"{w}: expected an object with a 'dialogue'")
        extra_keys = sorted(set(scen) - {"background", "dialogue"})
        if extra_keys:
            raise TomDataError(f"{w}: unexpected field {extra_keys[0]!r} (only 'background' and 'dialogue' are known)")
        form, groups, got = parse_dialogue(scen["dialogue"], f"{w}.dialogue")
        background = scen.get("background", "")
        layouts.append(ScenarioLayout(key, form, groups, _text(background, f"{w}.background")))
        turns.extend(got)
    n = len(layouts)
    if sorted(numbers) != list(range(1, n + 1)):
        raise TomDataError(f"{where}: field 'stage.story' numbers its scenarios {numbers}, expected 1..{n} once each")
    declared = stage.get("scenario numbers")
    if declared is not None and declared != n:
        raise TomDataError(f"{where}: field 'stage.scenario numbers' says {declared!r} but the story has {n} scenarios")
    expected = questions_per_context(n)
    if len(questions) != expected:
        raise TomDataError(f"{where}: field 'question' has {len(questions)} questions; a context of {n} scenarios has "
                           f"{expected} (incomplete or damaged copy)")
    parsed: list[tuple[ContextQuestion, str]] = []
    for qid, q in questions.items():
        w = f"{where} question {qid}"
        if not isinstance(q, dict):
            raise TomDataError(f"{w}: expected an object")
        text = _text(q.get("question"), f"{w} field 'question'")
        options = q.get("options")
        if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) for o in options):
            raise TomDataError(f"{w} field 'options': expected a list of at least two strings")
        for i, o in enumerate(options):
            if not o.startswith(f"{letter(i)}. "):
                raise TomDataError(f"{w} field 'options'[{i}]: {o[:40]!r} does not start with '{letter(i)}. '")
        gold = _text(q.get("true answer"), f"{w} field 'true answer'")
        if gold not in {letter(i) for i in range(len(options))}:
            raise TomDataError(f"{w} field 'true answer': {gold!r} is not one of the letters a-{letter(len(options) - 1)}")
        parsed.append((ContextQuestion(str(qid), text, tuple(options)), gold))
    context, scenarios, listed = Conversation(tuple(turns)), tuple(layouts), tuple(cq for cq, _ in parsed)
    samples = []
    for cq, gold in parsed:
        subtype, item, scenario, relation = classify(cq.qid, n, f"{where} question {cq.qid}")
        extra = ToMValleyExtra(context_id, cq.qid, subtype, item, scenario, n, info, scenarios, listed, relation)
        samples.append(make_sample(context_id, cq, gold, extra, context, main, source))
    return samples


def make_sample(context_id: str, cq: ContextQuestion, gold: str, extra: ToMValleyExtra, context: Conversation,
                main: str, source: str) -> ToMValleySample:
    qtype = "transformation" if extra.subtype.startswith("transformation") else extra.subtype
    # where: the scenario of U/I questions ("3"), the span of transformations ("2-3", "1-5")
    if extra.subtype in ("understanding", "influence"):
        facet, value = "scenario", str(extra.scenario)
    elif extra.subtype == "transformation3":
        facet, value = "span", f"1-{extra.scenario_count}"
    else:
        facet, value = "span", f"{extra.scenario}-{extra.scenario + 1}"
    marks = [BENCHMARK, extra.item, qtype, f"scenario{value}" if facet == "scenario" else "span" + value.replace("-", "_")]
    if qtype == "transformation":
        marks.insert(3, extra.subtype)
    facets = {"context": context_id, "item": extra.item, "question_type": qtype, "subtype": extra.subtype, facet: value}
    if extra.relation:
        facets["relation"] = extra.relation
    # The speakers' first names: renaming one also renames it inside the full name ("Angela Hwang") wherever it is.
    speakers = context.speakers or (main,)
    return Sample(benchmark=BENCHMARK, id=f"{context_id}-{cq.qid}", context=context, question=cq.question,
                  choices=tuple(Choice(letter(i), o[3:]) for i, o in enumerate(cq.options)), gold=gold,
                  characters=speakers, facets=facets, marks=tuple(marks), extra=extra, source=source)

