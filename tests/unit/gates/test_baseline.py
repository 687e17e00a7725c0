"""Baselines: the file (round trip, schema, versions), refusals, pairing, and the paired gate's verdicts and messages."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from helpers.baselines import baseline_from_dict

from pytest_tom.errors import TomConfigError
from pytest_tom.gates import gate_metrics
from pytest_tom.gates.baseline import (
    Baseline,
    SuiteRun,
    build_baseline,
    data_fingerprint,
    describe_missing,
    load_baseline,
    write_baseline,
)
from pytest_tom.gates.compare import CompareRule, check_compatible, compare, parse_compare_rule, settings_diff
from pytest_tom.gates.wording import line
from pytest_tom.output.report import schema
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.sample import Choice, Conversation, Sample, Story
from pytest_tom.stats import holm

SETTINGS = {"protocol": "vanilla", "tries": 1, "decoding": {"temperature": 0.0}}
FP = "sha256:" + "a" * 64
C, X, U, E = Outcome.CORRECT, Outcome.INCORRECT, Outcome.UNPARSEABLE, Outcome.ERROR


def rec(i: int, outcome: Outcome, *, per_story: int = 5, suite: str = "tb") -> Record:
    qid = f"q{i:04d}"
    message = "" if outcome is C else f"{qid}: expected A, got B"
    return Record("toy", qid, outcome, {"story": f"s{i // per_story}", "ability": "belief" if i % 2 else "emotion"},
                  message=message, suite=suite, nodeid=f"test_tom.py::{suite}[{qid}]")


def records(outcomes: Sequence[Outcome], start: int = 0) -> list[Record]:
    return [rec(start + i, o) for i, o in enumerate(outcomes)]


def story(facets: Mapping[str, str], uid: str) -> str:
    return facets.get("story", uid)


def run(recs: Sequence[Record], derived: Sequence[DerivedRecord] = (), *, settings: Mapping[str, Any] = SETTINGS,
        fp: str = FP, suite_id: str = "tb", benchmark: str = "toy", noise: float | None = None) -> SuiteRun:
    metrics = gate_metrics(recs, derived, facets=("ability",), cluster=story)
    return SuiteRun(suite_id, benchmark, settings, fp, recs, derived, metrics, noise)


def baseline_of(*runs: SuiteRun) -> Baseline:
    return baseline_from_dict(build_baseline(runs, model_uri="hf:base", model_fingerprint="fp-base", plugin_version="0.1.0"))


def pattern(n: int, correct_every: int = 5, wrong: int = 1) -> list[Outcome]:
    """n outcomes, `wrong` of every `correct_every` wrong (in place of the first ones of each block)."""
    return [X if i % correct_every < wrong else C for i in range(n)]


def flip(outcomes: Sequence[Outcome], idx: Sequence[int], to: Outcome = X) -> list[Outcome]:
    out = list(outcomes)
    for i in idx:
        out[i] = to
    return out


# -- the file ------------------------------------------------------------------------------------------


def test_round_trip_keeps_items_verdicts_metrics_and_provenance(tmp_path: Path) -> None:
    recs = records([C, X, U, E, C, C])
    der = [DerivedRecord("toy", "s0:coherence", "coherence", Verdict.FAILED, ("q0000", "q0001"), ("q0001",),
                         {"story": "s0"}, message="q0001 disagrees"),
           DerivedRecord("toy", "s1:coherence", "coherence", Verdict.PASSED, ("q0005",), facets={"story": "s1"})]
    current = run(recs, der, noise=0.04)
    raw = build_baseline([current], model_uri="hf:base", model_fingerprint="fp-base", plugin_version="0.1.0")
    path = tmp_path / "ci" / "tom-baseline.json"
    write_baseline(path, raw)
    jsonschema.validate(json.loads(path.read_text()), schema("baseline.schema.json"))
    assert not list(tmp_path.glob("ci/.*tmp"))
    # one line per question, derived result and metric: a diff shows which ones changed
    assert any(line.startswith('"q0001":') for line in path.read_text().splitlines())

    b = load_baseline(path)
    assert (b.version, b.plugin_version, b.model_uri, b.model_fingerprint, b.path) == (1, "0.1.0", "hf:base", "fp-base", str(path))
    s = b.suites["tb"]
    assert (s.benchmark, s.settings, s.data_fingerprint, s.noise_flip_rate) == ("toy", SETTINGS, FP, 0.04)
    assert sorted(s.items) == [r.sample_id for r in recs]
    assert s.items["q0001"].outcome is X and s.items["q0001"].message == "q0001: expected A, got B"
    assert s.items["q0000"].message == "" and s.items["q0000"].facets["story"] == "s0"
    assert s.derived["s0:coherence"].verdict is Verdict.FAILED and s.derived["s0:coherence"].message == "q0001 disagrees"
    assert set(s.metrics) == set(current.metrics)
    for name, m in current.metrics.items():
        assert s.metrics[name] == m, name


def test_settings_with_tuples_compare_equal_after_the_round_trip() -> None:
    current = run(records([C, C]), settings={"labels": ("A", "B"), "tries": 2})
    base = baseline_of(current)
    assert check_compatible(base.suites["tb"], current, force=False) == ["suite tb: compared on 2 questions present in both runs"]


def _write(tmp_path: Path, raw: Any) -> Path:
    path = tmp_path / "b.json"
    path.write_text(json.dumps(raw))
    return path


def _raw() -> dict[str, Any]:
    return build_baseline([run(records([C, X, C]))], model_uri=None, model_fingerprint=None, plugin_version="0.1.0")


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (lambda r: r["suites"][0]["metrics"]["accuracy"]["values"].__setitem__(1, 2), "$.suites[0].metrics.accuracy.values[1]", "2"),
        (lambda r: r["suites"][0]["items"]["q0001"].__setitem__("outcome", "wrong"), "$.suites[0].items.q0001.outcome", "wrong"),
        (lambda r: r["suites"][0].pop("data_fingerprint"), "$.suites[0]", "data_fingerprint"),
        (lambda r: r["model"].__setitem__("uri", 3), "$.model.uri", "3"),
        (lambda r: r["suites"][0]["metrics"]["accuracy"]["ids"].pop(), "$.suites[0].metrics.accuracy", "2 ids, 3 values"),
    ],
)
def test_an_invalid_file_names_the_file_and_the_json_path(tmp_path: Path, edit: Any, where: str, what: str) -> None:
    raw = _raw()
    edit(raw)
    path = _write(tmp_path, raw)
    with pytest.raises(TomConfigError) as info:
        load_baseline(path)
    text = str(info.value)
    assert str(path) in text and f"(at {where})" in text and what in text and "--tom-baseline-save" in text


def test_unknown_versions_reports_and_broken_json_are_refused_clearly(tmp_path: Path) -> None:
    raw = _raw()
    raw["baseline_version"] = 2
    with pytest.raises(TomConfigError, match=r"baseline_version 2 is not one this pytest-tom reads \(it reads 1\).*baseline_version"):
        load_baseline(_write(tmp_path, raw))
    with pytest.raises(TomConfigError, match="a pytest-tom report .*not a baseline"):
        load_baseline(_write(tmp_path, {"schema_version": "1.1", "items": []}))
    with pytest.raises(TomConfigError, match="expected a JSON object, got list"):
        load_baseline(_write(tmp_path, [1]))
    path = tmp_path / "b.json"
    path.write_text('{"baseline_version": 1,')
    with pytest.raises(TomConfigError, match=r"b.json: not valid JSON: .* line 1"):
        load_baseline(path)
    with pytest.raises(TomConfigError, match="no baseline at .*nope.json.*--tom-baseline-save=.*nope.json"):
        load_baseline(tmp_path / "nope.json")


def test_describe_missing_says_how_to_create_one() -> None:
    text = describe_missing("ci/base.json")
    assert "no baseline at ci/base.json" in text and "--tom-baseline-save=ci/base.json" in text
    assert "--tom-baseline=ci/base.json" in text


def _sample(i: int, gold: str = "A", text: str = "Anne puts the ball in the box.") -> Sample[None]:
    return Sample("toy", f"q{i}", Story(text), "Where is the ball?", (Choice("A", "box"), Choice("B", "bag")), gold,
                  ("Anne",), {"ability": "belief"}, (), None)


def test_data_fingerprint_is_order_free_and_sees_golds_texts_and_context_kinds() -> None:
    samples = [_sample(i) for i in range(50)]
    fp = data_fingerprint(samples)
    assert fp.startswith("sha256:") and len(fp) == 7 + 64
    assert data_fingerprint(list(reversed(samples))) == fp
    assert data_fingerprint([*samples[:-1], _sample(49, gold="B")]) != fp
    assert data_fingerprint([*samples[:-1], _sample(49, text="Anne puts the ball in the bag.")]) != fp
    conv = Sample("toy", "q49", Conversation.parse("Anne puts the ball in the box."), "Where is the ball?",
                  (Choice("A", "box"), Choice("B", "bag")), "A", ("Anne",), {"ability": "belief"}, (), None)
    assert data_fingerprint([*samples[:-1], conv]) != fp


# -- refusals and pairing --------------------------------------------------------------------------------


def test_changed_settings_or_data_are_refused_listing_each_difference_unless_forced() -> None:
    base = baseline_of(run(records([C, X, C])))
    changed = run(records([C, X, C]), settings={"protocol": "cot", "tries": 1, "decoding": {"temperature": 0.7}, "new": 1})
    with pytest.raises(TomConfigError) as info:
        check_compatible(base.suites["tb"], changed, force=False)
    text = str(info.value)
    assert 'setting protocol: "vanilla" -> "cot"' in text and "setting decoding.temperature: 0.0 -> 0.7" in text
    assert "setting new: (unset) -> 1" in text and "tries" not in text and "--tom-baseline-force" in text
    notes = check_compatible(base.suites["tb"], changed, force=True)
    assert "compared despite differences (--tom-baseline-force)" in notes[0] and "protocol" in notes[0]

    other_data = run(records([C, X, C]), fp="sha256:" + "b" * 64)
    with pytest.raises(TomConfigError, match="data fingerprint: sha256:a+ -> sha256:b+"):
        check_compatible(base.suites["tb"], other_data, force=False)
    with pytest.raises(TomConfigError, match="refusing to compare"):
        compare(base, [other_data], [parse_compare_rule("tb.accuracy")])
    forced = compare(base, [other_data], [parse_compare_rule("tb.accuracy")], force=True)
    assert forced[0].passed and "compared despite differences" in forced[0].message


def test_settings_diff_lists_only_what_changed() -> None:
    assert settings_diff({"a": 1, "b": {"c": [1, 2]}}, {"a": 1, "b": {"c": (1, 2)}}) == []
    assert settings_diff({"a": 1}, {}) == ["a: 1 -> (unset)"]


def test_items_in_one_run_only_are_counted_and_the_rest_is_paired() -> None:
    base = baseline_of(run(records(pattern(100))))
    current = run(records(pattern(110)[10:], start=10))
    notes = check_compatible(base.suites["tb"], current, force=False)
    assert notes == ["suite tb: compared on 90 questions present in both runs; 10 only in the baseline (deselected in this run, "
                     "or removed); 10 only in this run (new, or not selected when the baseline was saved)"]
    # Issue 20: 10 questions of this run are not in the baseline: refused unless the rule opts in with `:partial`.
    [refused] = compare(base, [current], [parse_compare_rule("tb.accuracy")])
    assert not refused.passed and refused.comparison is None
    assert "tb.accuracy: the baseline has 90 of the 100 questions of this run (missing: q0100, q0101" in refused.message
    assert "tb.accuracy:partial" in refused.message
    [result] = compare(base, [current], [parse_compare_rule("tb.accuracy:partial")])
    assert result.comparison is not None and result.comparison.n_pairs == 90
    assert result.details["coverage"] == {"paired": 90, "only_in_baseline": 10, "only_in_run": 10}
    assert result.details["partial"] is True
    assert "compared on 90 questions" in result.message and "tb.accuracy: compared on 90 of 100 questions" in result.message
    assert line(result).endswith("; compared on 90 of 100 questions")

    disjoint = run(records(pattern(10), start=500))
    with pytest.raises(TomConfigError, match="no question of this run is in the baseline"):
        check_compatible(base.suites["tb"], disjoint, force=True)


# -- verdicts ----------------------------------------------------------------------------------------------


def test_a_clear_regression_fails_and_an_unchanged_run_passes() -> None:
    outcomes = pattern(400)  # 80% in 80 stories of 5
    base = baseline_of(run(records(outcomes)))
    [same] = compare(base, [run(records(outcomes))], [parse_compare_rule("tb.accuracy")])
    assert same.passed and same.kind == "baseline" and same.metric == "tb.accuracy" and same.name == "tb.accuracy:baseline"
    assert same.comparison is not None and same.comparison.p_regression == 1.0
    assert "passes" in same.message and "baseline 80.0% -> candidate 80.0%" in same.message

    worse = flip(outcomes, [i for i in range(400) if i % 5 == 1][:60])  # 60 right->wrong: 80% -> 65%
    [bad] = compare(base, [run(records(worse))], [parse_compare_rule("tb.accuracy")])
    c = bad.comparison
    assert c is not None and not bad.passed and c.regressed
    assert (c.right_to_wrong, c.wrong_to_right, c.n_pairs) == (60, 0, 400)
    assert c.diff.point == pytest.approx(-0.15) and c.diff.high < 0
    assert bad.estimate is not None and bad.estimate.point == pytest.approx(0.65)
    assert "REGRESSION" in bad.message and "baseline 80.0% -> candidate 65.0%" in bad.message
    assert "McNemar p" in bad.message and "Holm-adjusted over 1 comparison" in bad.message
    assert bad.to_dict()["comparison"]["right_to_wrong"] == 60


def test_relative_and_absolute_margins() -> None:
    assert parse_compare_rule("fantom.all_star:2%") == CompareRule("fantom.all_star", 0.02, True, "fantom.all_star:2%", "2%")
    assert parse_compare_rule("tombench.ability.*:0.03") == CompareRule("tombench.ability.*", 0.03, False,
                                                                       "tombench.ability.*:0.03", "0.03")
    assert parse_compare_rule(" x:3pts ").drop == pytest.approx(0.03) and parse_compare_rule("x:3 pp").drop == pytest.approx(0.03)
    assert parse_compare_rule("tombench.accuracy") == CompareRule("tombench.accuracy", 0.0, False, "tombench.accuracy", "0")
    assert parse_compare_rule("test_tom.py::tb.accuracy").pattern == "test_tom.py::tb.accuracy"
    assert parse_compare_rule("test_tom.py::tb.accuracy:1%").pattern == "test_tom.py::tb.accuracy"
    assert CompareRule("x", 0.1, True).margin(0.8) == pytest.approx(0.08)

    outcomes = pattern(2000)  # 80% in 400 stories
    base = baseline_of(run(records(outcomes)))
    dropped = run(records(flip(outcomes, [i for i in range(2000) if i % 5 == 1][:100])))  # -5 pts
    rules = [parse_compare_rule(t) for t in ("tb.accuracy", "tb.accuracy:10%", "tb.accuracy:0.08", "tb.accuracy:8pts",
                                             "tb.accuracy:5%")]
    strict, rel10, abs08, pts8, rel5 = compare(base, [dropped], rules)
    margins = [r.comparison.margin for r in (strict, rel10, abs08, pts8, rel5) if r.comparison is not None]
    assert margins == pytest.approx([0.0, 0.08, 0.08, 0.08, 0.04])
    assert not strict.passed and rel10.passed and abs08.passed and pts8.passed and not rel5.passed
    assert "tolerated drop 8 pts (10% of the baseline value)" in rel10.message and "tolerated drop 8 pts." in abs08.message
    assert "no drop tolerated (margin 0)" in strict.message
    assert [r.name for r in (strict, rel10, abs08)] == ["tb.accuracy:baseline", "tb.accuracy:baseline-10%",
                                                         "tb.accuracy:baseline-0.08"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty rule"),
        ("x:-2%", "cannot read the drop '-2%'"),
        ("x:2.5.1", "cannot read the drop"),
        ("x:", "nothing after the colon"),
        (":2%", "must be a non-empty name"),
        ("tb accuracy:2%", "without spaces"),
        ("x:100%", "below 100%"),
        ("x:3", "absolute drop is a rate below 1 .*'3pts'.*'3%'"),
    ],
)
def test_bad_compare_rules_name_the_option(text: str, match: str) -> None:
    with pytest.raises(TomConfigError, match=match) as info:
        parse_compare_rule(text)
    assert "--tom-compare-fail" in str(info.value)


def test_lower_is_better_metrics_regress_when_they_rise() -> None:
    outcomes = pattern(300, wrong=0)  # all right
    base = baseline_of(run(records(outcomes)))
    errors = run(records(flip(outcomes, range(0, 300, 5), to=E)))  # 20% errors, one per story
    [err] = compare(base, [errors], [parse_compare_rule("tb.errors:1pts")])
    c = err.comparison
    assert c is not None and not err.passed
    assert c.base == pytest.approx(0.0) and c.new == pytest.approx(0.2) and c.diff.point == pytest.approx(0.2)
    assert c.diff.low > 0 and "lower is better" in c.diff.method
    assert "worse (0->1) (60, first 20):" in err.message and "tolerated rise 1 pts" in err.message and "(margin 0)" not in err.message
    assert err.estimate is not None and err.estimate.point == pytest.approx(0.2)

    # fewer unparseable answers than the baseline: an improvement, whatever the margin
    noisy = flip(outcomes, range(0, 300, 5), to=U)
    base_u = baseline_of(run(records(noisy)))
    [unp] = compare(base_u, [run(records(outcomes))], [parse_compare_rule("tb.unparseable")])
    assert unp.passed and unp.comparison is not None and unp.comparison.diff.point == pytest.approx(-0.2)
    assert unp.comparison.right_to_wrong == 0 and unp.comparison.wrong_to_right == 60


def test_holm_runs_across_every_comparison_of_every_rule() -> None:
    outcomes = pattern(400)
    base = baseline_of(run(records(outcomes)))
    # a few flips on beliefs (odd items), none on emotions
    cur = run(records(flip(outcomes, [i for i in range(400) if i % 5 == 1][:12])))
    rules = [parse_compare_rule("tb.ability.*"), parse_compare_rule("tb.accuracy:1pts"), parse_compare_rule("tb.ability.belief")]
    results = compare(base, [cur], rules)
    assert [r.name for r in results] == ["tb.ability.belief:baseline", "tb.ability.emotion:baseline", "tb.accuracy:baseline-1pts"]
    comps = {r.name: r.comparison for r in results if r.comparison is not None}
    expected = holm({n: c.p_regression for n, c in comps.items()}, 0.05)
    for name, c in comps.items():
        assert c.p_adjusted == pytest.approx(expected[name][0]) and c.regressed == expected[name][1]
    assert all("Holm-adjusted over 3 comparisons" in r.message for r in results)
    belief = comps["tb.ability.belief:baseline"]
    assert belief.p_adjusted > belief.p_regression


def test_flipped_items_are_listed_with_node_ids_and_messages_capped_in_the_message() -> None:
    outcomes = pattern(400)
    base = baseline_of(run(records(outcomes)))
    worse_idx = [i for i in range(400) if i % 5 == 1][:30]
    better_idx = [i for i in range(400) if i % 5 == 0][:3]
    cur = flip(flip(outcomes, worse_idx), better_idx, to=C)
    [r] = compare(base, [run(records(cur))], [parse_compare_rule("tb.accuracy")])
    assert [d["id"] for d in r.details["right_to_wrong"]] == [f"q{i:04d}" for i in worse_idx]
    assert r.details["right_to_wrong"][0] == {"id": "q0001", "message": "q0001: expected A, got B",
                                              "nodeid": "test_tom.py::tb[q0001]"}
    assert r.details["wrong_to_right"] == [{"id": f"q{i:04d}", "baseline_message": f"q{i:04d}: expected A, got B"}
                                           for i in better_idx]
    assert "right->wrong (30, first 20):" in r.message and "wrong->right (3):" in r.message
    assert "  test_tom.py::tb[q0001]: q0001: expected A, got B" in r.message
    assert "test_tom.py::tb[q0096]" in r.message and "test_tom.py::tb[q0101]" not in r.message  # the 21st is left out
    json.dumps(r.to_dict())


def test_derived_metrics_pair_assertions_and_list_their_messages() -> None:
    recs = records(pattern(10, wrong=0))

    def der(ok: Sequence[bool]) -> list[DerivedRecord]:
        return [DerivedRecord("toy", f"s{i}:coherence", "coherence", Verdict.PASSED if good else Verdict.FAILED, (),
                              facets={"story": f"s{i}"}, message="" if good else f"s{i} contradicts itself",
                              nodeid=f"test_tom.py::tb_coherence[s{i}]") for i, good in enumerate(ok)]

    base = baseline_of(run(recs, der([True] * 40)))
    [r] = compare(base, [run(recs, der([i >= 20 for i in range(40)]))], [parse_compare_rule("tb.coherence")])
    assert not r.passed and r.comparison is not None and r.comparison.right_to_wrong == 20
    assert r.details["right_to_wrong"][0]["message"] == "s0 contradicts itself"
    assert "test_tom.py::tb_coherence[s0]: s0 contradicts itself" in r.message


def test_a_rule_matching_nothing_fails_and_lists_the_metrics() -> None:
    base = baseline_of(run(records(pattern(20))))
    [r] = compare(base, [run(records(pattern(20))), run(records(pattern(5)), suite_id="other")],
                  [parse_compare_rule("tb.acuracy:2%")])
    assert not r.passed and r.kind == "baseline" and r.comparison is None
    assert "'tb.acuracy' selects no metric present in both" in r.message and "tb.accuracy" in r.message
    assert "Only in this run: other.ability.belief" in r.message


def test_noise_floor_comes_from_this_run_then_the_baseline() -> None:
    outcomes = pattern(100)
    base = baseline_of(run(records(outcomes), noise=0.05))
    rule = [parse_compare_rule("tb.accuracy")]

    def noise(**kw: Any) -> tuple[float | None, str]:
        current = run(records(outcomes), noise=kw.pop("run_noise", None))
        [r] = compare(base, [current], rule, **kw)
        assert r.comparison is not None
        return r.comparison.noise_flip_rate, r.details["noise_source"]

    assert noise() == (0.05, "stored with the baseline")
    assert noise(run_noise=0.08) == (0.08, "measured in this run for suite tb")
    assert noise(run_noise=0.08, noise_flip_rate=0.1) == (0.1, "measured in this run")


def test_settings_diff_reads_a_setting_added_later_as_what_runs_did_before() -> None:
    before = {"evaluator": "2023"}
    assert settings_diff({"prompt": "vanilla"}, {"prompt": "vanilla", "evaluator": "2023"}, before) == []
    assert settings_diff({"prompt": "vanilla"}, {"prompt": "vanilla", "evaluator": "2024"}, before) == [
        'evaluator: "2023" (saved before this setting existed) -> "2024"']
    assert settings_diff({"evaluator": "2024"}, {"evaluator": "2024"}, before) == []  # a saved value wins
    assert settings_diff({}, {"other": "x"}, before) == ['other: (unset) -> "x"']  # no `before`: still refused


def test_the_baseline_keeps_each_parsed_answer_and_flips_carry_it() -> None:
    base_recs = [r.replace(parsed="A" if r.outcome is C else "B") for r in records([C, X, C, X])]
    base = baseline_of(run(base_recs))
    assert base.suites["tb"].items["q0000"].answer == "A" and base.suites["tb"].items["q0001"].answer == "B"
    [result] = compare(base, [run(records([X, C, C, X]))], [parse_compare_rule("tb.accuracy")])
    worse, better = result.details["right_to_wrong"], result.details["wrong_to_right"]
    assert [(f["id"], f["baseline_answer"]) for f in worse] == [("q0000", "A")]
    assert [(f["id"], f["baseline_answer"]) for f in better] == [("q0001", "B")]
    unparsed = baseline_of(run(records([C, X])))  # nothing parsed: no answer stored, none listed
    assert unparsed.suites["tb"].items["q0000"].answer is None
    [result] = compare(unparsed, [run(records([X, C]))], [parse_compare_rule("tb.accuracy")])
    assert "baseline_answer" not in result.details["right_to_wrong"][0]
