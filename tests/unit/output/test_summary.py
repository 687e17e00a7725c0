"""The terminal summary, built from the report dict (the same in one process and on the xdist controller)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from helpers.toy_benchmark import Toy as ToyBase

from pytest_tom.framework.metric import Metric
from pytest_tom.metrics import wilson_interval
from pytest_tom.output.report import build_report
from pytest_tom.output.summary import GROUP_WIDTH, pct, summary_lines, table_lines
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict


class Toy(ToyBase):
    label = "toy paper accuracy"

class BrokenLines(Toy):
    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        raise KeyError("accuracy")


def rec(qid: str, outcome: Outcome, language: str) -> Record:
    return Record("toy", qid, outcome, {"language": language}, parse_rate=0.0 if outcome is Outcome.UNPARSEABLE else 1.0,
                  suite="toy", nodeid=f"toy[{qid}]")


RECORDS = [rec("q1", Outcome.CORRECT, "en"), rec("q2", Outcome.CORRECT, "en"), rec("q3", Outcome.UNPARSEABLE, "en"),
           rec("q4", Outcome.INCORRECT, "zh"), rec("q5", Outcome.ERROR, "zh")]
DERIVED = [DerivedRecord("toy", f"s{i}", "coherence", v, ("q1",), suite="toy") for i, v in
           enumerate([Verdict.PASSED, Verdict.PASSED, Verdict.FAILED, Verdict.ERROR])]
ENGINE = {"questions": 5, "requests": 7, "unique_requests": 6, "cache_hits": 2, "model_requests": 4, "model_seconds": 1.25,
          "errors": 1, "scoring": {"embed:minilm": {"requests": 9, "unique_requests": 8, "cache_hits": 3, "model_requests": 5,
                                                    "model_seconds": 0.5, "errors": 0}}}


def report(**kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"model": {"uri": "mock:first", "fingerprint": "0123456789abcdefXYZ"}, "engine": ENGINE}
    args.update(kw)
    return build_report(RECORDS, DERIVED, {"toy": {"name": "toy", "settings": {}}}, lambda sid: Toy({}), **args)


def row(label: str, n: int, correct: int, parse: float, unparse: int, errors: int) -> str:
    lo, hi = wilson_interval(correct, n)
    return (f"  {label:<{GROUP_WIDTH}} {n:>5} {100 * correct / n:6.1f} {100 * lo:5.1f}-{100 * hi:5.1f}  "
            f"{100 * parse:6.1f} {unparse:>7} {errors:>6}")


def test_the_summary_of_a_small_report() -> None:
    lines = summary_lines(report(), lambda sid: Toy({}))
    group = "group (acc %: % of the group's questions right)"  # per question; benchmark lines label their macro means
    header = f"  {group:<{GROUP_WIDTH}} {'n':>5} {'acc %':>6} {'95% CI':>13} {'parse %':>7} {'unparse':>7} {'errors':>6}"
    assert lines == [
        "model: mock:first (fingerprint 0123456789abcdef)",
        "engine: 5 questions, 7 requests (6 unique), 2 from cache, 4 sent to the model in 1.25 s, 1 errors",
        "scoring model embed:minilm: 8 unique requests, 3 from cache, 5 computed in 0.5 s, 0 errors",
        "",
        "toy (toy, 5 questions)",
        header,
        row("all", 4, 2, 0.75, 1, 1),
        row("en", 3, 2, 2 / 3, 1, 0),
        row("zh", 1, 0, 1.0, 0, 1),
        "  toy paper accuracy 50.0",
        "  coherence groups: 2/4 passed, 1 failed, 1 errors",
    ]


def test_skipped_derived_results_are_counted_only_when_there_are_some() -> None:
    rep = report()
    rep["suites"][0]["groups"]["coherence"]["skipped"] = 2
    assert summary_lines(rep, lambda sid: None)[-1] == "  coherence groups: 2/6 passed, 1 failed, 1 errors, 2 skipped"


def test_without_engine_statistics_or_fingerprint() -> None:
    lines = summary_lines(report(engine=None, model={"uri": "mock:first"}), lambda sid: Toy({}))
    assert lines[0] == "model: mock:first"
    assert not any(line.startswith(("engine:", "scoring model")) for line in lines)


def test_no_scoring_line_without_scoring_models() -> None:
    engine = {k: v for k, v in ENGINE.items() if k != "scoring"}
    lines = summary_lines(report(engine=engine), lambda sid: Toy({}))
    assert lines[1].startswith("engine: ") and not lines[2].startswith("scoring model")


def test_a_broken_metric_summary_still_prints_the_rest() -> None:
    lines = summary_lines(report(), lambda sid: BrokenLines({}))
    assert "  (metrics unavailable: KeyError: 'accuracy')" in lines
    assert lines[-1].startswith("  coherence groups:")
    without = summary_lines(report(), lambda sid: None)
    assert not any("toy paper accuracy" in line or "metrics unavailable" in line for line in without)


def test_table_lines_label_and_truncation() -> None:
    long = "x" * 80
    table = [{"by": ["task"], "rows": [{"facets": {"task": long, "ability": "y"}, "n": 0, "correct": 0, "accuracy": None,
                                        "ci95": [0.0, 1.0], "unparseable": 0, "errors": 0, "parse_rate": 0.0}]}]
    _, line = table_lines(table)
    assert line.startswith("  " + "x" * GROUP_WIDTH + " ")
    assert "   n/a" in line and "  0.0-100.0" in line
    assert pct(None) == "   n/a" and pct(0.5) == "  50.0" and pct(1.0) == " 100.0"
