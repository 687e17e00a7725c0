"""Addressing --tom-benchmark items by node id on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tom.run.select import take_node_id_args

NAMES = ["tombench", "fantom"]


def take(args: list[str], where: Path, names: list[str] = NAMES) -> dict[str, frozenset[str] | None]:
    return take_node_id_args(args, names, where)


def test_an_item_id_selects_that_item(tmp_path: Path) -> None:
    args = ["tombench[en-false_belief_task-0001]"]
    assert take(args, tmp_path) == {"tombench": frozenset({"tombench[en-false_belief_task-0001]"})}
    assert args == []


def test_a_suite_qualified_item_id(tmp_path: Path) -> None:
    args = ["tombench::tombench[en-1]", "fantom::fantom[short-2]"]
    assert take(args, tmp_path) == {"tombench": frozenset({"tombench[en-1]"}), "fantom": frozenset({"fantom[short-2]"})}
    assert args == []


def test_a_derived_item_id_selects_it_under_its_benchmark(tmp_path: Path) -> None:
    args = ["tombench_coherence[story-1]", "fantom_all_star[set-3]", "tombench[en-2]"]
    assert take(args, tmp_path) == {
        "tombench": frozenset({"tombench_coherence[story-1]", "tombench[en-2]"}),
        "fantom": frozenset({"fantom_all_star[set-3]"}),
    }


def test_a_bare_benchmark_name_selects_the_whole_benchmark(tmp_path: Path) -> None:
    args = ["tombench[en-1]", "tombench", "tombench[en-2]"]
    assert take(args, tmp_path) == {"tombench": None}
    assert args == []


def test_other_arguments_stay_in_place_in_order(tmp_path: Path) -> None:
    args = ["tests/test_x.py", "tombench[en-1]", "tests/test_y.py::test_a[1]", "unknown[1]", "tombench_x", "tombenchx[1]",
            "test_tombench[1]", "fantom::tombench[en-1]", "tombench[a[b]]"]
    selected = take(args, tmp_path)
    assert selected == {"tombench": frozenset({"tombench[en-1]"})}
    assert args == ["tests/test_x.py", "tests/test_y.py::test_a[1]", "unknown[1]", "tombench_x", "tombenchx[1]",
                    "test_tombench[1]", "fantom::tombench[en-1]", "tombench[a[b]]"]


def test_an_argument_naming_an_existing_path_is_left_to_pytest(tmp_path: Path) -> None:
    (tmp_path / "tombench").mkdir()
    (tmp_path / "fantom[1]").write_text("", encoding="utf-8")
    args = ["tombench", "fantom[1]", "fantom[2]"]
    assert take(args, tmp_path) == {"fantom": frozenset({"fantom[2]"})}
    assert args == ["tombench", "fantom[1]"]


def test_existence_is_checked_from_the_invocation_dir(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "tombench").mkdir()
    args = ["tombench"]
    assert take(args, elsewhere) == {"tombench": None}
    assert args == []


def test_the_list_is_mutated_in_place(tmp_path: Path) -> None:
    args = ["a.py", "tombench[1]"]
    same = args
    take(args, tmp_path)
    assert same is args and same == ["a.py"]


def test_without_benchmarks_nothing_is_taken(tmp_path: Path) -> None:
    args = ["tombench[1]"]
    assert take_node_id_args(args, [], tmp_path) == {}
    assert args == ["tombench[1]"]


@pytest.mark.parametrize(("arg", "bench"), [("tom[1]", "tom"), ("tombench[1]", "tombench"), ("tom_x[1]", "tom"),
                                            ("tombench_coherence[1]", "tombench")])
def test_a_name_that_prefixes_another(tmp_path: Path, arg: str, bench: str) -> None:
    assert take([arg], tmp_path, ["tom", "tombench"]) == {bench: frozenset({arg})}
