"""--tom-html's page (`pytest_tom.output.html`), rendered from hand-built reports: escaping, one chart per facet table,
the baseline differences and flips with both answers, robustness counterexamples, determinism; and the command that
rebuilds it from a stored report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.html_cells import read_block
from helpers.toy_benchmark import Toy

from pytest_tom.output.report import build_report, write_report
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict

pytest.importorskip("matplotlib")

from pytest_tom.__main__ import main  # noqa: E402 - after the skip: the command draws with matplotlib
from pytest_tom.output.html import render_page  # noqa: E402

NASTY = "<script>alert(\"x\")</script> & 'quoted' <b>"


def rec(qid: str, outcome: Outcome, language: str = "en", **kw: Any) -> Record:
    return Record("toy", qid, outcome, {"language": language}, parsed="A" if outcome is Outcome.CORRECT else "B",
                  gold="A", responses=("[[A]]",), suite="toy", nodeid=f"toy[{qid}]", **kw)


def report(*, gates: list[dict[str, Any]] | None = None, derived: tuple[DerivedRecord, ...] = ()) -> dict[str, Any]:
    records = [rec("q1", Outcome.CORRECT, prompt=f"Story.\nWhere is it? {NASTY}"), rec("q2", Outcome.INCORRECT),
               rec("q3", Outcome.CORRECT, "zh"), rec("q4", Outcome.UNPARSEABLE, "zh", message=NASTY)]
    out = build_report(records, derived, {"toy": {"name": "toy", "settings": {}}}, lambda sid: Toy({}), model={"uri": "toy:1"})
    if gates:
        out["gates"] = gates
    return json.loads(json.dumps(out))


def page(rep: dict[str, Any]) -> str:
    return render_page(rep, lambda suite: Toy({}))


def baseline_gate(passed: bool = False) -> dict[str, Any]:
    return {"name": "toy.accuracy:baseline", "kind": "baseline", "metric": "toy.accuracy", "passed": passed,
            "message": f"dropped {NASTY}", "estimate": None,
            "comparison": {"base": 0.75, "new": 0.5, "margin": 0.02, "diff": {"point": -0.25, "low": -0.5, "high": 0.0}},
            "details": {"higher_is_better": True,
                        "right_to_wrong": [{"id": "q2", "message": "q2 wrong", "baseline_answer": "A"}],
                        "wrong_to_right": [{"id": "q3", "baseline_message": "q3 was wrong", "baseline_answer": "C"}]}}


def test_every_text_from_the_data_is_escaped() -> None:
    text = page(report(gates=[baseline_gate()]))
    assert NASTY not in text and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;quoted&#x27;" in text
    assert text.count("<script>") == 1  # the page's own filter script, nothing from the data
    items = read_block(text, "items")
    assert any(NASTY in cell for row in items.rows for cell in row)  # shown as text, exactly


def test_chart_labels_are_escaped_data_never_markup_or_mathtext() -> None:
    rep = report()
    rep["suites"][0]["tables"][1]["rows"][0]["facets"] = {"language": "<en> & $x^2$"}
    svg = page(rep).split("<svg", 1)[1]
    assert "&lt;en&gt; &amp; $x^2$ (n=2)" in re.findall(r"<text[^>]*>([^<]*)</text>", svg)  # drawn as it is
    assert "<en>" not in svg


def test_a_chart_per_facet_table_and_the_paper_metrics() -> None:
    text = page(report())
    assert text.count("<svg") == 1 and "Accuracy by language" in text  # Toy has one summary facet table
    metrics = read_block(text, "metrics")
    assert metrics.rows[0] == ["metric", "value [95% interval] (n)"]
    assert metrics.rows[1] == ["toy accuracy", "50.0"]  # 2 of 4 right (unparseable is wrong), formatted as a rate
    assert not re.findall(r"\w+://", re.sub(r'xmlns(:\w+)?="[^"]*"', "", text))  # no address but XML namespace names


def test_a_baseline_gate_draws_the_differences_and_lists_the_flips_with_both_answers() -> None:
    text = page(report(gates=[baseline_gate()]))
    assert text.count("<svg") == 2 and "Paired differences from the baseline" in text
    assert "largest drop tolerated (-2.0 pts)" in text  # the gate's margin, drawn
    flips = read_block(text, "flips")
    assert flips.rows[0] == ["flip", "question id", "question", "baseline answer", "this run's answer", "gold"]
    assert flips.rows[1][:2] == ["right → wrong", "q2"] and flips.rows[1][3:] == ["A", "B", "A"]
    assert flips.rows[2][:2] == ["wrong → right", "q3"] and flips.rows[2][3:] == ["C", "A", "A"]
    gates = read_block(text, "gates")
    assert "FAIL" in gates.rows[1] and "1 of 1 gates failed" in text


def test_gates_with_different_margins_each_get_their_own_threshold_tick() -> None:
    other = {**baseline_gate(passed=True), "name": "toy.other:baseline", "metric": "toy.other"}
    other["comparison"] = {**other["comparison"], "margin": 0.05}
    text = page(report(gates=[baseline_gate(), other]))
    assert "largest drop tolerated by each" in text and "largest drop tolerated (" not in text
    assert text.count("<svg") == 2  # still one chart of the differences, a bar per gate


def test_robustness_counterexamples_show_original_and_perturbed_side_by_side() -> None:
    message = ("invariance rename broken on q1 after 3 perturbation(s); minimal example (1 edit(s)): Anne -> Beth\n"
               "  original:  'A' (right)\n  perturbed: 'B' (wrong)\n"
               "  original question:  Where is <Anne>?\n  perturbed question: Where is <Beth>?\n"
               "  original context:   Anne hides it.\n  perturbed context:  Beth hides it.")
    broken = DerivedRecord("toy", "q1-rename", "robustness", Verdict.FAILED, ("q1",), message=message, suite="toy",
                           details={"strategy": "rename", "original_answer": "'A' (right)", "perturbed_answer": "'B' (wrong)",
                                    "minimal": {"change": "Anne -> Beth"}})
    text = page(report(derived=(broken,)))
    rows = read_block(text, "counterexamples").rows
    assert rows[1][:3] == ["q1-rename", "rename", "Anne -> Beth"]
    assert ["answer", "'A' (right)", "'B' (wrong)"] in rows
    assert ["question", "Where is <Anne>?", "Where is <Beth>?"] in rows
    assert ["context", "Anne hides it.", "Beth hides it."] in rows


def test_the_page_is_a_function_of_the_report_alone() -> None:
    rep = report(gates=[baseline_gate()])
    assert page(rep) == page(json.loads(json.dumps(rep)))
    unknown = {**rep, "suites": [{**rep["suites"][0], "benchmark": "no-such-benchmark"}]}
    assert "metrics unavailable: benchmark no-such-benchmark could not be rebuilt" in render_page(unknown)


def test_the_command_rebuilds_the_page_from_a_stored_report(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    records = [Record("tombench", "q1", Outcome.CORRECT, {"language": "en"}, parsed="A", gold="A", suite="tombench")]
    rep = build_report(records, (), {"tombench": {"name": "tombench", "settings": {}}}, lambda sid: None,
                       model={"uri": "random"})
    write_report(tmp_path / "r.json", rep)
    assert main(["html", str(tmp_path / "r.json"), "-o", str(tmp_path / "out.html")]) == 0
    assert (tmp_path / "out.html").read_text(encoding="utf-8") == render_page(json.loads((tmp_path / "r.json").read_text()))
    assert main(["html", str(tmp_path / "r.json")]) == 0 and (tmp_path / "r.html").exists()  # default: beside the report
    assert main(["html", str(tmp_path / "missing.json")]) == 2
    assert "error: " in capsys.readouterr().err
    monkeypatch.setattr("pytest_tom.output.html.charts.available", lambda: False)
    assert main(["html", str(tmp_path / "r.json")]) == 2
    assert "pip install 'pytest-tom[html]'" in capsys.readouterr().err
