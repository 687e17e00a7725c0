"""The ToMATO release: its four files, Table 8's counts, and release records as typed samples.

Options keep their released order (the gold position was drawn when the data was built). False-belief questions
are a subset of the second-order ones (paper App. A): a first-order false-belief record is broken.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomDataError
from pytest_tom.framework import fields
from pytest_tom.framework.checks import distinct_options, read_json
from pytest_tom.sample import KEEP, Choice, Conversation, Sample

BENCHMARK = "tomato"

OFFICIAL_REVISION = "b8599487e8170322fcbcfb0573fb83a11181b0eb"
OFFICIAL_BASE_URL = f"https://raw.githubusercontent.com/nttmdlab-nlp/ToMATO/{OFFICIAL_REVISION}/dataset/"
FOLDER = "dataset"

SUBSETS: Mapping[str, str] = {  # `subset` setting -> release file (dataset/README.md)
    "all": "tomato.json", "first": "tomato_first.json", "second": "tomato_second.json", "fb": "tomato_fb.json"}
OFFICIAL_GIT_BLOBS: Mapping[str, str] = {
    "tomato.json": "204945827009772ccf0b7e6f1ac21c9ea577b60d",
    "tomato_first.json": "583aa3a5a7b19332e1461c32c431c49dd7868ee7",
    "tomato_second.json": "f43eec7ad8a665969058e1cc9ca73d1cde3ffbd0",
    "tomato_fb.json": "026caf9e88856e3ea42f9514951521392365512f",
}
"""Git blob ids at the pinned revision: the one checksum published for every file (it pins the bytes exactly)."""
OFFICIAL_SHA256: Mapping[str, str] = {  # of the files whose bytes this project has seen at the pinned revision
    "tomato_fb.json": "cecd157bccd775051119dd1022111fdceef2333ddb3d5246ef0030b018433cf4"}

MENTAL_STATES = ("belief", "intention", "desire", "emotion", "knowledge")
ORDERS: Mapping[int, str] = {1: "first", 2: "second"}
FACTORS: Mapping[str, str] = {  # the `big_five` field's factor names -> facet and mark stems
    "Openness to Experience": "openness", "Conscientiousness": "conscientiousness", "Extraversion": "extraversion",
    "Agreeableness": "agreeableness", "Neuroticism": "neuroticism"}
FACTOR_KEYS = tuple(FACTORS.values())
LEVELS = ("high", "low")
LETTERS = "ABCD"

TABLE8: Mapping[str, Mapping[str, int]] = {
    "first": {"belief": 551, "intention": 595, "desire": 453, "emotion": 495, "knowledge": 582},
    "second": {"belief": 558, "intention": 515, "desire": 572, "emotion": 501, "knowledge": 579},
    "fb": {"belief": 237, "intention": 122, "desire": 158, "emotion": 127, "knowledge": 162},
}
"""Questions per mental state (paper Table 8): 2,676 first-order, 2,725 second-order, 806 false-belief (of the second)."""


@dataclass(frozen=True, slots=True)
class ToMATOExtra:
    """What only ToMATO needs about a question: where it comes from and how the paper splits it."""

    file: str = field(metadata=KEEP)
    record: int  # 0-based position in the file's JSON list
    q_id: str = field(metadata=KEEP)
    u_id: str = field(metadata=KEEP)
    mental_state: str = field(metadata=KEEP)
    order: int
    false_belief: bool
    big_five: Mapping[str, str] = field(metadata=KEEP)  # factor key -> "high"/"low", of the speaker asked about
    environment: str = field(metadata=KEEP)
    agents: tuple[str, ...] = field(metadata=KEEP)
    conversation_id: str = field(metadata=KEEP)


ToMATOSample = Sample[ToMATOExtra]


def parse_big_five(text: str) -> dict[str, str]:
    """`"Openness to Experience - High; ...; Neuroticism - Low"` -> {"openness": "high", ...}; ValueError if not all five."""
    levels: dict[str, str] = {}
    for part in text.split(";"):
        name, sep, level = part.strip().rpartition(" - ")
        key = FACTORS.get(name.strip())
        value = level.strip().lower()
        if not sep or key is None or value not in LEVELS:
            raise ValueError(f"cannot read {part.strip()!r} as '<factor> - High|Low'")
        if key in levels:
            raise ValueError(f"{name.strip()!r} is given twice")
        levels[key] = value
    missing = [name for name, key in FACTORS.items() if key not in levels]
    if missing:
        raise ValueError(f"no level for {', '.join(missing)}")
    return {key: levels[key] for key in FACTOR_KEYS}


def pattern(levels: Mapping[str, str]) -> str:
    """The compact Big-Five pattern of Table 7, e.g. "O+C-E+A-N-" (+ high, - low)."""
    return "".join(f"{k[0].upper()}{'+' if levels[k] == 'high' else '-'}" for k in FACTOR_KEYS)


def conversation_id(environment: str, agents: Sequence[str], mental_state: str) -> str:
    """One generated conversation: a SOTOPIA (environment, agent pair) combo talking about one mental state (spec 2.2)."""
    digest = hashlib.sha256("|".join((environment, *agents, mental_state)).encode()).hexdigest()
    return f"{mental_state}-{digest[:10]}"


def read_record(rec: Any, path: Path, index: int) -> ToMATOSample:
    """One release record as a sample; every error names the file, the record (index and q_id) and the field."""
    where = f"{index}"
    if not isinstance(rec, dict):
        raise TomDataError(f"expected a JSON object, got {type(rec).__name__}", path=path, record=where)
    if isinstance(rec.get("q_id"), str) and rec["q_id"]:
        where = f"{index} (q_id {rec['q_id']!r})"

    def bad(message: str, name: str) -> TomDataError:
        return TomDataError(message, path=path, record=where, field=name)

    q_id = fields.text(rec, "q_id", path, where)
    options = tuple(fields.text(rec, f"a{i}", path, where) for i in range(4))
    gold = fields.integer(rec, "a_idx", path, where, range(4))
    if rec.get("a_str") != options[gold]:
        raise bad(f"a_str is not option a{gold} (a_idx {gold}): the gold is ambiguous", "a_str")
    distinct_options(options, gold, path, where, ("a0", "a1", "a2", "a3"))
    state = fields.text(rec, "mental_state", path, where)
    if state not in MENTAL_STATES:
        raise bad(f"unknown mental state {state!r} (expected {', '.join(MENTAL_STATES)})", "mental_state")
    order = fields.integer(rec, "order", path, where, (1, 2))
    fb = fields.flag(rec, "false_belief", path, where)
    if fb and order != 2:
        raise bad("a false-belief question must be second-order (FB is a subset of second order)", "order")
    try:
        levels = parse_big_five(fields.text(rec, "big_five", path, where))
    except ValueError as exc:
        raise bad(str(exc), "big_five") from None
    conversation = fields.text(rec, "conversation", path, where)
    question = fields.text(rec, "q", path, where)
    env = fields.text(rec, "sotopia_environment", path, where)
    agents = rec.get("sotopia_agents")
    if not isinstance(agents, list) or len(agents) != 2 or not all(isinstance(a, str) and a for a in agents):
        raise bad(f"expected a list of two agent ids, got {agents!r:.60}", "sotopia_agents")
    u_id = rec.get("u_id")
    if not isinstance(u_id, (str, int)) or isinstance(u_id, bool):
        raise bad(f"expected an utterance id, got {u_id!r:.60}", "u_id")
    extra = ToMATOExtra(path.name, index, q_id, str(u_id), state, order, fb, levels, env, tuple(agents),
                        conversation_id(env, agents, state))
    context = Conversation.parse(conversation)
    if len(context.speakers) < 2:
        found = f"only {context.speakers[0]!r} speaks" if context.speakers else "no line is a 'Name: utterance' turn"
        raise bad(f"a ToMATO conversation is between two agents, but {found}", "conversation")
    return to_sample(extra, context, question, options, LETTERS[gold])


def to_sample(extra: ToMATOExtra, context: Conversation, question: str, options: Sequence[str],
              gold: str) -> ToMATOSample:
    """The sample of one record: facets for the paper's cells and splits, marks for `-m` selection."""
    order = ORDERS[extra.order]
    facets = {"mental_state": extra.mental_state, "order": order, "false_belief": str(extra.false_belief).lower(),
              **extra.big_five, "big_five": pattern(extra.big_five), "conversation": extra.conversation_id}
    marks = (BENCHMARK, extra.mental_state, f"{order}_order", *(("false_belief",) if extra.false_belief else ()),
             *(f"{k}_{v}" for k, v in extra.big_five.items()))
    speakers = context.speakers
    characters = tuple(dict.fromkeys([*speakers, *(s.split()[0] for s in speakers if " " in s)]))
    return Sample(benchmark=BENCHMARK, id=extra.q_id, context=context, question=question,
                  choices=tuple(Choice(letter, text) for letter, text in zip(LETTERS, options, strict=True)), gold=gold,
                  characters=characters, facets=facets, marks=marks, extra=extra,
                  source=f"tomato/{FOLDER}/{extra.file} record {extra.record} (q_id {extra.q_id})")


