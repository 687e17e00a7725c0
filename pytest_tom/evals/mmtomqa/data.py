"""MMToM-QA's text-only release (`Benchmark/questions.json`, JSON Lines) read into checked samples, and its prompt.

Each record's `question` is split into the scene and actions (the context), the question sentence and the two options,
then rendered back and compared byte for byte, so what the harness sends is the release's text. Every record is
checked for the spec's shapes and gold invariants (§5.1: 4-6); a copy that is not `partial` must also be the pinned
file whole (checksum, 600 records, the type counts). Errors name the file, the line and the field.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomDataError
from pytest_tom.framework import fields
from pytest_tom.framework.checks import check_sha256, read_jsonl
from pytest_tom.framework.pinned import PinnedFile
from pytest_tom.framework.release import partial_advice
from pytest_tom.sample import KEEP, Choice, Sample, Story

FILE = "Benchmark/questions.json"
REVISION = "cba94f39369828bf6f6173d3b8fd36f128fa0926"
URL = f"https://raw.githubusercontent.com/chuanyangjin/MMToM-QA/{REVISION}/"
SHA256 = "54a6b908f793f660554f31bc60ae04d58c289f057229f50f74ed696589c45ede"
GIT_BLOB = "5dd480e848535aebbca775779c340258827e174b"
"""The file at REVISION (spec §2.1): its sha256 and the blob id the repository's tree names it by."""
PIN = PinnedFile("mmtomqa", "MMToM-QA", FILE, "github.com/chuanyangjin/MMToM-QA", REVISION, SHA256, GIT_BLOB)
TYPES = {"1.1": ("belief", "true_belief", 100), "1.2": ("belief", "false_belief", 100),
         "1.3": ("belief", "belief_tracking", 100), "2.1": ("goal", "goal_true_belief", 75),
         "2.2": ("goal", "goal_false_belief", 75), "2.3": ("goal", "goal_updated_belief", 75),
         "2.4": ("goal", "goal_future_actions", 75)}
"""question_type -> (family, mark, records in the release) (spec §2.4)."""
TERM = {"1.1": "short_term", "1.2": "short_term", "1.3": "long_term"}
KEYS = ("question", "answer", "question_type", "test", "episode", "start_time", "end_time", "answer_list")
EPISODES = 134
ASK = " Please respond with either a or b."
_TAIL = re.compile(r"(.*?) \(a\) (.*?) \(b\) (.*?) Please respond with either a or b\.", re.S)
_BELIEF = re.compile(r"(\w+) thinks that the (.+?) is (not )?inside the (.+)\.")
_GOAL = re.compile(r"(\w+) has been trying to get (?:a |an )?(.+)\.")
_PREMISE = re.compile(r"If (\w+) think there isn't (?:a |an )?(.+?) inside the (.+?), which.*", re.S)
ADVICE = partial_advice("mmtomqa")


@dataclass(frozen=True, slots=True)
class MMToMExtra:
    """Where the record sits in the file read (`line`, 1-based) and its clip (video-only fields, kept for the id)."""

    qtype: str = field(metadata=KEEP)
    line: int
    episode: int
    start_time: int
    end_time: int


MMToMSample = Sample[MMToMExtra]


def render(sample: MMToMSample) -> str:
    """The record's `question` text, rebuilt from the sample's fields (the loader checks it equals the release's)."""
    a, b = (c.text for c in sample.choices)
    return f"{sample.context.render()}\nQuestion: {sample.question} (a) {a} (b) {b}{ASK}"


def _options(qtype: str, sentence: str, a: str, b: str, gold: str) -> str | None:
    """Why the options break the type's form or gold invariant (spec §5.1: 5, 6), or None when they hold."""
    if TYPES[qtype][0] == "belief":
        ma, mb = _BELIEF.fullmatch(a), _BELIEF.fullmatch(b)
        if not ma or not mb or ma.group(1, 2, 4) != mb.group(1, 2, 4) or bool(ma[3]) == bool(mb[3]):
            return "expected two options '<N> thinks that the <O> is [not ]inside the <C>.' differing only in 'not'"
        inside, want = "a" if not ma[3] else "b", "is not inside" if qtype == "1.3" else "is inside"
        return None if (gold == inside) == (qtype != "1.3") else f"type {qtype}'s gold must be the '{want}' option"
    ga, gb, premise = _GOAL.fullmatch(a), _GOAL.fullmatch(b), _PREMISE.fullmatch(sentence)
    if not ga or not gb or ga[1] != gb[1] or ga[2] == gb[2]:
        return "expected two options '<N> has been trying to get a <O>.' with different objects"
    if (premise is not None) != (qtype == "2.1"):
        return "only type 2.1 asks 'If <N> think there isn't a <O> inside the <C>, which ...'"
    wrong = premise is not None and (premise[2] not in (ga[2], gb[2]) or (ga if gold == "a" else gb)[2] == premise[2])
    return "type 2.1's gold must be the option whose object is not the premise's" if wrong else None


