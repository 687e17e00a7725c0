"""The papers' reference rows: strict reading, selection by model and protocol, and the shipped files' keys."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_tom.engine.engine import Engine
from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals import BUILTIN
from pytest_tom.evals.tombench.data import ABILITIES, TASK_ORDER
from pytest_tom.framework.base import Benchmark, DataSource
from pytest_tom.framework.reference import (
    COLUMNS,
    EVALS,
    ReferenceRow,
    beside,
    check_names,
    load_reference,
    missing,
    parse_reference,
    select,
)
from pytest_tom.models import make_model
from pytest_tom.models.embedding import make_scoring_model
from pytest_tom.record import Record
from pytest_tom.registry import load_target

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
HEADER = ",".join(COLUMNS) + "\n"
ROW = "GPT-4o,tombench.prompt=vanilla;tombench.tries=5,languages.en.task_avg,0.753,\"Chen et al. 2024, Table 2\"\n"


def _error(text: str) -> TomDataError:
    with pytest.raises(TomDataError) as info:
        parse_reference(text, "tombench", "ref.csv")
    return info.value


def test_a_valid_file_reads_typed_rows_with_sorted_settings() -> None:
    (row,) = parse_reference(HEADER + ROW, "tombench")
    assert row == ReferenceRow("tombench", "GPT-4o", (("prompt", "vanilla"), ("tries", "5")), "languages.en.task_avg",
                               0.753, "Chen et al. 2024, Table 2", 2)


@pytest.mark.parametrize(("text", "where", "what"), [
    ("model,settings,metric,value,source,notes\n", "line 1", "unknown column 'notes'"),
    ("model,settings,metric,source\n", "line 1", "missing column 'value'"),
    (HEADER + ",,languages.en.task_avg,0.5,T2\n", "line 2", "field 'model'"),
    (HEADER + "m,,metric,,T2\n", "line 2", "field 'value'"),
    (HEADER + "m,,metric,0.5,\n", "line 2", "field 'source'"),
    (HEADER + "m,,metric,high,T2\n", "line 2", "'high' is not a number"),
    (HEADER + "m,,metric,nan,T2\n", "line 2", "'nan' is not a number"),
    (HEADER + "m,fantom.contexts=short,metric,0.5,T2\n", "line 2", "a setting of 'fantom'"),
    (HEADER + "m,tombench.prompt,metric,0.5,T2\n", "line 2", "field 'settings'"),
    (HEADER + "m,tombench.prompt=cot;tombench.prompt=vanilla,metric,0.5,T2\n", "line 2", "given twice"),
    (HEADER + "m,,metric,0.5\n", "line 2", "4 fields, expected 5"),
    (HEADER + ROW + "gpt-4O,tombench.tries=5;tombench.prompt=vanilla,languages.en.task_avg,0.7,T3\n", "line 3",
     "duplicate of line 2"),
])
def test_every_malformed_file_is_refused_naming_file_line_and_field(text: str, where: str, what: str) -> None:
    message = str(_error(text))
    assert "ref.csv" in message and where in message and what in message


def test_an_empty_file_is_refused() -> None:
    assert "empty" in str(_error(""))


def test_a_row_is_selected_by_model_case_insensitively_and_only_where_the_run_follows_its_protocol() -> None:
    rows = parse_reference(HEADER + ROW + "GPT-4o,tombench.prompt=cot,languages.en.task_avg,0.741,T2\n"
                           "Other,,languages.en.task_avg,0.5,T2\n", "tombench")
    vanilla = {"prompt": "vanilla", "tries": 5, "aggregation": "paper"}
    assert [r.line for r in select(rows, " gpt-4O ", vanilla)] == [2]
    assert [r.line for r in select(rows, "GPT-4O", {**vanilla, "prompt": "cot"})] == [3]
    assert select(rows, "gpt-4o", {"prompt": "vanilla", "tries": 1}) == []
    assert select(rows, "gpt-4o", {"tries": 5}) == []  # a setting the run does not name never matches
    assert [r.line for r in select(rows, "other", {})] == [4]  # no settings: any run
    with pytest.raises(TomConfigError, match=r"Published models: tombench: GPT-4o, Other$"):  # file order, once each
        check_names(["gpt-5"], {"tombench": rows})


def test_a_bool_setting_matches_its_rendered_words() -> None:
    (row,) = parse_reference(HEADER + "m,tomvalley.backgrounds=false,avg.accuracy,0.5,T3\n", "tomvalley")
    assert row.applies({"backgrounds": False}) and row.applies({"backgrounds": "false"})
    assert not row.applies({"backgrounds": True})


def test_a_benchmark_without_a_file_has_no_rows(tmp_path: Path) -> None:
    assert load_reference("nosuchbench") == []
    assert load_reference("tombench", tmp_path / "missing.csv") == []


SHIPPED = tuple(BUILTIN)  # every built-in benchmark ships the published rows of its paper


@pytest.mark.parametrize("bench", SHIPPED)
def test_every_shipped_file_loads_and_names_only_settings_the_benchmark_has(bench: str) -> None:
    assert (EVALS / bench / "reference.csv").is_file()
    rows = load_reference(bench)
    cls: type[Benchmark[Any]] = load_target(BUILTIN[bench])  # type: ignore[assignment]
    options = {o.name: o for o in cls.options}
    for row in rows:
        for name, value in row.settings:
            assert name in options, f"{bench} line {row.line}: no setting {name!r}"
            rendered = options[name].render(options[name].convert(bench, value))
            assert str(rendered) == value, f"{bench} line {row.line}: {name}={value} renders as {rendered!r}"
        assert row.source and row.model == row.model.strip()


def _widened(bench: str, records: list[Record]) -> list[Record]:
    """ToMBench's fixture holds four of eight tasks and a few abilities: copies of its records carry the others, so
    the check asks whether the benchmark emits a key for a task or ability, not whether the fixture holds one (each
    task copy is a one-question story of its own, so Table 22's coherent keys exist for it too)."""
    if bench != "tombench":
        return records
    extra = [dataclasses.replace(r, facets={**r.facets, "task": t, "story": f"widened-{t}"},
                                 details={**r.details, "story_size": 1}) for r in records[:1] for t in TASK_ORDER]
    extra += [dataclasses.replace(r, facets={**r.facets, "ability": a, "sub_label": a})
              for r in records[:1] for names in ABILITIES.values() for a in names]
    languages = {r.facets["language"] for r in records}
    return records + [dataclasses.replace(r, facets={**r.facets, "language": lang}) for r in extra for lang in languages]


@pytest.mark.parametrize("bench", SHIPPED)
def test_every_metric_key_a_shipped_row_names_is_one_the_benchmark_emits_under_its_settings(bench: str, tmp_path: Path) -> None:
    rows = load_reference(bench)
    cls: type[Benchmark[Any]] = load_target(BUILTIN[bench])  # type: ignore[assignment]
    fixture = {"tomvalley": {"contexts": "7001-7002"}, "fantom": {"contexts": "short,full"}}.get(bench, {})
    embedders: dict[str, Any] = {}

    def scoring(name: str) -> Any:  # one embedder load for every settings combination (FANToM's)
        if name not in embedders:
            embedders[name] = make_scoring_model(name, allow_download=False)
        return embedders[name]

    for settings in sorted({r.settings for r in rows}):
        benchmark = cls({"partial": "true", **fixture, **dict(settings)})
        samples = benchmark.load(DataSource(FIXTURES, download=False, cache_dir=tmp_path))
        engine = Engine(make_model("random:3"), scoring_models=scoring)
        records = list(engine.run({s.id: (s, benchmark.program(s)) for s in samples}).values())
        emitted = {m.name: m for m in benchmark.metrics(_widened(bench, records))}
        rendered = benchmark.describe()["settings"]
        for row in rows:
            if row.settings == settings:
                assert row.applies(rendered), f"{bench} line {row.line}: its settings are not the run's"
                assert row.metric in emitted, f"{bench} line {row.line}: {row.metric!r} is not a metric {bench} emits"
                # the value is in the metric's unit: a share for a rate, the paper's number for a percent
                top = {"rate": 1.0, "percent": 100.0}[emitted[row.metric].unit]
                assert 0.0 <= row.value <= top, f"{bench} line {row.line}: {row.value} is not a {emitted[row.metric].unit}"


# -- beside a run: which rows, and why none -------------------------------------------------------------------------

TWO = parse_reference(HEADER + ROW + "GPT-4o,tombench.prompt=cot;tombench.tries=5,languages.en.task_avg,0.741,T2\n"
                      "GPT-4o,tombench.prompt=vanilla;tombench.tries=5,languages.en.tasks.fbt.accuracy,0.9,T2\n"
                      "Other,,languages.zh.task_avg,0.5,T3\n", "tombench")
VANILLA = {"prompt": "vanilla", "tries": 5, "aggregation": "paper"}


def test_beside_gives_the_rows_of_the_run_protocol_that_name_one_of_its_metrics() -> None:
    rows, notes = beside(TWO, ["gpt-4O"], "tombench", VANILLA, {"languages.en.task_avg", "languages.zh.task_avg"})
    assert [(r.line, r.value) for r in rows] == [(2, 0.753)] and notes == []  # fbt is not a metric of this run
    rows, _ = beside(TWO, ["GPT-4o"], "tombench", {**VANILLA, "prompt": "cot"}, {"languages.en.task_avg"})
    assert [r.value for r in rows] == [0.741]  # the CoT row, never the vanilla one


def test_a_run_under_another_protocol_gets_a_note_naming_its_settings_and_the_published_ones() -> None:
    rows, notes = beside(TWO, ["gpt-4o"], "tombench", {**VANILLA, "tries": 1}, {"languages.en.task_avg"})
    assert rows == [] and notes == ["no published GPT-4o row for tombench with tries=1 (published: tries=5)"]
    # the nearest protocol's differences only: prompt is one of the published ones, so it is not named
    assert missing(TWO, "GPT-4o", "tombench", {"prompt": "cot", "tries": "3"}) == (
        "no published GPT-4o row for tombench with tries=3 (published: tries=5)")
    assert missing(TWO, "gpt-4o", "tombench", {}) == (
        "no published GPT-4o row for tombench with prompt unset, tries unset (published: prompt=cot or vanilla, tries=5)")
    assert missing([], "gpt-4o", "fantom", VANILLA) == "no published gpt-4o row for fantom"


def test_rows_that_apply_but_name_no_metric_of_the_run_get_a_note() -> None:
    rows, notes = beside(TWO, ["other"], "tombench", VANILLA, {"languages.en.task_avg"})
    assert rows == [] and notes == ["the published Other rows for tombench name no metric of this run "
                                    "(they name languages.zh.task_avg...)"]


def test_a_name_no_benchmark_of_the_run_has_is_refused_listing_each_benchmarks_names() -> None:
    check_names(["gpt-4O"], {"tombench": TWO})
    with pytest.raises(TomConfigError) as info:
        check_names(["gpt-4o", "gpt-5"], {"tombench": TWO, "hitom": []})
    assert "'gpt-5'" in str(info.value) and "'gpt-4o'" not in str(info.value)
    assert "tombench: GPT-4o, Other; hitom: none shipped" in str(info.value)
