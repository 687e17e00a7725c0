"""The Markdown gate summary (what $GITHUB_STEP_SUMMARY shows), rendered from hand-built GateResults."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_tom.gates.result import GateResult
from pytest_tom.output.markdown import FLIP_CAP, render_markdown, write_markdown
from pytest_tom.stats import Comparison, Estimate


def est(point: float, low: float, high: float, n: int = 200, clusters: int = 40) -> Estimate:
    return Estimate(point, low, high, n, clusters, 0.95, "cluster bootstrap")


def threshold(passed: bool = True, *, name: str = "tombench.accuracy:lower>=0.3", bound: str = "lower") -> GateResult:
    return GateResult(name, "threshold", "tombench.accuracy", passed, est(0.612, 0.58, 0.643, 1000, 120),
                      "tombench.accuracy = 61.2% meets the threshold", 0.3, ">=", bound)


def regression(**details: object) -> GateResult:
    comparison = Comparison(base=0.70, new=0.61, diff=est(-0.09, -0.141, -0.039), n_pairs=200, right_to_wrong=25,
                            wrong_to_right=7, mcnemar_p=0.001, margin=0.05, p_regression=0.002, p_adjusted=0.004,
                            regressed=True)
    return GateResult("tombench.ability.faux_pas:0.05", "baseline", "tombench.ability.faux_pas", False,
                      est(0.61, 0.55, 0.66), "faux_pas fell from 70.0% to 61.0%", comparison=comparison,
                      details=dict(details))


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| gate |")]


def test_all_passing_headline_and_row() -> None:
    text = render_markdown([threshold(), threshold(name="tombench.errors:point<=0", bound="point")],
                           model_uri="hf:./checkpoint", baseline=None)
    lines = text.splitlines()
    assert lines[0] == "## pytest-tom gates"
    assert "✅ **All 2 gates passed**" in lines
    assert "Model `hf:./checkpoint`; no baseline." in lines
    rows = table_rows(text)
    assert rows[0] == ("| `tombench.accuracy:lower>=0.3` | 61.2% (58.0% – 64.3%), n=1000, 120 clusters "
                       "| ≥ 30.0% (lower bound) | — | — | ✅ pass |")
    assert "| ≥ 30.0% |" in rows[1]  # a point threshold names no bound
    assert "### Failed gates" not in text and "<details>" not in text


def test_single_gate_is_singular() -> None:
    assert "✅ **All 1 gate passed**" in render_markdown([threshold()], model_uri="m", baseline=None)


def test_failing_baseline_gate_first_with_diff_p_and_flips() -> None:
    flips = {"right_to_wrong": [{"id": "tombench[en-7]", "message": "answered B, gold A"}], "wrong_to_right": ["tombench[en-9]"]}
    text = render_markdown([threshold(), regression(**flips)], model_uri="hf:./checkpoint", baseline="tom-baseline.json",
                           title="ToM release gate")
    lines = text.splitlines()
    assert lines[0] == "## ToM release gate"
    assert "❌ **1 of 2 gates failed**" in lines
    assert "Model `hf:./checkpoint`; baseline `tom-baseline.json`." in lines
    rows = table_rows(text)
    assert rows[0] == ("| `tombench.ability.faux_pas:0.05` | 61.0% (55.0% – 66.0%), n=200, 40 clusters | 70.0% → 61.0% "
                       "| −9.0 pts (−14.1 to −3.9), margin 5.0 pts; 25 right→wrong, 7 wrong→right of 200 | 0.004 "
                       "| ❌ significant drop |")
    assert rows[1].endswith("| ✅ pass |")
    assert "- `tombench.ability.faux_pas:0.05`: faux_pas fell from 70.0% to 61.0%" in lines
    start = lines.index("<details><summary>tombench.ability.faux_pas:0.05: 2 flipped items</summary>")
    block = lines[start:lines.index("</details>", start)]
    assert block.index("**right → wrong** (1)") < block.index("**wrong → right** (1)")
    assert "- `tombench[en-7]`: answered B, gold A" in block and "- `tombench[en-9]`" in block


def test_small_p_and_noise_floor() -> None:
    r = regression()
    assert r.comparison is not None
    c = replace(r.comparison, p_adjusted=0.0001, noise_flip_rate=0.031, margin=0.0)
    row = table_rows(render_markdown([replace(r, comparison=c)], model_uri="m", baseline="b"))[0]
    assert "| < 0.001 |" in row and "noise flips 3.1%" in row and "margin" not in row


def test_flips_are_capped_per_direction() -> None:
    many = [f"tombench[en-{i}]" for i in range(FLIP_CAP + 7)]
    text = render_markdown([regression(right_to_wrong=many, wrong_to_right=many[:3])], model_uri="m", baseline="b")
    lines = text.splitlines()
    assert f"- `tombench[en-{FLIP_CAP - 1}]`" in lines and f"- `tombench[en-{FLIP_CAP}]`" not in lines
    assert "- … and 7 more" in lines and lines.count("- … and 7 more") == 1  # wrong→right is under the cap
    assert f"{FLIP_CAP + 10} flipped items</summary>" in text


def test_failing_gate_without_comparison_or_estimate() -> None:
    missing = GateResult("tombench.accuracy:0.02", "baseline", "tombench.accuracy", False, None,
                         "no baseline at tom-baseline.json: create one with --tom-baseline-save")
    text = render_markdown([missing], model_uri="m", baseline="tom-baseline.json")
    assert table_rows(text) == ["| `tombench.accuracy:0.02` | — | — | — | — | ❌ fail |"]
    assert "<details>" not in text  # nothing flipped, no empty block


def test_cells_escape_pipes_newlines_and_html() -> None:
    r = GateResult("suite|x.accuracy>=0.5", "threshold", "suite|x.accuracy", False, est(0.4, 0.3, 0.5),
                   "line one | cell\nline two <b>bold</b>", 0.5, ">=", "point")
    text = render_markdown([r], model_uri="openai:gpt|x\nmini", baseline=None)
    row = table_rows(text)[0]
    assert row.startswith("| `suite\\|x.accuracy>=0.5` |")
    assert row.count(" | ") == 5  # six cells, none split by the pipe in the name
    assert "- `suite|x.accuracy>=0.5`: line one \\| cell<br>line two &lt;b&gt;bold&lt;/b&gt;" in text.splitlines()
    assert "Model `openai:gpt|x mini`; no baseline." in text  # outside a table a pipe needs no escape
    assert all(not line.startswith("line two") for line in text.splitlines())


def test_backticks_and_html_in_item_ids() -> None:
    r = regression(right_to_wrong=[{"sample_id": "a`b", "message": "<script>x</script>"}], wrong_to_right=[])
    r = replace(r, name="faux<pas>")
    text = render_markdown([r], model_uri="m", baseline="b")
    assert "- `` a`b ``: &lt;script&gt;x&lt;/script&gt;" in text  # a longer fence, padded, keeps the backtick literal
    assert "<details><summary>faux&lt;pas&gt;: 1 flipped item</summary>" in text


def test_threshold_gates_have_no_flip_block() -> None:
    r = replace(threshold(False), details={"right_to_wrong": ["x"]})
    assert "<details>" not in render_markdown([r], model_uri="m", baseline=None)


def test_no_gates_configured() -> None:
    text = render_markdown([], model_uri="random", baseline=None)
    assert "⚪ **No gates configured**" in text and "--tom-threshold" in text
    assert "| gate |" not in text and "failed" not in text


def test_summary_lines_in_a_collapsed_fenced_block() -> None:
    text = render_markdown([threshold()], model_uri="m", baseline=None, summary_lines=["tombench: 61.2%", "odd ``` line"])
    lines = text.splitlines()
    start = lines.index("<details><summary>Metrics</summary>")
    assert lines[start + 1:start + 6] == ["", "````text", "tombench: 61.2%", "odd ``` line", "````"]
    assert text.endswith("</details>\n")


def test_write_markdown_appends(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "summary.md"
    write_markdown(target, "first\n")
    write_markdown(target, "## pytest-tom gates\n")
    assert target.read_text(encoding="utf-8") == "first\n\n## pytest-tom gates\n"
    other = tmp_path / "step_summary"
    other.write_text("", encoding="utf-8")  # GitHub creates the file empty: no leading blank line then
    write_markdown(str(other), "✅ ok\n")
    assert other.read_text(encoding="utf-8") == "✅ ok\n"


def test_published_rows_get_a_table_beside_the_run_values_and_the_notes_as_a_list() -> None:
    from pytest_tom.framework.metric import Metric

    metrics = [("tombench", [Metric(("languages", "en", "task_avg"), 0.271, "task AVG", "rate", "tombench en")])]
    reference = {"rows": [{"model": "ChatGLM3-6B", "metric": "languages.en.task_avg", "value": 0.271, "published": 0.403,
                           "source": "Chen et al. 2024 | Table 2"}],
                 "notes": ["no published GPT-4-1106 row for tombench with tries=5 (published: tries=1)"]}
    text = render_markdown([], model_uri="random", baseline=None, metrics=metrics, references={"tombench": reference})
    section = text[text.index("### Published rows beside tombench"):].splitlines()
    assert section[2:5] == ["| model | metric | this run | published | source |", "|---|---|---|---|---|",
                            "| ChatGLM3-6B | tombench en: task AVG | 27.1 | 40.3 | Chen et al. 2024 \\| Table 2 |"]
    assert section[6] == "- no published GPT-4-1106 row for tombench with tries=5 (published: tries=1)"
    assert "Published rows" not in render_markdown([], model_uri="random", baseline=None, metrics=metrics)


def test_a_gate_against_a_published_row_shows_the_value_the_row_and_its_source() -> None:
    from pytest_tom.framework.metric import Metric
    from pytest_tom.framework.reference import ReferenceRow
    from pytest_tom.gates.thresholds import check_reference, parse_threshold

    row = ReferenceRow("tombench", "ChatGLM3-6B", (), "languages.en.task_avg", 0.403, "Chen et al. 2024, Table 2")
    result = check_reference(parse_threshold("tombench.languages.en.task_avg>=ref:chatglm3-6b-50%"),
                             Metric(("languages", "en", "task_avg"), 0.271), row, "tombench.languages.en.task_avg")
    (line,) = table_rows(render_markdown([result], model_uri="random", baseline=None))
    assert line == ("| `tombench.languages.en.task_avg:point>=ref:ChatGLM3-6B-50%` | 27.1% | ≥ ChatGLM3-6B 40.3% -50% = "
                    "20.2% (Chen et al. 2024, Table 2) | — | — | ✅ pass |")
