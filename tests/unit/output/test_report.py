"""The JSON report: built from typed records, valid against the shipped schema, written atomically, loaded back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers.toy_benchmark import Toy as ToyBase

from pytest_tom.constants import REPORT_SCHEMA_VERSION
from pytest_tom.errors import TomDataError
from pytest_tom.framework.base import Benchmark
from pytest_tom.framework.metric import Metric
from pytest_tom.output.report import build_report, item_dict, load_report, schema, write_report
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.request import sha256_text


class Toy(ToyBase):
    """The toy benchmark with a list-valued metric besides its accuracy."""

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return [*super().metrics(records), Metric(("ids",), tuple(sorted(r.sample_id for r in records)), unit="list")]

class Broken(Toy):
    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return [Metric(("x",), 1 / 0)]


KEY_A, KEY_B = sha256_text("a"), sha256_text("b")


def rec(qid: str, outcome: Outcome, language: str = "en", suite: str = "toy", **kw: Any) -> Record:
    return Record("toy", qid, outcome, {"language": language}, parsed="A", gold="A", responses=("[[A]]",),
                  request_keys=(KEY_A, KEY_B), suite=suite, nodeid=f"{suite}[{qid}]", **kw)


def group(gid: str, verdict: Verdict, suite: str = "toy", kind: str = "coherence") -> DerivedRecord:
    return DerivedRecord("toy", gid, kind, verdict, ("q1", "q2"), failed_members=("q2",) if verdict is Verdict.FAILED else (),
                         message="q2 failed" if verdict is Verdict.FAILED else "", suite=suite, nodeid=f"{suite}_{kind}[{gid}]")


RECORDS = [rec("q1", Outcome.CORRECT), rec("q2", Outcome.INCORRECT, language="zh"),
           rec("q3", Outcome.UNPARSEABLE, parse_rate=0.0), rec("q4", Outcome.ERROR, parse_rate=0.0, message="model error: x")]
DERIVED = [group("s1", Verdict.PASSED), group("s2", Verdict.FAILED), group("s3", Verdict.ERROR)]
SUITES = {"toy": {"name": "toy", "settings": {"tries": 1}}}
ENGINE = {"questions": 4, "requests": 8, "unique_requests": 2, "cache_hits": 0, "model_requests": 2, "errors": 1,
          "waves": 1, "model_seconds": 0.5, "usage": {}, "scoring": {"embed:a": {"requests": 1, "model_requests": 1}}}


def toy_for(sid: str) -> Benchmark[Any] | None:
    return Toy({})


def make(records: Sequence[Record] = RECORDS, derived: Sequence[DerivedRecord] = DERIVED, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"model": {"uri": "mock:first", "fingerprint": "mock:v1"}, "engine": ENGINE,
                            "responses": {KEY_A: {"text": "[[A]]", "error": None}}}
    args.update(kw)
    benchmark_for = args.pop("benchmark_for", toy_for)
    return build_report(records, derived, args.pop("suites", SUITES), benchmark_for, **args)


# -- building ----------------------------------------------------------------------------------------------------


def test_report_validates_and_carries_versions() -> None:
    report = make()
    jsonschema.validate(report, schema())
    assert report["schema_version"] == REPORT_SCHEMA_VERSION
    assert set(report) == {"schema_version", "pytest_tom_version", "created", "model", "engine", "suites", "items", "groups",
                           "responses"}
    assert report["model"] == {"uri": "mock:first", "fingerprint": "mock:v1"} and report["engine"] == ENGINE
    assert report["responses"] == {KEY_A: {"text": "[[A]]", "error": None}}


def test_a_suite_has_tables_metrics_and_derived_counts() -> None:
    [suite] = make()["suites"]
    assert (suite["id"], suite["benchmark"], suite["settings"], suite["n_items"]) == ("toy", "toy", {"tries": 1}, 4)
    overall, by_language = suite["tables"]
    assert overall["by"] == []
    assert [(r["n"], r["correct"], r["unparseable"], r["errors"]) for r in overall["rows"]] == [(3, 1, 1, 1)]
    assert by_language["by"] == ["language"]
    rows = [(r["facets"], r["n"], r["correct"]) for r in by_language["rows"]]
    assert rows == [({"language": "en"}, 2, 1), ({"language": "zh"}, 1, 0)]
    assert suite["metrics"] == {"accuracy": pytest.approx(1 / 3), "ids": ["q1", "q2", "q3", "q4"]}
    assert suite["groups"] == {"coherence": {"passed": 1, "failed": 1, "error": 1}}


def test_items_are_the_records_with_their_prompt_hash() -> None:
    report = make()
    first = report["items"][0]
    assert first == {**RECORDS[0].to_dict(), "prompt_hash": sha256_text(f"{KEY_A}\n{KEY_B}")}
    assert item_dict(RECORDS[0]) == first
    assert [i["qid"] for i in report["items"]] == ["q1", "q2", "q3", "q4"]
    assert report["groups"] == [d.to_dict() for d in DERIVED]


def test_suites_are_split_and_sorted_by_id() -> None:
    records = [rec("q1", Outcome.CORRECT, suite="b-suite"), rec("q2", Outcome.CORRECT, suite="a-suite")]
    derived = [group("g", Verdict.PASSED, suite="c-suite", kind="all")]
    report = make(records, derived, suites={})
    jsonschema.validate(report, schema())
    assert [s["id"] for s in report["suites"]] == ["a-suite", "b-suite", "c-suite"]
    only_derived = report["suites"][2]
    assert only_derived["benchmark"] == "toy" and only_derived["n_items"] == 0 and only_derived["tables"] == []
    assert only_derived["metrics"] == {} and only_derived["groups"] == {"all": {"passed": 1, "failed": 0, "error": 0}}


def test_a_benchmark_that_cannot_be_rebuilt_still_gets_a_report() -> None:
    report = make(benchmark_for=lambda sid: None)
    jsonschema.validate(report, schema())
    [suite] = report["suites"]
    assert suite["metrics"] == {"error": "benchmark 'toy' could not be rebuilt from its settings"}
    assert [t["by"] for t in suite["tables"]] == [[]]


def test_a_broken_metric_still_gets_a_report() -> None:
    report = make(benchmark_for=lambda sid: Broken({}))
    jsonschema.validate(report, schema())
    assert report["suites"][0]["metrics"] == {"error": "ZeroDivisionError: division by zero"}


def test_an_empty_run_is_a_valid_report() -> None:
    report = build_report([], [], {}, toy_for, model={"uri": None})
    jsonschema.validate(report, schema())
    assert report["suites"] == [] and report["engine"] == {} and report["responses"] == {}


def test_schema_rejects_an_unknown_outcome() -> None:
    report = make()
    report["items"][0]["outcome"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, schema())
    report = make()
    report["items"][0]["request_keys"] = ["not-a-hash"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, schema())


def test_a_report_holding_a_skipped_derived_result_validates() -> None:
    report = make(derived=[*DERIVED, group("s4", Verdict.SKIPPED)])
    assert report["suites"][0]["groups"]["coherence"]["skipped"] == 1
    jsonschema.validate(report, schema())


# -- writing ---------------------------------------------------------------------------------------------------------


def test_write_report_creates_folders_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "out" / "deeper" / "report.json"
    report = make()
    write_report(path, report)
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(json.dumps(report))
    assert [p.name for p in path.parent.iterdir()] == ["report.json"]
    write_report(path, make(records=RECORDS[:1]))  # replaces the previous report
    assert len(json.loads(path.read_text(encoding="utf-8"))["items"]) == 1


def test_a_report_that_cannot_be_written_leaves_the_previous_one_whole(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    write_report(path, make())
    before = path.read_bytes()
    broken = make(records=[rec("q1", Outcome.CORRECT, score=float("nan"))])
    with pytest.raises(ValueError):
        write_report(path, broken)  # NaN is not JSON
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_write_report_keeps_text_readable(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_report(path, make(records=[rec("q1", Outcome.CORRECT, message="汤姆认为球在篮子里")]))
    assert "汤姆认为球在篮子里" in path.read_text(encoding="utf-8")


# -- loading ---------------------------------------------------------------------------------------------------------


def test_a_written_report_loads_back_into_typed_records(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    report = make()
    write_report(path, report)
    loaded = load_report(path)
    assert loaded.records == tuple(RECORDS)
    assert loaded.derived == tuple(DERIVED)
    assert loaded.raw["suites"] == json.loads(json.dumps(report["suites"]))
    assert {r.nodeid: r for r in loaded.records}["toy[q2]"] == RECORDS[1]


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_file_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(TomDataError, match=r"file .*report\.json: invalid JSON \(.* at line 1\)"):
        load_report(path)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match=r"file .*absent\.json: cannot read the report"):
        load_report(tmp_path / "absent.json")


@pytest.mark.parametrize("data", [{"schema_version": "2.0", "items": []}, {"items": []}, [1, 2], "1.1"])
def test_a_file_that_is_not_a_v1_report_is_named_with_the_field(tmp_path: Path, data: Any) -> None:
    path = write(tmp_path / "report.json", data)
    with pytest.raises(TomDataError, match=r"file .*report\.json, field 'schema_version': not a pytest-tom report") as info:
        load_report(path)
    assert info.value.field == "schema_version" and info.value.path == path


@pytest.mark.parametrize(
    "item",
    [
        {"benchmark": "toy", "outcome": "correct"},  # no qid
        {"benchmark": "toy", "qid": "q", "outcome": "maybe"},
        "not an object",
        None,
    ],
)
def test_a_malformed_item_is_named_with_the_file_and_field(tmp_path: Path, item: Any) -> None:
    report = json.loads(json.dumps(make()))
    report["items"].append(item)
    path = write(tmp_path / "report.json", report)
    with pytest.raises(TomDataError, match=r"file .*report\.json, record items\[4\], field 'items': malformed record") as info:
        load_report(path)
    assert info.value.field == "items"


def test_an_item_whose_facets_are_not_an_object_is_a_data_error(tmp_path: Path) -> None:
    report = json.loads(json.dumps(make()))
    report["items"][0]["facets"] = ["en"]
    with pytest.raises(TomDataError, match="malformed record"):
        load_report(write(tmp_path / "report.json", report))


def test_a_malformed_group_is_named_with_its_own_field(tmp_path: Path) -> None:
    report = json.loads(json.dumps(make()))
    del report["groups"][0]["gid"]
    with pytest.raises(TomDataError) as info:
        load_report(write(tmp_path / "report.json", report))
    assert info.value.field == "groups"


def test_add_references_gives_each_suite_its_published_rows_beside_its_values_and_the_notes() -> None:
    from pytest_tom.output.report import add_references, leaves

    metrics = {"languages": {"en": {"task_avg": 0.271, "tasks": {"fbt": {"accuracy": 0.5, "ci95": [0.2, 0.8]}}}}}
    assert leaves(metrics) == {"languages.en.task_avg": 0.271, "languages.en.tasks.fbt.accuracy": 0.5,
                               "languages.en.tasks.fbt.ci95": [0.2, 0.8]}
    report: dict[str, Any] = {"suites": [
        {"id": "tombench", "benchmark": "tombench", "metrics": metrics,
         "settings": {"prompt": "vanilla", "tries": 5, "aggregation": "paper", "partial": True}},
        {"id": "cot", "benchmark": "tombench", "metrics": metrics, "settings": {"prompt": "cot", "tries": 1, "aggregation": "paper"}},
    ]}
    add_references(report, ["chatglm3-6b"])
    first, second = (s["reference"] for s in report["suites"])
    assert first["models"] == ["chatglm3-6b"] and first["notes"] == []
    assert [(r["metric"], r["value"], r["published"]) for r in first["rows"]] == [
        ("languages.en.tasks.fbt.accuracy", 0.5, 0.485), ("languages.en.task_avg", 0.271, 0.403)]
    assert first["rows"][0]["source"] == "Chen et al. 2024 (ToMBench, ACL 2024), Table 2"
    assert first["rows"][0]["settings"] == {"aggregation": "paper", "prompt": "vanilla", "tries": "5"}
    assert second["rows"] == [] and second["notes"] == [
        "no published ChatGLM3-6B row for tombench with tries=1 (published: tries=5)"]
    for entry in (first, second):
        jsonschema.validate(entry, schema()["properties"]["suites"]["items"]["properties"]["reference"])
