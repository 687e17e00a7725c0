"""Third-party benchmarks and backends registered from a conftest.py, end to end.

The toy benchmark asks "a+a" sums; the toy backend adds (optionally wrong for odd
operands). Together they exercise the public extension API with no real data and
no model: hook registration, `--tom-<name>-*` options and their ini twins, marks,
a derived assertion with a custom rule, node-id selection, and pytest-xdist.
"""

from __future__ import annotations

import json

import pytest

TOY_CONFTEST = '''
import re

import pytest_tom
from pytest_tom import (Benchmark, BenchmarkOption, Derived, GenerationSettings, Judgement, Message, Outcome, Record,
                        Request, Response, Sample, Story)


def sums_agree(derived, members):
    """All even-operand sums answered correctly, or say which were not."""
    bad = [r.sample_id for r in members if not r.passed]
    return Judgement(not bad, message="wrong sums: " + ", ".join(bad), failed_members=tuple(bad))


class Toy(Benchmark):
    name = "toy"
    description = "Toy arithmetic benchmark"
    options = (BenchmarkOption("count", "4", "How many questions.", kind=int),)
    mark_docs = {"toy": "Toy benchmark items.", "even": "Even operands.", "odd": "Odd operands."}
    strata = ("parity",)
    summary_facets = (("parity",),)
    rules = {"all_even": sums_agree}

    def load(self, source):
        return [Sample(benchmark="toy", id=f"q{i}", context=Story(f"{i}+{i}"), question="What is the sum?", choices=(),
                       gold=str(2 * i), characters=(), facets={"parity": "even" if i % 2 == 0 else "odd"},
                       marks=("toy", "even" if i % 2 == 0 else "odd"), extra=None, source=f"toy q{i}")
                for i in range(self.settings["count"])]

    def program(self, sample):
        (r,) = yield [Request(messages=(Message("user", sample.context.render() + "\\n" + sample.question),),
                              settings=GenerationSettings(max_new_tokens=8))]
        text = (r.text or "").strip()
        outcome = Outcome.UNPARSEABLE if not text.isdigit() else Outcome.CORRECT if text == sample.gold else Outcome.INCORRECT
        return Record(benchmark="toy", sample_id=sample.id, outcome=outcome, facets=dict(sample.facets), parsed=text,
                      gold=sample.gold, responses=(r.text,), message=f"toy {sample.id}: answered {text!r}, expected {sample.gold}")

    def derived(self, samples):
        return [Derived(benchmark="toy", id="evens", kind="all_even",
                        members=tuple(s.id for s in samples if s.facets["parity"] == "even"), marks=("toy", "even"))]


class Adder(pytest_tom.Model):
    def __init__(self, wrong_odd):
        self.wrong_odd = wrong_odd

    def fingerprint(self):
        return f"adder:{self.wrong_odd}"

    def generate(self, requests):
        out = []
        for r in requests:
            with open("calls.log", "a") as log:
                log.write(r.key + "\\n")
            a, b = map(int, re.match(r"(\\d+)\\+(\\d+)", r.messages[-1].content).groups())
            out.append(Response(text=str(a + b + (1 if self.wrong_odd and a % 2 else 0))))
        return out


def pytest_tom_add_benchmarks(registry):
    registry.add(Toy)


def pytest_tom_add_backends(registry):
    registry.add("adder", lambda spec: Adder(wrong_odd=spec == "wrong_odd"))
'''

BASE = ["-p", "no:cacheprovider", "--tom-no-cache"]


