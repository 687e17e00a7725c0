"""The one renderer of typed metrics: the JSON report's `metrics` object, terminal lines, Markdown rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.metric_cases import CASES, EXPECTED, added_since, records

from pytest_tom.framework.metric import Metric, Show, from_tree
from pytest_tom.output.markdown import metric_rows, render_markdown
from pytest_tom.output.render import terminal_lines, to_json, value_text


@pytest.mark.parametrize("case", list(CASES))
def test_the_report_metrics_equal_the_dicts_before_metrics_were_typed(case: str, tmp_path: Path) -> None:
    """Every benchmark's metrics, rebuilt from its typed `Metric`s, are the dict c01d35f wrote: keys, values, order."""
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))[case]
    bench, recs = records(case, tmp_path)
    metrics = bench.metrics(recs)
    assert all(isinstance(m, Metric) for m in metrics)
    rebuilt = to_json([m for m in metrics if not added_since(case, m.key)])
    assert json.dumps(rebuilt, allow_nan=False) == json.dumps(expected, allow_nan=False)
    lines = terminal_lines(metrics)
    assert lines, "every benchmark prints some of its metrics"
    for m in metrics:
        if m.label and isinstance(m.value, float) and m.unit == "rate":
            assert any(f"{m.label} {100 * m.value:.1f}" in line for line in lines), m


def test_a_tree_round_trips_with_empty_groups_lists_and_undefined_values() -> None:
    tree = {"mode": "paper", "cells": {}, "runs": [0.5, 0.25], "a": {"n": 4, "accuracy": None, "ci95": [0.1, 0.9]},
            "b": {"x": {"y": 1}}, "flag": True}
    metrics = from_tree(tree)
    assert to_json(metrics) == tree
    assert list(to_json(metrics)) == list(tree)
    assert [m.unit for m in metrics if m.key == ("cells",)] == ["group"]
    assert [m.value for m in metrics if m.key == ("runs",)] == [(0.5, 0.25)]


def test_show_rows_label_families_of_cells_and_take_interval_and_n_from_the_tally() -> None:
    tree = {"tasks": {"fbt": {"n": 20, "accuracy": 0.55, "ci95": [0.34, 0.74]}, "sst": {"n": 0, "accuracy": None}}}
    metrics = from_tree(tree, (Show(("tasks", "*", "accuracy"), "{0}", "tasks of {0}"),))
    fbt = next(m for m in metrics if m.key == ("tasks", "fbt", "accuracy"))
    assert (fbt.label, fbt.table, fbt.n, fbt.interval) == ("fbt", "tasks of fbt", 20, (0.34, 0.74))
    assert value_text(fbt) == "55.0 [34.0, 74.0] (n=20)"
    assert not [m for m in metrics if m.key == ("tasks", "fbt", "n") and m.label]


def test_values_are_formatted_by_unit() -> None:
    assert value_text(Metric(("a",), 0.125, "a")) == "12.5"
    assert value_text(Metric(("a",), 12.5, "a", "percent")) == "12.5"
    assert value_text(Metric(("a",), -0.031, "a", "points")) == "-3.1 pp"
    assert value_text(Metric(("a",), 1234, "a", "count")) == "1,234"
    assert value_text(Metric(("a",), "paper", "a", "text")) == "paper"
    assert value_text(Metric(("a",), 0.5, "a", std=0.02)) == "50.0±2.0"
    assert value_text(Metric(("a",), ("one", "two"), "a", "list")) == "one; two"


def test_terminal_lines_group_by_table_in_order_and_skip_what_has_nothing_to_show() -> None:
    metrics = [
        Metric(("t", "x"), 0.5, "x", table="first table"),
        Metric(("u",), 0.25, "u", table="second table"),
        Metric(("t", "y"), 0.75, "y", table="first table"),
        Metric(("hidden",), 0.1),
        Metric(("none",), None, "undefined", table="first table"),
        Metric(("empty",), (), "no violations", "list", table="first table"),
    ]
    lines = terminal_lines(metrics)
    assert lines == ["  first table: x 50.0 | y 75.0", "  second table: u 25.0"]


def test_long_tables_wrap_between_cells() -> None:
    metrics = [Metric(("k", str(i)), i / 100, f"cell{i}", table="t") for i in range(40)]
    lines = terminal_lines(metrics, width=80)
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert " | ".join(lines).count("cell") == 40


def test_markdown_rows_escape_labels_and_group_by_table() -> None:
    rows = metric_rows([Metric(("a",), 0.5, "a|b", table="T <1>"), Metric(("h",), 0.2)])
    assert rows[0].startswith("| table |")
    assert len(rows) == 3
    assert "a\\|b" in rows[2] and "&lt;1&gt;" in rows[2] and "50.0" in rows[2]


def test_the_markdown_summary_holds_each_suites_paper_metrics() -> None:
    metrics = [Metric(("accuracy",), 0.5, "accuracy", table="toy", interval=(0.25, 0.75), n=8), Metric(("json_only",), 1)]
    text = render_markdown([], model_uri="m", baseline=None, metrics=[("toy_suite", metrics), ("empty", [])])
    assert "<details><summary>Paper metrics of toy_suite</summary>" in text
    assert "| toy | accuracy | 50.0 [25.0, 75.0] (n=8) |" in text
    assert "Paper metrics of empty" not in text and "json_only" not in text


# -- published rows beside the run (--tom-reference) ----------------------------------------------------------------

def test_reference_lines_set_each_published_row_beside_the_run_value_by_table_then_the_notes() -> None:
    from pytest_tom.output.render import reference_lines

    metrics = [Metric(("languages", "en", "tasks", "fbt", "accuracy"), 0.5, "fbt", "rate", "tombench en tasks", (0.3, 0.7), 12),
               Metric(("languages", "en", "abilities", "Faux pas"), 0.25),
               Metric(("contexts", "short", "fantom", "inaccessible:set:ALL"), 1.5, "ALL", "percent", "fantom short")]
    source = "Chen et al. 2024, Table 2"
    reference = {"rows": [
        {"model": "GPT-4", "metric": "languages.en.tasks.fbt.accuracy", "value": 0.5, "published": 0.908, "source": source},
        {"model": "GPT-4", "metric": "languages.en.abilities.Faux pas", "value": 0.25, "published": 0.7, "source": source},
        {"model": "GPT-4", "metric": "contexts.short.fantom.inaccessible:set:ALL", "value": 1.5, "published": 2.0,
         "source": "README"},
        {"model": "GPT-4", "metric": "gone", "value": None, "published": 0.5, "source": "README"},
    ], "notes": ["no published GPT-4 row for simpletom with intervention=cot (published: intervention=none)"]}
    assert reference_lines(metrics, reference) == [
        "  GPT-4 as published in Chen et al. 2024, Table 2 (this run vs published):",
        "    tombench en tasks: fbt 50.0 vs 90.8",
        "    languages.en.abilities.Faux pas 25.0 vs 70.0",  # not printed by the summary: its key
        "  GPT-4 as published in README (this run vs published):",
        "    fantom short: ALL 1.5 vs 2.0",  # percent, as printed
        "    gone n/a vs 0.500",  # no such metric: the stored number, never rescaled
        "  no published GPT-4 row for simpletom with intervention=cot (published: intervention=none)",
    ]
    assert reference_lines(metrics, None) == [] and reference_lines(metrics, {"rows": [], "notes": []}) == []
