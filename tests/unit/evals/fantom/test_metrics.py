"""FANToM's control-task ALL*/ALL under the two official evaluator revisions (2023 paper, 2024 current)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_tom.evals.fantom import FANToM, metrics
from pytest_tom.evals.fantom.data import FantomExtra
from pytest_tom.framework.base import DataSource
from pytest_tom.output.render import terminal_lines, to_json
from pytest_tom.record import Outcome, Record
from pytest_tom.sample import Sample

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
EMBEDDER = "python:not_imported_by_loading:fn"
"""Resolving a python: embedder imports nothing, so free-response beliefs are loaded without a model."""

# The fixture's control outcomes of the e2e hand test: 0-0-1 (a mixed set: only its second-order belief is
# accessible) right; 1-0-0 (the one fully accessible set) wrong on free belief #2 and Victor's info y/n.
WRONG = {"short-1-0-0-belief_free-2", "short-1-0-0-info_accessibility_yn-victor"}


def samples(**settings: Any) -> tuple[FANToM, list[Sample[FantomExtra]]]:
    bench = FANToM({"embedder": EMBEDDER, **settings})
    return bench, bench.load(DataSource(root=FIXTURES, download=False, cache_dir=Path("unused-cache")))


def records(chosen: Sequence[Sample[FantomExtra]], wrong: Collection[str] = (), *, flag: bool = True) -> list[Record]:
    """Every question answered, wrong where named; `flag=False` writes records as reports before the flag did."""
    out = []
    for s in chosen:
        details: dict[str, Any] = {"unit_size": s.extra.unit_size}
        if flag:
            details["set_all_accessible"] = s.extra.set_all_accessible
        out.append(Record.of(s, Outcome.INCORRECT if s.id in wrong else Outcome.CORRECT, details=details))
    return out


def control(recs: Sequence[Record], evaluator: str, aggregation: str = "set") -> tuple[dict[str, Any], dict[str, Any]]:
    return metrics.scenario_report(recs, "accessible", aggregation, "official", "short", evaluator)


def test_samples_know_whether_their_whole_set_is_accessible() -> None:
    """Tags after the no:long drop and the full-context re-tag: short keeps 1-0-0, full keeps none."""
    _, short = samples()
    assert {s.extra.set_id for s in short if s.extra.set_all_accessible} == {"1-0-0"}
    assert metrics.kept_sets(records(short)) == {"1-0-0"}
    _, full = samples(contexts="full")
    assert metrics.kept_sets(records(full)) == set()
    _, no_free = samples(embedder="none")  # a choice belief carries its free belief's tag
    assert metrics.kept_sets(records(no_free)) == {"1-0-0"}


@pytest.mark.parametrize(("evaluator", "star", "every"), [("2023", 50.0, 50.0), ("2024", 0.0, 0.0)])
def test_each_revision_under_upstream_keys_and_both_under_their_own(evaluator: str, star: float, every: float) -> None:
    _, short = samples()
    rep, extra = control(records(short, WRONG), evaluator)
    assert (rep["accessible:set:ALL*"], rep["accessible:set:ALL"]) == (star, every)
    assert {k: rep[k] for k in rep if ":rev" in k} == {
        "accessible:set:ALL*:rev2023": 50.0, "accessible:set:ALL:rev2023": 50.0,
        "accessible:set:ALL*:rev2024": 0.0, "accessible:set:ALL:rev2024": 0.0,
    }
    assert extra["sets_all_accessible"] == 1 and extra["units_rev2024"] == 1 and extra["complete_units"] == 2
    # every other key is the same under both rules
    other, _ = control(records(short, WRONG), "2023" if evaluator == "2024" else "2024")
    assert {k: v for k, v in rep.items() if not k.startswith("accessible:set:ALL")} == \
        {k: v for k, v in other.items() if not k.startswith("accessible:set:ALL")}


def test_the_inaccessible_report_has_no_rule_keys_and_does_not_change() -> None:
    _, short = samples()
    recs = records(short, WRONG | {"short-0-0-0-answerability_list"})
    old, old_extra = metrics.scenario_report(recs, "inaccessible", "set", "official", "short", "2023")
    new, new_extra = metrics.scenario_report(recs, "inaccessible", "set", "official", "short", "2024")
    assert old == new and old_extra == new_extra
    assert not any(":rev" in k for k in new) and "sets_all_accessible" not in new_extra
    assert new["inaccessible:set:ALL*"] == 75.0


def test_the_filter_is_by_set_then_grouped_by_unit() -> None:
    """Part 1-0 holds the kept 1-0-0 and the inaccessible-only 1-0-1; part 0-0 holds only the mixed 0-0-1."""
    _, short = samples(aggregation="part")
    rep, extra = control(records(short, WRONG), "2024", "part")
    assert rep["accessible:set:ALL*"] == 0.0 and extra["units_rev2024"] == 1
    rep, _ = control(records(short), "2024", "part")
    assert rep["accessible:set:ALL*"] == 100.0 and rep["accessible:set:ALL*:rev2023"] == 100.0


def test_no_kept_set_is_undefined_never_zero() -> None:
    """Upstream's mean over no set is NaN: None here (JSON null)."""
    _, full = samples(contexts="full")
    rep, extra = metrics.scenario_report(records(full), "accessible", "set", "official", "full", "2024")
    assert rep["accessible:set:ALL*"] is None and rep["accessible:set:ALL"] is None
    assert rep["accessible:set:ALL*:rev2023"] == 100.0  # 2023 scores the mixed sets' accessible beliefs
    assert extra["sets_all_accessible"] == 0 and extra["units_rev2024"] == 0


def test_the_load_time_flag_survives_a_selection_the_fallback_does_not() -> None:
    """Records written before the flag fall back to their own tags; a selection of only a mixed set's accessible
    questions then looks whole, which is why the flag is fixed at load."""
    _, short = samples()
    assert metrics.kept_sets(records(short, flag=False)) == {"1-0-0"}  # a whole run: the fallback agrees
    only = [s for s in short if s.extra.set_id == "0-0-1" and s.extra.accessibility == "accessible"]
    assert metrics.kept_sets(records(only)) == set()
    assert metrics.kept_sets(records(only, flag=False)) == {"0-0-1"}
    rep, _ = control(records(only), "2024")
    assert rep["accessible:set:ALL*"] is None and rep["accessible:set:ALL*:rev2023"] == 100.0


def test_the_benchmark_reports_and_prints_its_evaluator() -> None:
    bench, short = samples(evaluator="paper")
    tree = to_json(bench.metrics(records(short, WRONG)))
    assert tree["evaluator"] == "2023"
    assert tree["contexts"]["short"]["control_task"]["accessible:set:ALL*"] == 50.0
    assert tree["contexts"]["short"]["extra"]["accessible"]["sets_all_accessible"] == 1
    text = "\n".join(terminal_lines(bench.metrics(records(short, WRONG))))
    assert "prompt vanilla | evaluator 2023" in text
    assert "accessible:set:ALL*:rev2024 0.0" in text and "accessible:set:ALL*:rev2023 50.0" in text
