"""BigToM against the real release in $TOM_DATA_DIR/bigtom (skipped when it is unset).

All 200 stories load through the whole-release checks and the 25 condition files the authors' generator made
(`data/conditions/`, checked row for row by the loader), the instruction texts are the release's files, a pinned
download is accepted from a mirror, and whole runs with a random and a python model give the metrics a hand
computation gives: written here from the condition files and the answers, with the official rule spelt out again.
"""

from __future__ import annotations

import csv
import os
import random
import shutil
from pathlib import Path

import pytest

from pytest_tom.derived import evaluate
from pytest_tom.engine import Engine
from pytest_tom.evals.bigtom import BigToM, scoring
from pytest_tom.framework.base import DataSource
from pytest_tom.gates.metrics import gate_metrics
from pytest_tom.models.base import CallableModel
from pytest_tom.models.random import RandomModel
from pytest_tom.record import index

pytestmark = pytest.mark.realdata
CSV = Path("bigtom/data/bigtom/bigtom.csv")


@pytest.fixture(scope="module")
def root() -> Path:
    data = os.environ.get("TOM_DATA_DIR")
    if not data or not (Path(data) / CSV).is_file():
        pytest.skip("TOM_DATA_DIR does not hold the real BigToM release (bigtom/data/bigtom/bigtom.csv)")
    return Path(data)


def condition(root: Path, folder: str) -> list[list[str]]:
    with (root / "bigtom" / "data" / "conditions" / folder / "stories.csv").open(newline="") as f:
        return list(csv.reader(f, delimiter=";"))


def official_gold(n: int) -> list[str]:
    """evaluate_conditions.py: random.seed(0), then random.shuffle([true, wrong]) once per row."""
    rng, out = random.Random(0), []
    for _ in range(n):
        answers = ["T", "W"]
        rng.shuffle(answers)
        out.append("a)" if answers[0] == "T" else "b)")
    return out


def test_every_item_is_its_condition_file_row_and_the_instructions_are_the_files(root: Path, tmp_path: Path) -> None:
    items = BigToM({"conditions": "all"}).load(DataSource(root, False, tmp_path))
    assert len(items) == 5000 and len({s.id for s in items}) == 5000
    gold = official_gold(200)
    for s in items:
        story, question, true, wrong = condition(root, s.extra.folder)[s.extra.line - 1]
        a, b = (true, wrong) if gold[s.extra.line - 1] == "a)" else (wrong, true)
        assert (s.context.render(), s.question, s.choices[0].text, s.choices[1].text) == (story, question, a, b)
        assert f"{s.gold})" == gold[s.extra.line - 1]
    code = root / "bigtom" / "code" / "prompt_instructions"
    assert (code / "evaluate.txt").read_text() == scoring.EVALUATE
    assert (code / "evaluate_cot.txt").read_text() == scoring.EVALUATE_COT
    assert (code / "evaluate_cot_chat_model.txt").read_text() == scoring.COT_CHAT
    exemplar = next(s for s in items if s.id == "0_forward_belief_false_belief-004")  # spec §2.4: the exemplar is a test item
    assert exemplar.context.render() == scoring.SHOT_STORY and exemplar.gold == "a"


def test_a_download_is_checked_against_the_pinned_sha256_and_git_blob(root: Path, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror" / "data" / "bigtom"
    mirror.mkdir(parents=True)
    shutil.copyfile(root / CSV, mirror / "bigtom.csv")
    assert len(BigToM({"source_url": (tmp_path / "mirror").as_uri() + "/"}).load(
        DataSource(None, True, tmp_path / "cache"))) == 4800
    assert len(BigToM().load(DataSource(None, False, tmp_path / "cache"))) == 4800


def hand(root: Path, answers: dict[str, str], items: dict[str, bool] | None = None) -> dict[str, float]:
    """Per-condition accuracy, TB AND FB per (init, variable, kind), and the core micro accuracy, from the raw files;
    `items` receives each item's verdict."""
    gold = official_gold(200)
    right: dict[str, list[bool]] = {}
    for init in "01":
        for v in ("forward_belief", "forward_action", "backward_belief"):
            for c in ("true_belief", "false_belief", "true_control", "false_control"):
                folder = f"{init}_{v}_{c}"
                for i, _row in enumerate(condition(root, folder)):
                    low = answers[f"{folder}-{i + 1:03d}"].strip().lower()
                    ok = gold[i] in low  # the gold key first, anywhere: the model's answers always hold a key
                    if items is not None:
                        items[f"{folder}-{i + 1:03d}"] = ok
                    right.setdefault(f"condition.{folder}.accuracy", []).append(ok)
                    right.setdefault("accuracy", []).append(ok)
            for kind, (t, f) in {"belief": ("true_belief", "false_belief"),
                                 "control": ("true_control", "false_control")}.items():
                tb, fb = right[f"condition.{init}_{v}_{t}.accuracy"], right[f"condition.{init}_{v}_{f}.accuracy"]
                right[f"pair.{init}_{v}.{kind}.true_and_false"] = [x and y for x, y in zip(tb, fb, strict=True)]
    return {k: sum(v) / len(v) for k, v in right.items()}


def longer(batch: list, settings: dict) -> list[str]:
    """The letter of the longer option, in the instruction's 'Answer:<option>)' form: blind to the story."""
    out = []
    for c in batch:
        a, b = c[-1]["content"].rsplit("\na)", 1)[1].split("\nb)")
        out.append("Answer: a)" if len(a) >= len(b) else "Answer: b)")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("which", ["random", "python"])
def test_all_4800_run_and_the_metrics_equal_a_hand_computation(root: Path, tmp_path: Path, which: str) -> None:
    bench = BigToM()
    items = bench.load(DataSource(root, False, tmp_path))
    model = RandomModel(0) if which == "random" else CallableModel(longer)
    records = list(Engine(model).run({s.id: (s, bench.program(s)) for s in items}).values())
    got = {m.name: m.value for m in bench.metrics(records)}
    per_item: dict[str, bool] = {}
    want = hand(root, {r.sample_id: r.responses[-1] or "" for r in records}, per_item)
    assert {k: got[k] for k in want} == pytest.approx(want) and got["n"] == 4800 and got["unparseable"] == 0
    assert {r.sample_id: r.passed for r in records} == per_item  # item by item
    # each group's TB AND FB pairs are gateable, as the derived items judge them: `pair.group.<init>_<variable>_<kind>`
    derived = [evaluate(d, index(records), bench.rule(d.kind)) for d in bench.derived(items)]
    gates = gate_metrics(records, derived, facets=bench.gate_facets, cluster=bench.cluster,
                         derived_facets=bench.derived_gate_facets)
    groups = {k.removeprefix("pair.group."): m for k, m in gates.items() if k.startswith("pair.group.")}
    assert {k: m.rate() for k, m in groups.items()} == pytest.approx(
        {k.removeprefix("pair.").removesuffix(".true_and_false").replace(".", "_"): v for k, v in want.items()
         if k.startswith("pair.")})
    assert all(len(m.ids) == 200 and len(set(m.clusters)) == 200 for m in groups.values()) and len(groups) == 12
    by = {r.sample_id: r for r in records}  # the two backward-belief control files are one prompt set: one answer
    assert all(by[f"{i}_backward_belief_true_control-{n:03d}"].responses == by[f"{i}_backward_belief_false_control-"
               f"{n:03d}"].responses for i in "01" for n in range(1, 201))
