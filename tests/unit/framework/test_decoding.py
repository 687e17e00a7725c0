"""Decoding options declared once with the official values, and the generation settings they give."""

from __future__ import annotations

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.framework.base import Benchmark
from pytest_tom.framework.decoding import decoding_options, generation
from pytest_tom.request import GenerationSettings


class Toy(Benchmark[None]):
    name = "toy"
    description = "toy"
    options = decoding_options(("1024", "the official 1024"), ("0", "the official 0"), ("1", "officially 0.95"), "local")

    def load(self, source):  # type: ignore[no-untyped-def]
        return []

    def program(self, sample):  # type: ignore[no-untyped-def]
        raise NotImplementedError


def test_each_option_says_what_the_official_code_used() -> None:
    helps = {o.name: o.help for o in Toy.options}
    assert helps == {"max_new_tokens": "Token budget per answer; the official 1024.",
                     "temperature": "Sampling temperature; the official 0.",
                     "top_p": "Nucleus sampling share; officially 0.95.",
                     "stop": "none, or newline: stop at the first line break (local)."}
    assert [o.name for o in decoding_options(("5", "x"))] == ["max_new_tokens"]


def test_the_settings_become_the_requests_generation_settings() -> None:
    assert generation(Toy().settings) == GenerationSettings(max_new_tokens=1024)
    given = Toy({"temperature": "0.7", "top_p": "0.9", "max_new_tokens": "20", "stop": "newline"}).settings
    assert generation(given) == GenerationSettings(max_new_tokens=20, temperature=0.7, top_p=0.9, stop=("\n",))
    assert generation({"max_new_tokens": 5}) == GenerationSettings(max_new_tokens=5)


@pytest.mark.parametrize(("name", "value"), [("temperature", "-1"), ("top_p", "1.5"), ("max_new_tokens", "0"),
                                             ("stop", "eos")])
def test_a_value_outside_what_decoding_allows_is_refused(name: str, value: str) -> None:
    with pytest.raises(TomConfigError, match=f"toy setting {name}="):
        Toy({name: value})
