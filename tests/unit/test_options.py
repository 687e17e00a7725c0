"""Options parsed from the command line and ini file."""

from __future__ import annotations

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.options import comma_names


def test_benchmark_names_parse_once_each_in_order() -> None:
    assert comma_names(" tombench,fantom ,tombench,", "--tom-benchmark", "benchmark", "x") == ("tombench", "fantom")
    assert comma_names("TomBench,tombench", "--tom-benchmark", "benchmark", "x") == ("TomBench", "tombench")
    assert comma_names(None, "--tom-benchmark", "benchmark", "x") == () == comma_names("", "--tom-benchmark", "b", "x")
    with pytest.raises(TomConfigError, match=r"--tom-benchmark \(ini tom_benchmark\) is ' , ': it names no benchmark"):
        comma_names(" , ", "--tom-benchmark", "benchmark", "tombench,fantom")


def test_reference_names_parse_once_each_case_insensitively() -> None:
    assert comma_names(" gpt-4o, GPT-4O ,Llama3 8B,", "--tom-reference", "model", "x", fold=True) == ("gpt-4o", "Llama3 8B")
    with pytest.raises(TomConfigError, match=r"--tom-reference \(ini tom_reference\) is ' , ': it names no model"):
        comma_names(" , ", "--tom-reference", "model", "gpt-4o", fold=True)
