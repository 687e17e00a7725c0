"""The JSON report validates against the schema shipped in the package."""

from __future__ import annotations

import jsonschema
import pytest

from pytest_tom.benchmarks import Registry
from pytest_tom.constants import REPORT_SCHEMA_VERSION
from pytest_tom.report import build_report, schema, summary_lines


def _record(outcome: str, qid: str = "en-false_belief_task-0001") -> dict:
    return {
        "benchmark": "tombench", "qid": qid, "outcome": outcome, "suite": "tombench", "nodeid": f"tombench[{qid}]",
        "facets": {"language": "en", "task": "fbt", "category": "Belief", "ability": "Content false beliefs",
                   "sub_label": "Content false beliefs", "qtype": "four_choice", "story": ""},
        "score": None, "parsed": "A", "gold": "A", "responses": ["[[A]]"], "request_keys": ["0" * 64],
        "prompt_hash": "1" * 64, "parse_rate": 1.0, "details": {}, "message": "",
        "suite_info": {"name": "tombench", "settings": {"languages": "en", "tries": 1}},
    }


def test_report_validates_and_carries_versions() -> None:
    report = build_report(
        [_record("correct"), _record("unparseable", "en-false_belief_task-0002")],
        [{"kind": "group", "suite": "tombench", "nodeid": "g", "benchmark": "tombench", "gid": "s1", "group_kind": "coherence",
          "facets": {}, "members": ["a"], "failed_members": [], "outcome": "passed"}],
        Registry(),
        model={"uri": "random:0", "fingerprint": "random:v1:0"},
        engine={"questions": 2, "requests": 2, "unique_requests": 2, "cache_hits": 0, "model_requests": 2, "errors": 0, "usage": {}},
        responses={"0" * 64: {"text": "[[A]]", "error": None}},
    )
    jsonschema.validate(report, schema())
    assert report["schema_version"] == REPORT_SCHEMA_VERSION
    suite = report["suites"][0]
    assert suite["tables"][0]["rows"][0]["n"] == 2 and suite["groups"] == {"coherence": {"passed": 1, "failed": 0, "error": 0}}
    assert suite["metrics"]["languages"]["en"]["tasks"]["fbt"]["unparseable"] == 1
    assert "suite_info" not in report["items"][0]
    text = "\n".join(summary_lines(report, Registry()))
    assert "task AVG" in text and "coherence groups: 1/1 passed" in text


def test_schema_rejects_an_unknown_outcome() -> None:
    report = build_report([_record("maybe")], [], Registry(), model={"uri": "x"})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, schema())
