"""Decoding settings a benchmark exposes as its own options, declared once with the official values: `temperature`,
`top_p`, `max_new_tokens` and `stop`, each only where the official code sets it, and the `GenerationSettings` every
request of a run is sent with. Each help text says what the official code used, so a deviation is a visible choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_tom.framework.base import BenchmarkOption
from pytest_tom.request import GenerationSettings

STOPS = {"none": (), "newline": ("\n",)}
"""The `stop` setting's values: no stop string, or the first line break (a local-model path's stop word)."""


def decoding_options(max_new_tokens: tuple[str, str], temperature: tuple[str, str] | None = None,
                     top_p: tuple[str, str] | None = None, stop: str = "") -> tuple[BenchmarkOption, ...]:
    """The options, each given as (default, what the official code used); `stop` says when `newline` applies."""
    out = [BenchmarkOption("max_new_tokens", max_new_tokens[0], f"Token budget per answer; {max_new_tokens[1]}.",
                           kind=int, bounds=(1, None))]
    if temperature:
        out.append(BenchmarkOption("temperature", temperature[0], f"Sampling temperature; {temperature[1]}.", kind=float,
                                   bounds=(0, None)))
    if top_p:
        out.append(BenchmarkOption("top_p", top_p[0], f"Nucleus sampling share; {top_p[1]}.", kind=float,
                                   bounds=(0, 1.0001)))
    if stop:
        out.append(BenchmarkOption("stop", "none", f"none, or newline: stop at the first line break ({stop}).",
                                   choices=tuple(STOPS)))
    return tuple(out)


def generation(settings: Mapping[str, Any]) -> GenerationSettings:
    """The `GenerationSettings` of a benchmark's decoding options (those it does not declare keep their defaults)."""
    return GenerationSettings(**{k: settings[k] for k in ("max_new_tokens", "temperature", "top_p") if k in settings},
                              stop=STOPS[settings.get("stop", "none")])
