"""BigToM's loader: the 25 conditions rebuilt from the release CSV as `generate_conditions.py` builds them, the official
option order, the whole-release checks, a `data/conditions/` copy checked, and the pinned download.

Runs on the project's fixture (fixtures/bigtom/: 4 invented stories in the release format, see its make_fixture.py),
read back here with plain `csv` so a loader bug cannot hide behind itself.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pytest_tom.errors import TomDataError
from pytest_tom.evals.bigtom import BigToM
from pytest_tom.evals.bigtom.data import FILE, PARTS, PERCEPT, gold_letters, rows
from pytest_tom.framework.base import DataSource

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
RAW = FIXTURES / "bigtom" / FILE
LINES = list(csv.reader(RAW.open(newline=""), delimiter=";"))
GOLD = ("aabaaaaaabbabbababbaabaaabaaabbbabaababbbbbabbaabaababaabaababbbbaabbbbbbaabbaaaaababaabbbabbabaabbbbbbbbbbababbb"
        "bbbabbbababbbaaabbabbabaaabbbbbaababbaaaaaabbabababbaaaabaaabbbabbbaaabaabbababaabbaaaa")
"""Spec §3.1's 200 gold letters (96 a, 104 b)."""


def load(root: Path = FIXTURES, **settings: object) -> list:
    return BigToM({"partial": True, **settings}).load(DataSource(root, False, root / ".cache"))


def write(tmp_path: Path, lines: list[list[str]]) -> Path:
    path = tmp_path / "bigtom" / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        csv.writer(f, delimiter=";").writerows(lines)
    return tmp_path


def test_the_gold_letters_are_the_official_seed_0_shuffle_over_the_whole_file() -> None:
    assert gold_letters() == GOLD and Counter(GOLD) == {"a": 96, "b": 104} and GOLD[:100].count("a") == 50


def test_the_core_conditions_give_24_items_per_story_with_ids_marks_and_facets() -> None:
    items = load()
    assert len(items) == 24 * 4 and len({s.id for s in items}) == 96
    assert items[0].id == "0_forward_belief_true_belief-001" and items[-1].id == "1_backward_belief_false_control-004"
    s = next(s for s in items if s.id == "1_forward_belief_false_belief-002")
    assert s.gold == GOLD[1] and s.facets == {"variable": "forward_belief", "condition": "false_belief", "init": "1",
                                              "kind": "belief", "story": "2", "gold": GOLD[1],
                                              "folder": "1_forward_belief_false_belief"}
    assert s.marks == ("bigtom", "forward_belief", "false_belief", "initial_belief_shown")
    assert s.choice(s.gold).text == LINES[1][11]  # the not-aware belief is the FB key
    control = next(s for s in items if s.id == "0_forward_action_true_control-003")
    assert "control" in control.marks and "initial_belief_hidden" in control.marks
    assert control.choice(control.gold).text == LINES[2][13]
    assert len(load(conditions="all")) == 25 * 4


def test_stories_follow_the_official_split_arithmetic_with_the_trailing_space_kept() -> None:
    p = LINES[1][0].split(".")
    by = {s.id: s for s in load(conditions="all")}
    assert by["1_forward_belief_true_belief-002"].context.render() == LINES[1][0] + " " + LINES[1][1]
    assert by["0_forward_belief_true_belief-002"].context.render() == ".".join(p[:3] + p[4:5]) + ". " + LINES[1][1]
    assert by["0_forward_action_false_control-002"].context.render() == ".".join(p[:3]) + ". " + LINES[1][14] + " " + LINES[1][16]
    assert by["1_backward_belief_true_belief-002"].context.render().endswith(LINES[1][3]) and LINES[1][3].endswith(". ")
    assert by["1_backward_belief_true_control-002"].context.render() == by["1_backward_belief_false_control-002"].context.render()
    percept = by[f"{PERCEPT}-002"]
    assert percept.context.render() == ".".join(p[:3]) + "." and percept.choice(percept.gold).text == LINES[1][8]


def test_a_story_without_five_periods_or_a_short_line_is_named(tmp_path: Path) -> None:
    bad = [list(r) for r in LINES]
    bad[2][0] = bad[2][0].replace("works in a bar.", "works in a bar, e.g. a pub.")
    with pytest.raises(TomDataError, match=r"line 3.*five '\.'"):
        load(write(tmp_path / "a", bad))
    with pytest.raises(TomDataError, match="line 4.*expected 19"):
        load(write(tmp_path / "b", [*LINES[:3], LINES[3][:18]]))


def test_a_local_copy_must_be_the_whole_pinned_release_unless_partial(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match="not the whole BigToM release .4 of 200"):
        load(partial=False)
    with pytest.raises(TomDataError, match="sha256"):
        load(write(tmp_path, LINES * 50), partial=False)
    sha = hashlib.sha256(RAW.read_bytes()).hexdigest()
    assert len(load(partial=False, sha256=sha)) == 96


def test_a_conditions_folder_beside_the_csv_is_checked_against_the_official_build(tmp_path: Path) -> None:
    root = write(tmp_path, LINES)
    cond = tmp_path / "bigtom" / "data" / "conditions" / "0_forward_action_true_belief"
    cond.mkdir(parents=True)
    built = [rows(r, "0_forward_action_true_belief") for r in LINES]
    with (cond / "stories.csv").open("w", newline="") as f:
        csv.writer(f, delimiter=";").writerows(built)
    assert len(load(root)) == 96
    with (cond / "stories.csv").open("w", newline="") as f:
        csv.writer(f, delimiter=";").writerows([built[0], (*built[1][:2], built[1][3], built[1][2]), *built[2:]])
    with pytest.raises(TomDataError, match="first at row 2"):
        load(root)


def test_a_download_is_checked_against_the_given_sha256_and_cached(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror" / "data" / "bigtom"
    mirror.mkdir(parents=True)
    shutil.copyfile(RAW, mirror / "bigtom.csv")
    sha = hashlib.sha256(RAW.read_bytes()).hexdigest()
    bench = BigToM({"source_url": (tmp_path / "mirror").as_uri() + "/", "sha256": sha})
    assert len(bench.load(DataSource(None, True, tmp_path / "cache"))) == 96
    assert len(BigToM({"sha256": sha}).load(DataSource(None, False, tmp_path / "cache"))) == 96
    with pytest.raises(TomDataError):  # the pinned release is not the fixture
        BigToM({"source_url": (tmp_path / "mirror").as_uri() + "/"}).load(DataSource(None, True, tmp_path / "c2"))
    assert list(PARTS)[-1] == PERCEPT
