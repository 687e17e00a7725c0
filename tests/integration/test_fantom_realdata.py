"""FANToM's control-task ALL*/ALL on the real release under both official evaluator revisions (skipped without it).

Expected numbers were computed independently of pytest-tom, straight from `fantom_v1.json` with the official rules
(`eval_fantom.py@ebd35eb` for 2023, `@1cae6fa` for 2024), for scripted outcomes: the named questions wrong, every
other question right. Of the 41 sets, 15 have accessible ToM questions in each context; the 2024 rule keeps 6 of them
in the short context and 1 (4-2-0) in the full one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_fantom_e2e import bow, run

from pytest_tom.evals.fantom import FANToM, metrics
from pytest_tom.evals.fantom.data import FantomExtra
from pytest_tom.framework.base import DataSource
from pytest_tom.record import Outcome, Record
from pytest_tom.sample import Sample

pytestmark = pytest.mark.realdata

Policy = Callable[[Sample[FantomExtra]], bool]
"""Which questions a scripted model gets wrong."""
POLICIES: dict[str, Policy] = {
    "lists": lambda s: s.extra.qtype.endswith("_list"),
    "yes/no": lambda s: s.extra.qtype.endswith("_yn"),
    "conversations 0-5": lambda s: int(s.facets["conversation"]) <= 5,
    "set 4-2-1": lambda s: s.extra.set_id == "4-2-1",
    "free belief 1 of 4-2-0": lambda s: s.extra.set_id == "4-2-0" and s.extra.qtype == "belief_free" and s.extra.index == 0,
    "none": lambda s: False,
}
KEPT = {"short": {"1-0-1", "4-2-0", "5-0-2", "8-1-1", "10-1-2", "11-0-0"}, "full": {"4-2-0"}}


@pytest.fixture(scope="module")
def root() -> Path:
    data = os.environ.get("TOM_DATA_DIR")
    if not data or not (Path(data) / "fantom" / "fantom_v1.json").is_file():
        pytest.skip("TOM_DATA_DIR holds no fantom/fantom_v1.json")
    return Path(data)


def control(root: Path, context: str, aggregation: str, policy: str) -> tuple[dict[str, Any], dict[str, Any]]:
    bench = FANToM({"embedder": "python:not_imported:fn", "contexts": context, "aggregation": aggregation})
    wrong = POLICIES[policy]
    recs = [Record.of(s, Outcome.INCORRECT if wrong(s) else Outcome.CORRECT,
                      details={"unit_size": s.extra.unit_size, "set_all_accessible": s.extra.set_all_accessible})
            for s in bench.load(DataSource(root=root, download=False, cache_dir=root / "unused-cache"))]
    return metrics.scenario_report(recs, "accessible", aggregation, "official", context, "2024")


@pytest.mark.parametrize(("policy", "context", "aggregation", "rev2023", "rev2024"), [
    # (ALL*, ALL, units counted)
    ("lists", "short", "set", (60.0, 60.0, 15), (0.0, 0.0, 6)),
    ("lists", "short", "part", (40.0, 40.0, 10), (0.0, 0.0, 6)),
    ("lists", "full", "set", (93.3, 93.3, 15), (0.0, 0.0, 1)),
    ("lists", "full", "conversation", (87.5, 87.5, 8), (0.0, 0.0, 1)),
    ("yes/no", "short", "set", (60.0, 60.0, 15), (0.0, 0.0, 6)),
    ("conversations 0-5", "short", "set", (40.0, 40.0, 15), (50.0, 50.0, 6)),
    ("conversations 0-5", "short", "part", (50.0, 50.0, 10), (50.0, 50.0, 6)),
    ("conversations 0-5", "full", "set", (40.0, 40.0, 15), (0.0, 0.0, 1)),
    # part 4-2 holds the kept 4-2-0 and the mixed 4-2-1: a filter by unit instead of by set would give 83.3
    ("set 4-2-1", "short", "part", (90.0, 90.0, 10), (100.0, 100.0, 6)),
    ("free belief 1 of 4-2-0", "short", "set", (93.3, 100.0, 15), (83.3, 100.0, 6)),
    ("free belief 1 of 4-2-0", "full", "set", (93.3, 100.0, 15), (0.0, 100.0, 1)),
    ("none", "full", "conversation", (100.0, 100.0, 8), (100.0, 100.0, 1)),
])
def test_control_all_star_and_all_per_revision(root: Path, policy: str, context: str, aggregation: str,
                                               rev2023: tuple[float, float, int], rev2024: tuple[float, float, int]) -> None:
    rep, extra = control(root, context, aggregation, policy)
    assert rep["accessible:set:ALL*:rev2023"] == pytest.approx(rev2023[0])
    assert rep["accessible:set:ALL:rev2023"] == pytest.approx(rev2023[1])
    assert extra["complete_units"] == rev2023[2]
    assert rep["accessible:set:ALL*:rev2024"] == pytest.approx(rev2024[0])
    assert rep["accessible:set:ALL:rev2024"] == pytest.approx(rev2024[1])
    assert extra["units_rev2024"] == rev2024[2]
    assert (rep["accessible:set:ALL*"], rep["accessible:set:ALL"]) == (rep["accessible:set:ALL*:rev2024"],
                                                                      rep["accessible:set:ALL:rev2024"])
    assert extra["sets_all_accessible"] == len(KEPT[context])


@pytest.mark.parametrize("context", ["short", "full"])
def test_the_kept_sets_are_the_official_ones(root: Path, context: str) -> None:
    bench = FANToM({"embedder": "none", "contexts": context})
    samples = bench.load(DataSource(root=root, download=False, cache_dir=root / "unused-cache"))
    assert {s.extra.set_id for s in samples if s.extra.set_all_accessible} == KEPT[context]


# An answer key: the gold answer of every rendered prompt, except the list questions, answered "Nobody." (which
# names none of the aware characters).
ANSWER_KEY = '''
from pathlib import Path

from pytest_tom.evals.fantom import FANToM
from pytest_tom.evals.fantom.prompts import render_prompt
from pytest_tom.framework.base import DataSource


def gold(s):
    qtype = s.extra.qtype
    if qtype.endswith("_list"):
        return "Nobody."
    if qtype == "belief_choice":
        return f"({s.gold})"
    return {"yes": "Yes", "no": "No"}.get(s.gold, s.gold) if qtype.endswith("_yn") else s.gold


BENCH = FANToM({"embedder": "python:unused:unused", "contexts": "short,full"})
SOURCE = DataSource(root=Path(__ROOT__), download=False, cache_dir=Path("unused-cache"))
KEY = {render_prompt(s): gold(s) for s in BENCH.load(SOURCE)}


def model(conversations, settings):
    return [KEY[c[-1]["content"]] for c in conversations]


model.tom_fingerprint = "fantom-lists-wrong"
'''


@pytest.mark.slow
def test_a_whole_run_with_every_list_wrong(pytester: pytest.Pytester, root: Path) -> None:
    """Through the plugin, both contexts, both revisions in one report: lists answered "Nobody.", the rest right."""
    pytester.makepyfile(fantom_key=ANSWER_KEY.replace("__ROOT__", repr(str(root))))
    pytester.syspathinsert()
    result = run(pytester, "--tom-model=python:fantom_key:model", bow(pytester), "--tom-set=fantom.contexts=short,full",
                 "--tom-report=r.json", "-q", data_dir=root)
    assert "error" not in result.parseoutcomes() and "errors" not in result.parseoutcomes()
    contexts = json.loads((pytester.path / "r.json").read_text())["suites"][0]["metrics"]["contexts"]
    expected = {"short": (60.0, 0.0, 6), "full": (93.3, 0.0, 1)}
    for context, (old, new, kept) in expected.items():
        report, extra = contexts[context]["control_task"], contexts[context]["extra"]["accessible"]
        assert report["accessible:set:ALL*"] == pytest.approx(new) and report["accessible:set:ALL"] == pytest.approx(new)
        assert report["accessible:set:ALL*:rev2023"] == pytest.approx(old)
        assert report["accessible:set:ALL:rev2023"] == pytest.approx(old)
        assert extra["sets_all_accessible"] == kept and extra["units_rev2024"] == kept
