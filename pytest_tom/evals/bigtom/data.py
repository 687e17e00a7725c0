"""BigToM's release (`data/bigtom/bigtom.csv`: 200 stories, 19 `;`-separated fields) built into its 25 condition files.

The official evaluator reads `data/conditions/<folder>/stories.csv`, which `generate_conditions.py` builds and the
repository does not ship: rebuilt here with the same `split(".")` arithmetic (spec §2.2), checked against a copy beside
the CSV. Option order is the official `random.seed(0)` shuffle, drawn over the whole file before any selection (§3.1).
"""

from __future__ import annotations

import csv
import io
import itertools
import random
from dataclasses import dataclass
from pathlib import Path

from pytest_tom.errors import TomDataError
from pytest_tom.framework.checks import check_sha256, read_text
from pytest_tom.framework.pinned import PinnedFile
from pytest_tom.framework.release import partial_advice
from pytest_tom.sample import Choice, Sample, Story

FILE, REVISION = "data/bigtom/bigtom.csv", "fe647d680bddb69f738519313bed625f9e93b549"
URL = f"https://raw.githubusercontent.com/cicl-stanford/procedural-evals-tom/{REVISION}/"
PIN = PinnedFile("bigtom", "BigToM", FILE, "github.com/cicl-stanford/procedural-evals-tom", REVISION,
                 "a14884fbff5b61d3fa194ab166764b553ab795fcb1359e69d1282eadf3011a46", "2d1f9e7e0db71805fad5e110ac48e41ddd3e1456")
LINES, FIELDS = 200, 19
VARIABLES = ("forward_belief", "forward_action", "backward_belief")
CONDITIONS = ("true_belief", "false_belief", "true_control", "false_control")
PERCEPT = "1_percept_to_belief_true_belief"
"""The 25th condition: keyed to the aware belief on a story without any event (spec §2.2); out of `core`."""
PARTS = {**{f"{i}_{v}_{c}": (i, v, c) for i in "01" for v in VARIABLES for c in CONDITIONS},
         PERCEPT: ("1", "percept_to_belief", "true_belief")}
"""Condition folder -> (init, variable, condition), in the official order."""
(STORY, AWARE, NOT_AWARE, ACTION_AWARE, ACTION_NOT_AWARE, BELIEF_Q, _DESIRE_Q, ACTION_Q, BELIEF_A, _DESIRE_A, ACTION_A,
 BELIEF_N, _DESIRE_N, ACTION_N, RANDOM, AWARE_RANDOM, NOT_AWARE_RANDOM) = range(17)
LAST = {("forward", "true_belief"): AWARE, ("forward", "false_belief"): NOT_AWARE, ("forward", "true_control"): AWARE_RANDOM,
        ("forward", "false_control"): NOT_AWARE_RANDOM, ("backward", "true_belief"): ACTION_AWARE}
"""The field a story ends with, by (variable's direction, condition); any other: `Action not aware`."""


@dataclass(frozen=True, slots=True)
class BigToMExtra:
    """The condition folder and the 1-based CSV line (= row of every condition file)."""

    folder: str
    line: int


BigToMSample = Sample[BigToMExtra]


def gold_letters(n: int = LINES) -> str:
    """Row i's gold letter: `random.Random(0)`, one shuffle of [true, wrong] per row, in file order (spec §3.1)."""
    rng, pairs = random.Random(0), [[0, 1] for _ in range(n)]
    for pair in pairs:
        rng.shuffle(pair)
    return "".join("ab"[pair[0]] for pair in pairs)


