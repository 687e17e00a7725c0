"""Benchmark settings given as `BENCH.NAME=VALUE` (`--tom-set`, ini `tom_set`), free of pytest. One repeatable option
for every benchmark (like inspect's `-T`) keeps `pytest --help` short; `pytest --tom-set list` lists the settings,
generated from the registry so it cannot drift. A misspelt benchmark or setting is a usage error naming the nearest
valid one, and a value is checked by its `BenchmarkOption.convert` before any data is read.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pytest_tom.errors import TomConfigError
from pytest_tom.framework.base import Benchmark, BenchmarkOption
from pytest_tom.suggest import closest_hint

SET_OPTION = "--tom-set"
SET_INI = "tom_set"
LIST_WORD = "list"
"""`--tom-set list` prints every benchmark's settings and exits (as lm-eval's `--tasks list`)."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One `BENCH.NAME=VALUE` entry, with where it came from (for error messages)."""

    benchmark: str
    name: str
    value: str
    origin: str


def parse_entry(raw: str, origin: str = SET_OPTION) -> Setting:
    """`tombench.prompt=cot` -> Setting; dashes in the name read as underscores (`max-new-tokens`)."""
    text = raw.strip()
    key, eq, value = text.partition("=")
    bench, dot, name = key.strip().partition(".")
    if not eq or not dot or not bench.strip() or not name.strip():
        raise TomConfigError(f"{origin} {raw!r}: expected BENCH.NAME=VALUE, e.g. tombench.prompt=cot "
                             f"(`pytest {SET_OPTION} {LIST_WORD}` lists every setting)")
    return Setting(bench.strip(), name.strip().replace("-", "_"), value.strip(), origin)


def entry_lines(values: Iterable[object]) -> list[str]:
    """Every line of repeated options or ini values, without blank lines and `#` comments."""
    return [line for raw in values for line in str(raw).splitlines() if line.strip() and not line.strip().startswith("#")]


def parse_entries(lines: Iterable[str], origin: str) -> list[Setting]:
    """Every entry of repeated options or ini lines (`entry_lines`)."""
    return [parse_entry(line, origin) for line in entry_lines(lines)]


def resolve(entries: Sequence[Setting], get: Callable[[str], type[Benchmark[object]]],
            names: Sequence[str]) -> dict[str, dict[str, str]]:
    """Per benchmark, the settings of `entries` (a later entry wins), each checked as the benchmark will read it. `get`
    looks a benchmark class up by name, `names` are the registered ones (for the message); values stay strings, as the
    benchmark receives them from any other source.
    """
    out: dict[str, dict[str, str]] = {}
    for e in entries:
        if e.benchmark not in names:
            raise TomConfigError(f"{e.origin} {e.benchmark}.{e.name}: no benchmark {e.benchmark!r}"
                                 f"{closest_hint(e.benchmark, names)}; available: {', '.join(names)}")
        cls = get(e.benchmark)
        known = {o.name: o for o in cls.options}
        if e.name not in known:
            raise TomConfigError(f"{e.origin} {cls.name}.{e.name}: {cls.name} has no setting {e.name!r}"
                                 f"{closest_hint(e.name, known)}; its settings: {', '.join(known) or 'none'}")
        try:
            known[e.name].convert(cls.name, e.value)
        except TomConfigError as exc:
            raise TomConfigError(f"{e.origin}: {exc}") from None
        out.setdefault(e.benchmark, {})[e.name] = e.value
    return out


def legacy_flag(benchmark: str, name: str) -> str:
    """The deprecated flag of a setting: `--tom-tombench-max-new-tokens`."""
    return f"--tom-{benchmark}-{name.replace('_', '-')}"


def legacy_ini(benchmark: str, name: str) -> str:
    """The deprecated ini key (and option dest) of a setting: `tom_tombench_max_new_tokens`."""
    return f"tom_{benchmark}_{name}"


def deprecation(benchmark: str, name: str, value: str, ini: bool) -> str:
    """The notice for one use of a deprecated spelling, naming its replacement."""
    if ini:
        return (f"ini key {legacy_ini(benchmark, name)} is deprecated and will be removed in the next release; "
                f"write it as a line of {SET_INI}: {benchmark}.{name}={value}")
    return (f"{legacy_flag(benchmark, name)} is deprecated and will be removed in the next release; "
            f"use {SET_OPTION} {benchmark}.{name}={value}")


def metavar(opt: BenchmarkOption) -> str:
    """What a setting takes: its choices (`vanilla|cot`), by its kind `N`, `X` or `true|false`, `URL`, else its name."""
    if opt.choices:
        return "|".join(opt.choices)
    by_kind = {int: "N", float: "X", bool: "true|false"}
    return by_kind.get(opt.kind) or ("URL" if opt.name.endswith("url") else opt.name.upper())


def listing(classes: Iterable[type[Benchmark[object]]]) -> list[str]:
    """What `pytest --tom-set list` prints: per benchmark, each setting with what it takes, its default and help."""
    lines = [f"Benchmark settings: {SET_OPTION} BENCH.NAME=VALUE (repeatable), ini {SET_INI} (one per line), or a "
             "keyword of pytest_tom.suite(...); precedence: suite keyword > command line > ini."]
    for cls in classes:
        lines += ["", f"{cls.name}:"]
        for opt in cls.options:
            lines.append(f"  {cls.name}.{opt.name}={metavar(opt)}  (default: {opt.default or '(empty)'})")
            lines.append(textwrap.fill(opt.help, width=100, initial_indent=" " * 6, subsequent_indent=" " * 6))
    return lines