def parse(rec: Mapping[str, Any], path: Path, line: int) -> MMToMSample:
    """One record as a sample, after the checks of spec §5.1 (3-6) that hold record by record."""
    where = f"line {line}"
    bad = partial(TomDataError, path=path, record=where)
    fields.keys(rec, KEYS, path, where)
    text = fields.text(rec, "question", path, where)
    gold = fields.one_of(rec, "answer", path, where, ("a", "b"))
    kind = rec["question_type"]
    qtype = f"{kind:.1f}" if isinstance(kind, float | int) and not isinstance(kind, bool) else ""
    if qtype not in TYPES or float(qtype) != kind:  # 1.15 is no type, though it prints as 1.1
        raise bad(f"expected one of {', '.join(TYPES)}, got {fields.shown(kind)}", field="question_type")
    for key, want in (("test", ["init_graph", "actions"]), ("answer_list", ["a", "b"])):
        if rec[key] != want:
            raise bad(f"expected {want}, got {fields.shown(rec[key])}", field=key)
    episode, start, end = (fields.integer(rec, k, path, where) for k in ("episode", "start_time", "end_time"))
    if not 0 <= start <= end:
        raise bad(f"expected 0 <= start_time <= end_time, got {start} and {end}", field="end_time")
    context, _, tail = text.partition("\nQuestion: ")
    name = re.search(r"\nActions taken by (\w+): ", context)
    shape = _TAIL.fullmatch(tail)
    if (not text.startswith("What's inside the apartment: ") or not shape or name is None or "\nQuestion: " in tail
            or context.count("\nActions taken by ") != 1):
        raise bad("not the release's text shape: 'What's inside the apartment: ...', one '\\nActions taken by <N>: ', "
                  "one '\\nQuestion: ', then '(a) ... (b) ... Please respond with either a or b.'", field="question")
    if why := _options(qtype, shape[1], shape[2], shape[3], gold):
        raise bad(why, field="question")
    family, mark, _ = TYPES[qtype]
    sample = Sample(
        benchmark="mmtomqa", id=f"{qtype}-e{episode}-t{end}", context=Story(context), question=shape[1],
        choices=(Choice("a", shape[2]), Choice("b", shape[3])), gold=gold, characters=(name[1],),
        facets={"type": qtype, "family": family, "episode": str(episode), "line": str(line)},
        marks=("mmtomqa", family, mark, *((TERM[qtype],) if qtype in TERM else ())), source=f"{FILE} line {line}",
        extra=MMToMExtra(qtype, line, episode, start, end))
    if render(sample) != text:
        raise bad("the text does not render back byte for byte (spec §2.3)", field="question")
    return sample


def load(path: Path, *, sha256: str, verified: bool, partial: bool) -> list[MMToMSample]:
    """Every record of the file, checked; a local copy that is not `partial` must be the whole pinned release."""
    samples, seen, texts = [], dict[str, int](), dict[str, int]()
    for line, rec in read_jsonl(path):
        s = parse(rec, path, line)
        if (twin := seen.setdefault(s.id, line)) != line or (twin := texts.setdefault(render(s), line)) != line:
            raise TomDataError(f"the same (question_type, episode, end_time) or text as line {twin}", path=path,
                               record=f"line {line}", field="question")
        samples.append(s)
    if not samples:
        raise TomDataError("no MMToM-QA records in this file", path=path)
    counts = Counter(s.extra.qtype for s in samples)  # spec §5.1 (2, 3): what differs in a copy cut short or reordered
    wrong = [f"type {t}: {counts[t]} of {n}" for t, (_, _, n) in TYPES.items() if counts[t] != n]
    wrong += [f"line {s.extra.line} is type {s.extra.qtype}" for s in samples
              if (s.extra.line <= 300) != (TYPES[s.extra.qtype][0] == "belief")][:1]
    if (episodes := len({s.extra.episode for s in samples})) != EPISODES:
        wrong.append(f"{episodes} episodes, not {EPISODES}")
    if not (verified or partial):  # a user's sha256 pins another revision: its counts may differ, its checksum not
        if wrong and not sha256:
            raise TomDataError(f"not the whole MMToM-QA release ({len(samples)} records; {'; '.join(wrong)}): {ADVICE}",
                               path=path)
        check_sha256(path, sha256 or SHA256, benchmark="mmtomqa", given=bool(sha256), partial=False)
    return samples