@pytest.fixture
def toy(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(TOY_CONFTEST)
    return pytester


def test_a_conftest_benchmark_and_backend_run_end_to_end(toy: pytest.Pytester) -> None:
    result = toy.runpytest(*BASE, "--tom-benchmark=toy", "--tom-model=adder", "--tom-set=toy.count=6", "--tom-report=r.json")
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(["*pytest-tom summary*", "model: adder (fingerprint adder:False)",
                                 "toy (toy, 6 questions)", "*all_even groups: 1/1 passed*"])
    report = json.loads((toy.path / "r.json").read_text())
    assert [i["nodeid"] for i in report["items"]][:2] == ["toy::toy[q0]", "toy::toy[q1]"]
    assert report["groups"][0]["members"] == ["q0", "q2", "q4"]


def test_its_option_is_set_in_the_ini_file_and_listed(toy: pytest.Pytester) -> None:
    toy.makeini("[pytest]\ntom_set = toy.count=3\n")
    result = toy.runpytest(*BASE, "--tom-benchmark=toy", "--tom-model=adder", "--collect-only", "-q")
    assert sum(line.startswith("toy::toy[") for line in result.outlines) == 3
    listed = toy.runpytest("--tom-set", "list")
    listed.stdout.fnmatch_lines(["toy:", "  toy.count=N  (default: 4)", "      How many questions."])


def test_its_deprecated_flag_and_ini_key_still_work(toy: pytest.Pytester) -> None:
    toy.makeini("[pytest]\ntom_toy_count = 3\n")
    result = toy.runpytest(*BASE, "--tom-benchmark=toy", "--tom-model=adder", "--collect-only", "-q")
    assert sum(line.startswith("toy::toy[") for line in result.outlines) == 3
    result.stdout.fnmatch_lines(["*TomDeprecationWarning: ini key tom_toy_count is deprecated*tom_set: toy.count=3"])
    result = toy.runpytest(*BASE, "--tom-benchmark=toy", "--tom-model=adder", "--tom-toy-count=2", "--collect-only", "-q")
    assert sum(line.startswith("toy::toy[") for line in result.outlines) == 2
    markers = toy.runpytest("--markers", "--tom-model=adder")  # facet marks are registered where pytest-tom runs
    markers.stdout.fnmatch_lines(["@pytest.mark.even: Even operands."])


def test_wrong_answers_fail_the_item_and_its_derived_rule(toy: pytest.Pytester) -> None:
    toy.makeconftest(TOY_CONFTEST.replace("a % 2", "True"))
    result = toy.runpytest(*BASE, "--tom-benchmark=toy", "--tom-model=adder:wrong_odd", "-m", "even", "--tom-detail=full")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*toy q0: answered '1', expected 0*", "*wrong sums: q0, q2*"])


def test_marks_and_node_ids_select_items(toy: pytest.Pytester) -> None:
    result = toy.runpytest(*BASE, "--tom-model=adder", "toy[q1]", "toy::toy[q2]", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*toy::toy[[]q1[]] PASSED*", "*toy::toy[[]q2[]] PASSED*"])
    partial = toy.runpytest(*BASE, "--tom-model=adder", "toy[q0]", "toy_all_even[evens]", "-rs")
    partial.assert_outcomes(passed=1, skipped=1)
    partial.stdout.fnmatch_lines(["*only 1 of 2 questions are selected*"])
    odd = toy.runpytest(*BASE, "--tom-model=adder", "--tom-benchmark=toy", "-m", "odd", "-q")
    odd.assert_outcomes(passed=2)


def test_an_unknown_scheme_names_the_registered_ones(toy: pytest.Pytester) -> None:
    result = toy.runpytest(*BASE, "--tom-benchmark=toy", "--tom-model=subtracter")
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: --tom-model 'subtracter': unknown scheme 'subtracter'; known: adder, *"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.slow
def test_xdist_splits_the_work_and_the_controller_judges_derived_results(toy: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    args = [*BASE, "--tom-benchmark=toy", "--tom-model=adder:wrong_odd", "--tom-set=toy.count=8"]
    single = toy.runpytest_subprocess(*args, "--tom-report=single.json")
    calls = (toy.path / "calls.log").read_text().splitlines()
    (toy.path / "calls.log").unlink()
    multi = toy.runpytest_subprocess(*args, "-n", "2", "--tom-report=multi.json")
    assert multi.parseoutcomes() == single.parseoutcomes() == {"passed": 5, "failed": 4}
    assert sorted((toy.path / "calls.log").read_text().splitlines()) == sorted(calls)  # each request answered once
    multi.stdout.fnmatch_lines(["*pytest-tom summary*", "toy (toy, 8 questions)", "*all_even groups: 1/1 passed*"])
    a, b = (json.loads((toy.path / f).read_text()) for f in ("single.json", "multi.json"))
    assert {i["nodeid"]: i["outcome"] for i in a["items"]} == {i["nodeid"]: i["outcome"] for i in b["items"]}
    assert a["groups"] == b["groups"]
    assert b["engine"]["model_requests"] == 8 and len(b["responses"]) == 8


# --- the public hooks, implemented in a conftest.py ------------------------------------------------

RESULTS_HOOK = '''

import json as _json
import os as _os
from pathlib import Path as _Path


def pytest_tom_results_ready(session, results):
    """Log each call: who called, in which process, and the records it was handed."""
    assert all(isinstance(r, Record) for r in results.values())
    line = {"pid": _os.getpid(), "session": type(session).__name__,
            "outcomes": {key: r.outcome.value for key, r in results.items()}}
    with open(_Path(__file__).with_name("results.log"), "a") as log:
        log.write(_json.dumps(line) + "\\n")
'''


def _results_calls(path: object) -> list[dict[str, object]]:
    from pathlib import Path

    return [json.loads(line) for line in (Path(str(path)) / "results.log").read_text().splitlines()]


@pytest.mark.parametrize("workers", [None, "2"])
def test_results_ready_gets_each_answered_planning_unit_once(pytester: pytest.Pytester, workers: str | None) -> None:
    """One process answers one unit: one call with every question's record. Under -n 2 each worker calls it
    for its own block (the hook runs where the engine answers), and the blocks make up the run."""
    if workers:
        pytest.importorskip("xdist")
    pytester.makeconftest(TOY_CONFTEST + RESULTS_HOOK)
    args = [*BASE, "--tom-benchmark=toy", "--tom-model=adder:wrong_odd", "--tom-set=toy.count=6"]
    result = pytester.runpytest_subprocess(*args, *(("-n", workers) if workers else ()))
    assert result.parseoutcomes() == {"passed": 4, "failed": 3}
    calls = _results_calls(pytester.path)
    assert {c["session"] for c in calls} == {"TomSession"}
    assert len(calls) == (2 if workers else 1) and len({c["pid"] for c in calls}) == len(calls)
    merged: dict[str, object] = {}
    for c in calls:
        outcomes = c["outcomes"]
        assert isinstance(outcomes, dict) and not set(outcomes) & set(merged)  # no question answered twice
        merged.update(outcomes)
    assert merged == {f"toy::q{i}": "correct" if i % 2 == 0 else "incorrect" for i in range(6)}


MAKE_MODEL_HOOK = '''


def pytest_tom_make_model(uri, config):
    """`custom:` URIs are this conftest's; any other is left to the registered schemes."""
    assert config.getoption("tom_model") == uri
    return Adder(wrong_odd=True) if uri == "custom:wrong" else None
'''


def test_make_model_builds_its_uris_and_leaves_the_rest_to_the_schemes(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(TOY_CONFTEST + MAKE_MODEL_HOOK)
    args = [*BASE, "--tom-benchmark=toy", "--tom-set=toy.count=4"]
    pytester.runpytest(*args, "--tom-model=custom:wrong").assert_outcomes(passed=3, failed=2)
    pytester.runpytest(*args, "--tom-model=adder").assert_outcomes(passed=5)
    result = pytester.runpytest(*args, "--tom-model=nothing:here")
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: --tom-model 'nothing:here': unknown scheme 'nothing'*"])
