"""The papers' published rows, shipped as data, so a run can show a named model's number beside the user's.

Each benchmark ships `pytest_tom/evals/<benchmark>/reference.csv` with the columns `model,settings,metric,value,source`:

- `model`: the model as the paper's table names it (`GPT-4o`, `GPT-4 0613 (June)`); chain-of-thought or other
  protocol variants are not part of the name but of `settings`.
- `settings`: the settings under which our run follows that table's protocol, as `--tom-set` names them
  (`tombench.prompt=cot;tombench.aggregation=paper`). A row applies where each has that value in the run's rendered
  settings (a CoT row never sits beside a vanilla run); one it does not name does not matter, so a setting added to a
  benchmark later never retires a row.
- `metric`: the dotted key of our typed `Metric` for the paper's column (`languages.en.tasks.fbt.accuracy`).
- `value`: the paper's number in the unit of our metric. Our accuracies are shares in [0, 1] (unit `rate`), so a
  paper's `90.8` (%) is stored as `0.908`: the decimal point moved, no digit changed. FANToM reports percentages
  (unit `percent`, upstream's `round(v, 3) * 100`), so its rows keep the paper's numbers as printed.
- `source`: the paper (or official README) and table it was copied from.

A list-valued setting (FANToM's `contexts`, ToMBench's `languages`) is never a row setting: the metric key already
names the context or language, and a run of `short,full` must match a `short` row.

What the shipped files hold, and why some protocol details are not row settings:
- FANToM: the 2023 paper's Tables 9 (short and full context), 3 and 4 (its CoT rows name `evaluator=2023`: the CoT
  prompt form differs by revision), and the official README's newer main and control tables (1cae6fa), whose
  control ALL*/ALL are the rule-named `:rev2024` keys. The embedder is not a setting here (`auto` may or may not be
  the paper's).
- ToMBench: Tables 2, 3, 21 and 22; GPT-4 rows carry `tries=1` (the paper asked GPT-4 once), the others `tries=5`.
- SimpleToM: Tables 2 to 5. The CoT rows (Table 5) give behavior and judgment only: the official CoT run also
  changes the mental-state prompt, so our mental-state accuracy and average under CoT are not the paper's columns.
- ToMATO: Tables 3, 5, 10 and 11 (means only; the paper's ± is over five sampled runs). ToMValley: Tables 3, 4 and 6.
- Hi-ToM, BigToM, OpenToM: none yet (their papers' tables could not be read; notebooks in the repositories are not
  published tables).

Rows are never computed: a number that is not printed in a table is not here. Reading is strict, and every error names
the file, the line and the field, because a wrong reference row would silently mislead every comparison drawn from it.
"""

from __future__ import annotations

import csv
import functools
import io
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError, TomDataError

COLUMNS = ("model", "settings", "metric", "value", "source")
"""The header every reference file has, in this order."""
EVALS = Path(__file__).resolve().parent.parent / "evals"
"""The package folder holding each built-in benchmark's `<name>/reference.csv` (shipped as package data)."""


@dataclass(frozen=True, slots=True)
class ReferenceRow:
    """One published number: `model` scored `value` on our `metric` under `settings` (name -> value, no prefix)."""

    benchmark: str
    model: str
    settings: tuple[tuple[str, str], ...]
    metric: str
    value: float
    source: str
    line: int = 0
    """Its line in the CSV file (1 is the header), so a message can point at it."""

    def applies(self, run_settings: Mapping[str, Any]) -> bool:
        """Whether a run with these rendered settings follows this row's protocol (its settings are a subset)."""
        return all(name in run_settings and _text(run_settings[name]) == value for name, value in self.settings)


def _text(value: Any) -> str:
    """A rendered setting as the CSV writes it: bools as `true`/`false`, the rest as `str` gives them."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def parse_settings(text: str, benchmark: str) -> tuple[tuple[str, str], ...]:
    """`bench.a=1;bench.b=x` as sorted (name, value) pairs; ValueError names what is wrong."""
    pairs: dict[str, str] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        prefix, dot, name = key.strip().partition(".")
        if not eq or not dot or not name or not value.strip():
            raise ValueError(f"{part!r} is not {benchmark}.NAME=VALUE")
        if prefix != benchmark:
            raise ValueError(f"{part!r} is a setting of {prefix!r}, not of {benchmark!r}")
        if name in pairs:
            raise ValueError(f"{name!r} is given twice")
        pairs[name] = value.strip()
    return tuple(sorted(pairs.items()))


def parse_reference(text: str, benchmark: str, path: object = "<text>") -> list[ReferenceRow]:
    """The rows of one reference CSV, validated; `path` only names the file in errors."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise TomDataError("the reference file is empty; it needs the header " + ",".join(COLUMNS), path=path)
    if tuple(header) != COLUMNS:
        unknown = [c for c in header if c not in COLUMNS]
        missing = [c for c in COLUMNS if c not in header]
        what = (f"unknown column {unknown[0]!r}" if unknown else f"missing column {missing[0]!r}" if missing
                else "columns out of order")
        raise TomDataError(f"{what}: the header must be {','.join(COLUMNS)}", path=path, record="line 1")
    rows: list[ReferenceRow] = []
    seen: dict[tuple[str, tuple[tuple[str, str], ...], str], int] = {}
    for fields in reader:
        line = reader.line_num
        if not fields:
            continue
        if len(fields) != len(COLUMNS):
            raise TomDataError(f"{len(fields)} fields, expected {len(COLUMNS)}", path=path, record=f"line {line}")
        cells = dict(zip(COLUMNS, fields, strict=True))
        for name in ("model", "metric", "value", "source"):
            if not cells[name].strip():
                raise TomDataError("empty field", path=path, record=f"line {line}", field=name)
        try:
            value = float(cells["value"])
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise TomDataError(f"{cells['value']!r} is not a number", path=path, record=f"line {line}", field="value")
        try:
            settings = parse_settings(cells["settings"], benchmark)
        except ValueError as exc:
            raise TomDataError(str(exc), path=path, record=f"line {line}", field="settings") from None
        row = ReferenceRow(benchmark, cells["model"].strip(), settings, cells["metric"].strip(), value,
                           cells["source"].strip(), line)
        key = (row.model.casefold(), row.settings, row.metric)
        if key in seen:
            raise TomDataError(f"duplicate of line {seen[key]} (same model, settings and metric)", path=path,
                               record=f"line {line}", field="metric")
        seen[key] = line
        rows.append(row)
    return rows


