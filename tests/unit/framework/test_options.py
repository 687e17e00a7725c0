"""Typed options: a bool option is a bool to its benchmark and "true"/"false" to reports and cache keys."""

from __future__ import annotations

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.evals.simpletom import SimpleToM
from pytest_tom.evals.tombench import ToMBench
from pytest_tom.evals.tomvalley import ToMValley
from pytest_tom.framework.base import BenchmarkOption

FLAG = BenchmarkOption("partial", "false", "help", kind=bool)


@pytest.mark.parametrize(("raw", "value"), [
    ("true", True), ("1", True), ("yes", True), ("ON", True), (True, True),
    ("false", False), ("0", False), ("no", False), ("off", False), ("", False), (False, False),
])
def test_a_bool_option_reads_every_flag_spelling(raw: object, value: bool) -> None:
    assert FLAG.convert("b", raw) is value
    assert FLAG.render(FLAG.convert("b", raw)) == ("true" if value else "false")


def test_a_bool_option_refuses_other_words() -> None:
    with pytest.raises(TomConfigError, match="b setting partial='maybe': expected true or false"):
        FLAG.convert("b", "maybe")


@pytest.mark.parametrize("cls", [ToMBench, SimpleToM, ToMValley])
def test_benchmarks_read_bools_and_report_them_as_before(cls: type) -> None:
    bench = cls({"partial": "yes"})
    assert bench.settings["partial"] is True
    assert bench.describe()["settings"]["partial"] == "true"
    assert cls().describe()["settings"]["partial"] == "false"


def test_stop_at_answer_and_backgrounds_are_typed() -> None:
    assert ToMBench({"stop_at_answer": "false"}).config.stop_at_answer is False
    assert ToMBench().describe()["settings"]["stop_at_answer"] == "true"
    valley = ToMValley({"backgrounds": "1"})
    assert valley.config.backgrounds is True and valley.describe()["settings"]["backgrounds"] == "true"
    with pytest.raises(TomConfigError, match="expected true or false"):
        ToMValley({"backgrounds": "sometimes"})


def test_a_bounded_option_refuses_values_outside_its_range() -> None:
    tries = BenchmarkOption("tries", "5", "help", kind=int, bounds=(1, None))
    share = BenchmarkOption("max_gap", "0.05", "help", kind=float, bounds=(0, 1))
    assert tries.convert("b", "1") == 1 and tries.convert("b", 7) == 7 and share.convert("b", "0") == 0.0
    with pytest.raises(TomConfigError, match=r"b setting tries='0': must be at least 1$"):
        tries.convert("b", "0")
    for bad in ("1", "-0.1", "nan"):
        with pytest.raises(TomConfigError, match=r"must be in \[0, 1\)$"):
            share.convert("b", bad)


def test_a_one_value_setting_given_as_a_one_item_list_is_that_value() -> None:
    prompt = BenchmarkOption("prompt", "vanilla", "help", choices=("vanilla", "cot"))
    assert prompt.convert("b", ["cot"]) == "cot" and prompt.convert("b", "cot") == "cot"
    languages = BenchmarkOption("languages", "en", "help", choices=("en", "zh"), many=True)
    assert languages.convert("b", ["zh", "en"]) == ["zh", "en"]
