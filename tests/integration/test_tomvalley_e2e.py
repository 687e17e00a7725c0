"""ToMValley end to end with pytester: one request per context, items, marks, composition, gates, real data."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers.user_models import install

HELPERS = Path(__file__).resolve().parents[1]
FIXTURES = HELPERS.parent / "fixtures"
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--strict-markers")
CONFTEST = f"""
import sys
sys.path.insert(0, {str(HELPERS.parent)!r})
import json, os
from tests.helpers import tomvalley_oracle

def counted(conversations, settings):
    with open(os.environ["TV_CALLS"], "a") as f:
        f.write(json.dumps(len(conversations)) + "\\n")
    return tomvalley_oracle.model(conversations, settings)

counted.tom_fingerprint = "tomvalley-oracle:v1"
"""


@pytest.fixture
def calls(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return install(pytester, monkeypatch, tmp_path / "calls.log", "tv_model", CONFTEST, "TV_CALLS")


def sent(log: Path) -> int:
    return sum(json.loads(line) for line in log.read_text().splitlines()) if log.exists() else 0


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, "--tom-benchmark=tomvalley", f"--tom-data-dir={FIXTURES}",
                              "--tom-set=tomvalley.contexts=7001-7002", "--tom-model=python:tv_model:counted",
                              "--tom-report=report.json", *args)


def test_the_official_protocol_sends_one_request_per_context(pytester: pytest.Pytester, calls: Path) -> None:
    result = run(pytester, "-q")
    assert sent(calls) == 2  # 127 items, 2 contexts
    outcomes = result.parseoutcomes()
    # 64 right answers + the trial7001 composition item pass; 43 wrong, 20 unparseable and trial7002's composition fail
    assert outcomes.get("passed") == 64 + 1 and outcomes.get("failed") == 43 + 20 + 1
    report = json.loads((pytester.path / "report.json").read_text())
    suite = report["suites"][0]
    assert suite["metrics"]["avg"]["correct"] == 64 and suite["metrics"]["composition"]["all"]["n"] == 83
    assert Counter(g["outcome"] for g in report["groups"]) == {"passed": 1, "failed": 1}
    result.stdout.fnmatch_lines([
        "*engine: 127 questions, 127 requests (2 unique)*",
        "*ToMValley (context, vanilla): 127 questions in 2 contexts; AVG 0.50*",
        "*composition all            n=83 *restoration_error 0.33*",
    ])
    # the answers come from the cache now: no model call at all
    run(pytester, "-q")
    assert sent(calls) == 2


def test_marks_select_items_and_the_question_protocol_asks_each_alone(pytester: pytest.Pytester, calls: Path) -> None:
    result = run(pytester, "-q", "-m", "tomvalley and belief and transformation1", "--tom-set=tomvalley.protocol=question")
    result.assert_outcomes(passed=4, failed=3)  # 3 + 4 belief T1 questions: wrong in 7001, right in 7002
    assert sent(calls) == 7
    collected = run(pytester, "--collect-only", "-q", "-m", "span1_5 or scenario4 and influence")
    collected.stdout.fnmatch_lines(["tomvalley::tomvalley[[]trial7002-type_d_how_1[]]"])
    ids = [line for line in collected.outlines if "::tomvalley[" in line]
    assert len(ids) == 4 + 3 + 3  # T3 of the 5-scenario context, influence in scenario 4 of both contexts


def test_gates_read_the_restoration_rate_and_the_composition_items(pytester: pytest.Pytester, calls: Path) -> None:
    result = run(pytester, "-q", "--tom-threshold=tomvalley.restoration_error<=0.2",
                 "--tom-threshold=tomvalley.accuracy>=0.4", "--tom-threshold=tomvalley.composition>=0.5")
    assert result.ret == 1
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1  # a gate run: wrong answers and compositions are recorded, only gates fail
    result.stdout.fnmatch_lines([
        "*tomvalley.restoration_error = 32.5% (95% interval *, n=83, 2 clusters; *) misses the threshold <= 20.0%*",
        "FAILED tom_gate[[]tomvalley.restoration_error:point<=0.2[]]*",
    ])
    assert "PASS tomvalley.accuracy:point>=0.4" in result.stdout.str()
    assert "PASS tomvalley.composition:point>=0.5" in result.stdout.str()


def test_the_context_length_is_checked_before_sending(pytester: pytest.Pytester) -> None:
    pytest.importorskip("transformers")
    # Both in subprocesses: torch must never be imported while pytester holds a sys.modules snapshot, which
    # removes it afterwards (a second import of torch then fails for every later test of this process).
    model_dir = pytester.path / "tiny"
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
                    "from tests.helpers.tiny_models import build_tiny_model; build_tiny_model(Path(sys.argv[2]))",
                    str(HELPERS.parent), str(model_dir)], check=True, capture_output=True)
    result = pytester.runpytest_subprocess(*QUIET, "--tom-benchmark=tomvalley", f"--tom-data-dir={FIXTURES}",
                                "--tom-set=tomvalley.contexts=7001", f"--tom-model=hf:{model_dir}", "-q")
    result.assert_outcomes(errors=56 + 1)  # and the composition item: an outage is never a failed assertion
    result.stdout.fnmatch_lines(["*model error: ValueError: prompt of * tokens + 8,192 new tokens exceeds the model's "
                                 "* positions; not sent, because truncating it would silently drop part of the prompt*"])


def test_the_real_data_collects_7100_items_in_100_requests(pytester: pytest.Pytester, real_data_dir: Path) -> None:
    result = pytester.runpytest(*QUIET, "--tom-benchmark=tomvalley", f"--tom-data-dir={real_data_dir}",
                                "--collect-only", "-q")
    ids = [line for line in result.outlines if line.startswith("tomvalley::")]
    assert sum("::tomvalley[" in i for i in ids) == 7100 and sum("::tomvalley_composition[" in i for i in ids) == 100
    from pytest_tom.evals.tomvalley import ToMValley
    from pytest_tom.evals.tomvalley.prompts import request_for
    from pytest_tom.framework.base import DataSource

    bench = ToMValley()
    samples = bench.load(DataSource(real_data_dir, False, pytester.path))
    assert len(samples) == 7100
    marks = Counter(m for s in samples for m in s.marks)
    assert marks["understanding"] == 2000 and marks["influence"] == 1500 and marks["transformation"] == 3600
    assert (marks["belief"], marks["emotion"], marks["intention"], marks["action"]) == (1900, 1900, 1900, 1400)
    assert marks["span2_3"] == 800 and marks["scenario5"] == 700 and marks["span1_5"] == 400
    assert len({request_for(s, bench.config).key for s in samples}) == 100
    assert len(bench.derived(samples)) == 100