def load_reference(benchmark: str, path: Path | None = None) -> list[ReferenceRow]:
    """`benchmark`'s shipped rows (or those of `path`); none when the benchmark ships no file (a third-party one)."""
    path = path or EVALS / benchmark / "reference.csv"
    if not path.is_file():
        return []
    return parse_reference(path.read_text(encoding="utf-8"), benchmark, path)


def select(rows: Sequence[ReferenceRow], model: str, run_settings: Mapping[str, Any]) -> list[ReferenceRow]:
    """The rows of `model` (case-insensitive, as the paper spells it) whose protocol the run follows."""
    wanted = model.strip().casefold()
    return [r for r in rows if r.model.casefold() == wanted and r.applies(run_settings)]


@functools.lru_cache(maxsize=32)
def shipped(benchmark: str) -> tuple[ReferenceRow, ...]:
    """`benchmark`'s shipped rows, read once per process (the summary, the report and the gates all ask)."""
    return tuple(load_reference(benchmark))


def missing(rows: Sequence[ReferenceRow], model: str, benchmark: str, run_settings: Mapping[str, Any]) -> str:
    """Why no row of `model` can be set beside this run: the model has none for `benchmark`, or only under other
    settings, named as the run has them and as the rows have them (`no published GPT-4o row for tombench with prompt=cot
    (published: prompt=vanilla)`). Naming the nearest protocol's differences, not every setting, says what to change.
    """
    own = [r for r in rows if r.model.casefold() == model.strip().casefold()]
    if not own:
        return f"no published {model} row for {benchmark}"
    name = own[0].model
    nearest: list[str] | None = None
    for settings in dict.fromkeys(r.settings for r in own):
        differ = [n for n, v in settings if n not in run_settings or _text(run_settings[n]) != v]
        if nearest is None or len(differ) < len(nearest):
            nearest = differ
    names = sorted(nearest or [])
    ours = ", ".join(f"{n}={_text(run_settings[n])}" if n in run_settings else f"{n} unset" for n in names)
    theirs = ", ".join(f"{n}={' or '.join(sorted({v for r in own for k, v in r.settings if k == n}))}" for n in names)
    return f"no published {name} row for {benchmark} with {ours} (published: {theirs})"


def beside(rows: Sequence[ReferenceRow], models_wanted: Iterable[str], benchmark: str, run_settings: Mapping[str, Any],
           metrics: Collection[str]) -> tuple[list[ReferenceRow], list[str]]:
    """The rows of the wanted models that apply to this run and name one of its `metrics`, and one note per model that
    has none (`missing`, or rows that apply but name no metric this run has). A row under another protocol is never
    returned: a number measured otherwise would mislead, so the note says why nothing is shown instead.
    """
    out: list[ReferenceRow] = []
    notes: list[str] = []
    for model in models_wanted:
        applying = select(rows, model, run_settings)
        if not applying:
            notes.append(missing(rows, model, benchmark, run_settings))
            continue
        found = [r for r in applying if r.metric in metrics]
        if not found:
            notes.append(f"the published {applying[0].model} rows for {benchmark} name no metric of this run "
                         f"(they name {', '.join(dict.fromkeys(r.metric for r in applying[:3]))}...)")
        out += found
    return out, notes


def check_names(wanted: Sequence[str], rows_by_benchmark: Mapping[str, Sequence[ReferenceRow]],
                flag: str = "--tom-reference") -> None:
    """Refuse a model no benchmark of this run has a published row for, listing the names each benchmark has (a typo
    must not silently show nothing). TomConfigError.
    """
    known = {r.model.casefold() for rows in rows_by_benchmark.values() for r in rows}
    unknown = [w for w in wanted if w.strip().casefold() not in known]
    if unknown:
        names = "; ".join(f"{b}: {', '.join(dict.fromkeys(r.model for r in rows)) or 'none shipped'}"
                          for b, rows in rows_by_benchmark.items())
        raise TomConfigError(f"{flag}: no benchmark of this run has a published row for {', '.join(map(repr, unknown))} "
                             f"(names are case-insensitive). Published models: {names}")