def rows(row: list[str], folder: str) -> tuple[str, str, str, str]:
    """One condition file's row (story, question, true answer, wrong answer) from a CSV line: `generate_conditions.py`."""
    p = row[STORY].split(".")
    if folder == PERCEPT:
        return ".".join(p[:3]) + ".", row[BELIEF_Q], row[BELIEF_A], row[BELIEF_N]
    init, variable, condition = PARTS[folder]
    base = ".".join(p[:3] + p[4:5]) + "." if init == "0" else ".".join(p[:5]) + "."
    ctrl = ".".join(p[:3 + int(init)] + [" " + row[RANDOM]])
    last = row[LAST.get((variable.split("_")[0], condition), ACTION_NOT_AWARE)]
    story = f"{base if condition.endswith('belief') else ctrl} {last}"
    q, aware, unaware = ((row[ACTION_Q], row[ACTION_A], row[ACTION_N]) if variable == "forward_action"
                         else (row[BELIEF_Q], row[BELIEF_A], row[BELIEF_N]))
    return (story, q, aware, unaware) if condition == "true_belief" else (story, q, unaware, aware)


def read_csv(path: Path) -> list[list[str]]:
    """A `;` file's lines as the authors read them (`csv.reader(delimiter=";")`), never split by hand."""
    return list(csv.reader(io.StringIO(read_text(path), newline=""), delimiter=";"))


def check_conditions(lines: list[list[str]], root: Path) -> None:
    """Every condition file present under `root` (`data/conditions/`) equals what the official generator builds."""
    for folder in PARTS:
        if (path := root / folder / "stories.csv").is_file():
            built = itertools.zip_longest(map(tuple, read_csv(path)), (rows(row, folder) for row in lines))
            if bad := next((i for i, (got, want) in enumerate(built, 1) if got != want), 0):
                raise TomDataError(f"differs from the condition the official generate_conditions.py builds from bigtom.csv "
                                   f"(first at row {bad})", path=path)


def samples(lines: list[list[str]], conditions: str) -> list[BigToMSample]:
    """Every item of the chosen conditions, with the official gold letter of its row."""
    gold, out = gold_letters(len(lines)), []
    for folder in (f for f in PARTS if conditions == "all" or f != PERCEPT):
        init, variable, condition = PARTS[folder]
        kind = "control" if condition.endswith("control") else "belief"
        for i, row in enumerate(lines):
            story, question, true, wrong = rows(row, folder)
            a, b = (true, wrong) if gold[i] == "a" else (wrong, true)
            out.append(Sample(
                benchmark="bigtom", id=f"{folder}-{i + 1:03d}", context=Story(story), question=question,
                choices=(Choice("a", a), Choice("b", b)), gold=gold[i], characters=(row[STORY].split(" ", 1)[0],),
                facets={"variable": variable, "condition": condition, "init": init, "kind": kind,
                        "story": str(i + 1), "gold": gold[i], "folder": folder},
                marks=("bigtom", variable, condition, *(("control",) if kind == "control" else ()),
                       "initial_belief_shown" if init == "1" else "initial_belief_hidden"),
                source=f"{FILE} line {i + 1} ({folder})", extra=BigToMExtra(folder, i + 1)))
    return out


def load(path: Path, *, conditions: str, sha256: str, verified: bool, partial: bool) -> list[BigToMSample]:
    """The items of a checked release (§2.1: every line whole); a copy that is not `partial` must be the pinned file whole."""
    for n, row in enumerate(lines := read_csv(path), 1):
        if len(row) != FIELDS:
            raise TomDataError(f"expected {FIELDS} ';'-separated fields, got {len(row)}", path=path, record=f"line {n}")
        if row[STORY].count(".") != 5 or not row[STORY].endswith("."):
            raise TomDataError("the story must hold exactly five '.' and end with one: the official split('.') builds "
                               "the conditions from its five sentences", path=path, record=f"line {n}", field="Story")
    if not lines:
        raise TomDataError("no BigToM stories in this file", path=path)
    if not (verified or partial):
        if not sha256 and len(lines) != LINES:
            raise TomDataError(f"not the whole BigToM release ({len(lines)} of {LINES} stories): "
                               f"{partial_advice('bigtom')}", path=path)
        check_sha256(path, sha256 or PIN.sha256, benchmark="bigtom", given=bool(sha256), partial=False)
    check_conditions(lines, path.parent.parent / "conditions")
    return samples(lines, conditions)