def read_file(path: Path) -> list[ToMATOSample]:
    """Every record of one release file, in file order; q_ids must be unique (they are the item ids)."""
    raw = read_json(path)
    if not isinstance(raw, list):
        raise TomDataError(f"expected a JSON list of question records, got {type(raw).__name__}", path=path)
    out: list[ToMATOSample] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(raw):
        s = read_record(rec, path, i)
        if s.id in seen:
            raise TomDataError(f"q_id {s.id!r} already used by record {seen[s.id]}", path=path, record=str(i),
                               field="q_id")
        seen[s.id] = i
        out.append(s)
    return out


def check_subset(samples: Sequence[ToMATOSample], subset: str, path: Path) -> None:
    """A file's records belong to its subset: first-order in tomato_first.json, false-belief in tomato_fb.json..."""
    for s in samples:
        x = s.extra
        wrong = ((subset == "first" and x.order != 1) or (subset == "second" and x.order != 2)
                 or (subset == "fb" and not x.false_belief))
        if wrong:
            what = {"first": "first-order", "second": "second-order", "fb": "false-belief"}[subset]
            raise TomDataError(f"{path.name} holds {what} questions only; this one is order {x.order}, false_belief "
                               f"{str(x.false_belief).lower()}", path=path, record=f"{x.record} (q_id {x.q_id!r})",
                               field="false_belief" if subset == "fb" else "order")


def counts(samples: Sequence[ToMATOSample]) -> dict[str, dict[str, int]]:
    """Questions per mental state in Table 8's rows (first, second, fb), for the completeness check."""
    out: dict[str, dict[str, int]] = {row: dict.fromkeys(MENTAL_STATES, 0) for row in TABLE8}
    for s in samples:
        out[ORDERS[s.extra.order]][s.extra.mental_state] += 1
        if s.extra.false_belief:
            out["fb"][s.extra.mental_state] += 1
    return out


def expected_counts(subset: str) -> dict[str, dict[str, int]]:
    """Table 8's counts as the file of `subset` holds them (tomato_fb.json has no non-FB second-order questions)."""
    zero = dict.fromkeys(MENTAL_STATES, 0)
    second = {"all": TABLE8["second"], "first": zero, "second": TABLE8["second"]}.get(subset, TABLE8["fb"])
    return {"first": dict(TABLE8["first"] if subset in ("all", "first") else zero), "second": dict(second),
            "fb": dict(zero if subset == "first" else TABLE8["fb"])}
