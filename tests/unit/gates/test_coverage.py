"""Issue 20: reading a baseline safely, and whether it covers a run, decided before any model request."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.baselines import baseline_from_dict

from pytest_tom.derived import Derived
from pytest_tom.errors import TomConfigError
from pytest_tom.gates import gate_metrics
from pytest_tom.gates.baseline import SuiteRun, build_baseline, load_baseline, max_bytes
from pytest_tom.gates.compare import parse_compare_rule
from pytest_tom.gates.coverage import PlannedSuite, check_coverage, planned_metrics
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.sample import Choice, Sample, Story

FP = "sha256:" + "a" * 64
SETTINGS = {"tries": 1}


class Toy:
    """What `planned_metrics` reads of a benchmark."""

    gate_facets = ("ability",)
    derived_gate_facets = ("ability",)

    def cluster(self, facets: Any, uid: str) -> str:
        return str(facets.get("story", uid))

    def gate_rates(self, records: Any) -> list[Any]:
        return []


def _sample(i: int) -> Sample[None]:
    return Sample("toy", f"q{i}", Story("Anne puts the ball in the box."), "Where is the ball?",
                  (Choice("A", "box"), Choice("B", "bag")), "A", ("Anne",),
                  {"ability": "belief" if i % 2 else "emotion", "story": f"s{i // 2}"}, (), None)


def _groups(n: int) -> list[Derived]:
    return [Derived("toy", f"s{k}", "coherence", (f"q{2 * k}", f"q{2 * k + 1}"), facets={"story": f"s{k}"})
            for k in range(n // 2)]


def _baseline(n: int, *, errors: tuple[int, ...] = (), name: str = "tb", error: Outcome = Outcome.ERROR) -> Any:
    recs = [Record("toy", f"q{i}", error if i in errors else Outcome.CORRECT,
                   {"ability": "belief" if i % 2 else "emotion", "story": f"s{i // 2}"}) for i in range(n)]
    der = [DerivedRecord("toy", d.id, d.kind, Verdict.PASSED, d.members, facets=dict(d.facets)) for d in _groups(n)]
    metrics = gate_metrics(recs, der, facets=Toy.gate_facets, cluster=Toy().cluster)
    raw = build_baseline([SuiteRun(name, "toy", SETTINGS, FP, recs, der, metrics)], model_uri=None,
                         model_fingerprint=None, plugin_version="0")
    return baseline_from_dict(raw, path="b.json")


def _planned(n: int, start: int = 0, *, settings: Any = SETTINGS) -> PlannedSuite:
    samples = [_sample(i) for i in range(start, n)]
    groups = [d for d in _groups(n) if all(int(m[1:]) >= start for m in d.members)]
    return PlannedSuite("tb", "toy", settings, FP, planned_metrics(Toy(), samples, groups), frozenset({"coherence"}))


def rules(*texts: str) -> list[Any]:
    return [parse_compare_rule(t) for t in texts]


def test_planned_metrics_are_the_units_a_run_of_the_selection_will_have() -> None:
    metrics = planned_metrics(Toy(), [_sample(i) for i in range(4)], _groups(4))
    assert metrics["accuracy"] == ("q0", "q1", "q2", "q3") and metrics["errors"] == metrics["accuracy"]
    assert metrics["ability.belief"] == ("q1", "q3") and metrics["coherence"] == ("s0", "s1")


def test_a_covering_baseline_passes_and_a_gap_is_refused_naming_counts_and_ids() -> None:
    base = _baseline(10)
    assert check_coverage(base, [_planned(10)], rules("*.accuracy", "tb.coherence")) == []
    assert check_coverage(base, [_planned(6)], rules("tb.*")) == []  # a subset of the baseline's selection
    with pytest.raises(TomConfigError) as info:
        check_coverage(base, [_planned(14)], rules("tb.accuracy", "tb.coherence"))
    text = str(info.value)
    assert "the baseline b.json does not cover this run, so no question was asked" in text
    assert "tb.accuracy: the baseline holds 10 of the 14 questions this run selects; missing q10, q11, q12 and 1 more" in text
    assert "tb.coherence: the baseline holds 5 of the 7 groups this run selects; missing s5, s6" in text
    assert "--tom-compare-fail='*.accuracy:partial'" in text


@pytest.mark.parametrize("error", [Outcome.ERROR, Outcome.UNSCORED])
def test_a_unit_the_baseline_ran_without_a_value_is_not_a_gap(error: Outcome) -> None:
    base = _baseline(10, errors=(3,), error=error)  # a model error or no gold in the baseline run: in no metric, but it ran
    assert "q3" not in base.suites["tb"].metrics["accuracy"].ids
    assert check_coverage(base, [_planned(10)], rules("tb.accuracy")) == []


def test_derived_results_are_gateable_per_value_of_a_derived_gate_facet() -> None:
    der = [DerivedRecord("toy", f"p{i}", "pair", v, (f"q{i}",), facets={"group": g, "story": f"s{i // 2}"})
           for i, (v, g) in enumerate([(Verdict.PASSED, "a"), (Verdict.FAILED, "a"), (Verdict.PASSED, "b 1"),
                                       (Verdict.SKIPPED, "b 1"), (Verdict.PASSED, "")])]
    metrics = gate_metrics([], der, cluster=Toy().cluster, derived_facets=("group",))
    assert {k: (m.ids, m.values, m.clusters) for k, m in metrics.items() if k.startswith("pair")} == {
        "pair": (("p0", "p1", "p2", "p4"), (1.0, 0.0, 1.0, 1.0), ("s0", "s0", "s1", "s2")),
        "pair.group.a": (("p0", "p1"), (1.0, 0.0), ("s0", "s0")), "pair.group.b_1": (("p2",), (1.0,), ("s1",))}
    assert "pair.group.a" not in gate_metrics([], der, cluster=Toy().cluster)  # only where the benchmark declares it


def test_a_derived_gate_metric_is_planned_and_counted_in_groups() -> None:
    groups = [Derived(d.benchmark, d.id, d.kind, d.members, facets={**d.facets, "ability": "belief"}) for d in _groups(14)]
    metrics = planned_metrics(Toy(), [_sample(i) for i in range(14)], groups)
    assert metrics["coherence.ability.belief"] == tuple(f"s{k}" for k in range(7))
    with pytest.raises(TomConfigError, match=r"tb.coherence.ability.belief is not in the baseline \(it holds 0 of the 7 groups"):
        check_coverage(_baseline(10), [PlannedSuite("tb", "toy", SETTINGS, FP, metrics, frozenset({"coherence"}))],
                       rules("tb.coherence.ability.belief"))


def test_a_question_without_a_gold_is_in_no_gate_metric() -> None:
    recs = [Record("toy", f"q{i}", o, {"ability": "belief", "story": "s0"})
            for i, o in enumerate([Outcome.CORRECT, Outcome.UNSCORED, Outcome.ERROR, Outcome.UNPARSEABLE])]
    metrics = gate_metrics(recs, facets=Toy.gate_facets, cluster=Toy().cluster)
    assert {k: m.ids for k, m in metrics.items()} == {"accuracy": ("q0", "q3"), "ability.belief": ("q0", "q3"),
                                                      "unparseable": ("q0", "q3"), "errors": ("q0", "q2", "q3")}


def test_partial_rules_and_update_accept_a_gap_with_a_note_but_never_nothing_in_common() -> None:
    base = _baseline(10)
    notes = check_coverage(base, [_planned(14)], rules("tb.accuracy:partial"))
    assert notes == ["tb.accuracy: compared on 10 of 14 questions (the baseline lacks the others)"]
    assert check_coverage(base, [_planned(14)], rules("tb.accuracy"), lenient=True) == notes
    with pytest.raises(TomConfigError, match="tb.accuracy: the baseline holds 0 of the 4 questions"):
        check_coverage(base, [_planned(24, start=20)], rules("tb.accuracy:partial"))


def test_other_settings_are_refused_unless_forced_and_a_suite_not_in_the_baseline_is_named() -> None:
    base = _baseline(10)
    with pytest.raises(TomConfigError, match="(?s)refusing to compare.*tries: 1 -> 2"):
        check_coverage(base, [_planned(10, settings={"tries": 2})], rules("tb.accuracy"))
    assert check_coverage(base, [_planned(10, settings={"tries": 2})], rules("tb.accuracy"), force=True) == []
    other = _baseline(10, name="other")
    with pytest.raises(TomConfigError, match=r"suite tb is not in the baseline \(its suites: other\)"):
        check_coverage(other, [_planned(10)], rules("*.accuracy"))
    assert check_coverage(other, [_planned(10)], rules("nothing.*")) == []  # no rule names this suite


# -- reading the file ------------------------------------------------------------------------------------------


def _good(tmp_path: Path) -> Path:
    path = tmp_path / "b.json"
    raw = build_baseline([SuiteRun("tb", "toy", SETTINGS, FP, [], [], {})], model_uri=None, model_fingerprint=None,
                         plugin_version="0")
    path.write_text(json.dumps(raw))
    return path


def test_special_files_are_refused_without_being_opened(tmp_path: Path) -> None:
    (tmp_path / "b.json").mkdir()
    with pytest.raises(TomConfigError, match=r"b.json: is a directory, not a regular file"):
        load_baseline(tmp_path / "b.json")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.json")
        with pytest.raises(TomConfigError, match=r"fifo.json: is a FIFO \(named pipe\)"):
            load_baseline(tmp_path / "fifo.json")
    if Path("/dev/zero").exists():
        (tmp_path / "zero.json").symlink_to("/dev/zero")
        with pytest.raises(TomConfigError, match=r"zero.json \(a symlink to /dev/zero\): is a character device"):
            load_baseline(tmp_path / "zero.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(TomConfigError, match=r"dangling.json: a symlink to .*gone.json, which does not exist"):
        load_baseline(tmp_path / "dangling.json")


def test_the_size_limit_and_its_setting(tmp_path: Path) -> None:
    path = _good(tmp_path)
    size = path.stat().st_size
    assert load_baseline(path, limit=size).suites["tb"].benchmark == "toy"
    with pytest.raises(TomConfigError, match=r"is over the limit of .* so it was not read.*\$TOM_BASELINE_MAX_MB"):
        load_baseline(path, limit=size - 1)
    assert max_bytes({}) == 256 * 2**20 and max_bytes({"TOM_BASELINE_MAX_MB": "0.5"}) == 2**19
    for bad in ("0", "-1", "big", "nan"):
        with pytest.raises(TomConfigError, match="TOM_BASELINE_MAX_MB"):
            max_bytes({"TOM_BASELINE_MAX_MB": bad})


def test_a_bom_crlf_and_line_separators_are_read_and_duplicate_keys_refused(tmp_path: Path) -> None:
    path = _good(tmp_path)
    raw = json.loads(path.read_text())
    raw["created"] = "2025\u2028"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(raw, ensure_ascii=False, indent=1).replace("\n", "\r\n").encode())
    assert load_baseline(path).created == "2025\u2028"
    path.write_text(path.read_text(encoding="utf-8-sig").replace('"created"', '"created": "x", "created"', 1))
    with pytest.raises(TomConfigError, match=r"the key 'created' appears twice.*--tom-baseline-save"):
        load_baseline(path)
