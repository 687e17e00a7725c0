"""The "pytest-tom" block of pytest-html's summary (--tom-reference), rendered from hand-built report fields."""

from __future__ import annotations

from helpers.html_cells import read_block as parse

from pytest_tom.framework.metric import Metric
from pytest_tom.output.html_summary import reference_html
from pytest_tom.output.markdown import render_markdown

METRICS = [("tombench", [Metric(("languages", "en", "task_avg"), 0.271, "task AVG", "rate", "tombench en")])]
NOTE = "no published GPT-4-1106 row for tombench with tries=5 (published: tries=1)"


def reference(model: str = "ChatGLM3-6B", source: str = "Chen et al. 2024, Table 2") -> dict[str, object]:
    return {"rows": [{"model": model, "metric": "languages.en.task_avg", "value": 0.271, "published": 0.403,
                      "source": source}], "notes": [NOTE]}


def test_a_table_beside_the_run_values_as_the_markdown_has_it_and_the_notes_as_a_list() -> None:
    text = reference_html(METRICS, {"tombench": reference()})
    assert text is not None and text.startswith('<div class="pytest-tom"><h3>pytest-tom</h3>')
    page = parse(text)
    assert page.texts["h4"] == ["Published rows beside tombench"]
    assert page.rows == [["model", "metric", "this run", "published", "source"],
                         ["ChatGLM3-6B", "tombench en: task AVG", "27.1", "40.3", "Chen et al. 2024, Table 2"]]
    assert page.texts["li"] == [NOTE]
    markdown = render_markdown([], model_uri="random", baseline=None, metrics=METRICS, references={"tombench": reference()})
    assert "| ChatGLM3-6B | tombench en: task AVG | 27.1 | 40.3 | Chen et al. 2024, Table 2 |" in markdown  # the same cells


def test_text_from_the_data_is_escaped() -> None:
    text = reference_html(METRICS, {"<b>suite</b>": reference(model="A&B <x>", source="Table <2>")})
    assert text is not None
    assert "<b>" not in text and "<x>" not in text and "<2>" not in text
    page = parse(text)
    assert page.texts["h4"] == ["Published rows beside <b>suite</b>"]
    assert page.rows[1][0] == "A&B <x>" and page.rows[1][-1] == "Table <2>"


def test_notes_alone_give_no_table_and_nothing_at_all_gives_no_block() -> None:
    text = reference_html(METRICS, {"tombench": {"rows": [], "notes": [NOTE]}})
    assert text is not None and "<table" not in text and parse(text).texts["li"] == [NOTE]
    assert reference_html(METRICS, {"tombench": {"rows": [], "notes": []}}) is None
    assert reference_html(METRICS, {}) is None


def test_the_metrics_block_lists_each_suite_by_paper_table_with_intervals() -> None:
    from pytest_tom.output.html_summary import metrics_html

    metrics = [("tom<bench>", [Metric(("acc",), 0.5, "accuracy", "rate", "overall", interval=(0.25, 0.75), n=8),
                               Metric(("ids",), (), "ids", "list")]), ("empty", [])]
    text = metrics_html(metrics)
    assert text is not None
    block = parse(text, "pytest-tom-metrics")
    assert block.texts["h4"] == ["Metrics of tom<bench>"]  # escaped in the page, the text itself read back
    assert block.rows == [["table", "metric", "value"], ["overall", "accuracy", "50.0 [25.0, 75.0] (n=8)"]]
    assert metrics_html([("empty", [])]) is None
