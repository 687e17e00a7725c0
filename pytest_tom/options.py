"""Command-line options and ini keys, parsed once into `TomOptions`.

Every `--tom-*` flag has an ini twin (`tom_*`), defaults are plain strings so
pytest-xdist can ship them to workers, and benchmark-specific settings are
generated from each benchmark's declared options as `--tom-<benchmark>-<name>`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_tom import constants as C
from pytest_tom.errors import TomConfigError
from pytest_tom.evals import Registry
from pytest_tom.evals.base import Benchmark

_GENERAL: list[tuple[str, str, str, dict[str, Any]]] = [
    (C.MODEL_OPTION, "tom_model", "Model to test, as a URI: random[:seed], python:pkg.module:callable, replay:PATH "
     "(more schemes with the real backends). The tom_model fixture can be overridden in conftest.py instead.", {}),
    (C.BENCHMARK_OPTION, "tom_benchmark", "Comma-separated benchmarks to run without any test file, "
     "e.g. tombench (each runs once).", {}),
    (C.DATA_DIR_OPTION, "tom_data_dir", f"Folder holding each benchmark's official files (<dir>/tombench/data/*.jsonl...). "
     f"Default: ${C.DATA_DIR_ENV}.", {}),
    (C.CACHE_DIR_OPTION, "tom_cache_dir", f"Response cache folder. Default: ${C.CACHE_DIR_ENV} or ~/.cache/pytest-tom.", {}),
    (C.SAMPLE_OPTION, "tom_sample", "Run a stratified sample of N questions per suite (after -m/-k), for quick runs.", {}),
    (C.SEED_OPTION, "tom_seed", "Seed of --tom-sample (default 0); the same seed selects the same questions.", {}),
    (C.REPORT_OPTION, "tom_report", "Write a JSON report (metrics, per-item records, responses) to this path; "
     "checked before the run.", {}),
    (C.BATCH_SIZE_OPTION, "tom_batch_size", "Requests per model batch (default: the backend's own).", {}),
    (C.MAX_ERRORS_OPTION, "tom_max_errors", "Model errors (API failures after retries) to tolerate: up to N erroring "
     "questions are skipped instead of failing the run (default 0). Errors are never scored as wrong answers.", {}),
]
_FLAGS: list[tuple[str, str, str]] = [
    (C.NO_CACHE_OPTION, "tom_no_cache", "Neither read nor write the response cache."),
    (C.DOWNLOAD_OPTION, "tom_download", "Download missing benchmark data from the official source (pinned, sha256-checked)."),
]


def add_options(parser: pytest.Parser, registry: Registry) -> None:
    """The general --tom-* options and those of every benchmark the registry can import now."""
    group = parser.getgroup("tom", "pytest-tom: theory-of-mind benchmarks as tests")
    for flag, dest, help_text, kw in _GENERAL:
        group.addoption(flag, dest=dest, default=None, metavar=dest.removeprefix("tom_").upper(), help=help_text, **kw)
        parser.addini(dest, help=help_text, default=None)
    for flag, dest, help_text in _FLAGS:
        group.addoption(flag, dest=dest, action="store_true", default=None, help=help_text)
        parser.addini(dest, help=help_text, type="bool", default=False)
    for cls in registry.loadable():
        add_benchmark_options(parser, cls)


def add_benchmark_options(parser: pytest.Parser, cls: type[Benchmark[object]]) -> None:
    """`--tom-<benchmark>-<setting>` and its ini twin for each of a benchmark's settings (once per name)."""
    group = parser.getgroup("tom")
    name = cls.name
    for opt in cls.options:
        dest = f"tom_{name}_{opt.name}"
        flag = f"--tom-{name}-{opt.name.replace('_', '-')}"
        if any(flag in o.names() for o in group.options):
            continue  # registered twice (entry point and hook): the first one wins
        choices = f" Choices: {', '.join(opt.choices)}." if opt.choices else ""
        text = f"[{name}] {opt.help}{choices} Default: {opt.default}."
        group.addoption(flag, dest=dest, default=None, metavar=opt.name.upper(), help=text)
        parser.addini(dest, help=text, default=None)


def _value(config: pytest.Config, dest: str) -> Any:
    value = config.getoption(dest, default=None)
    if value is None:
        try:
            value = config.getini(dest)
        except ValueError:
            value = None
    return value if value not in ("", []) else None


def _int(config: pytest.Config, dest: str, flag: str) -> int | None:
    raw = _value(config, dest)
    if raw is None:
        return None
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise TomConfigError(f"{flag}={raw!r}: expected an integer") from None


def benchmark_names(raw: object, flag: str = C.BENCHMARK_OPTION) -> tuple[str, ...]:
    """The names of a comma-separated `--tom-benchmark` value, each once, in the order first given.

    A repeated name would collect and run every item twice; a value with no name
    at all (",") would run nothing without a word, so it is an error. An unset or
    empty value (`--tom-benchmark=`, e.g. to override an ini setting) means none.
    """
    if raw is None or raw == "":
        return ()
    names = tuple(dict.fromkeys(b.strip() for b in str(raw).split(",") if b.strip()))
    if not names:
        raise TomConfigError(f"{flag} (ini tom_benchmark) is {raw!r}: it names no benchmark; "
                             "give comma-separated names, e.g. tombench,fantom")
    return names


def report_path_problem(path: Path) -> str | None:
    """Why a report cannot be written to `path` (None when it can), in words for the user.

    Missing folders are fine (the report creates them); what fails is a path that
    is a folder or a special file, a nearest existing ancestor that is not a
    folder, or one this process may not write in.
    """
    if path.is_dir():
        return f"is a directory; give a file path, e.g. {path / 'report.json'}"
    if path.exists() and not path.is_file():
        return "exists and is not a regular file"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"no permission to write in {parent}"
    return None


def check_report_path(path: Path, flag: str = C.REPORT_OPTION) -> None:
    """Refuse an unwritable report path at configure time, before the run spends any model time."""
    problem = report_path_problem(path)
    if problem is not None:
        raise TomConfigError(f"{flag}={path}: {problem}")


@dataclass(frozen=True, slots=True)
class TomOptions:
    model: str | None
    benchmarks: tuple[str, ...]
    data_dir: Path | None
    cache_dir: Path
    no_cache: bool
    download: bool
    sample: int | None
    seed: int
    report: Path | None
    batch_size: int | None
    max_errors: int = 0
    benchmark_settings: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per benchmark, the settings given by flag or ini (suite keywords override them)."""
    node_ids: dict[str, frozenset[str] | None] = field(default_factory=dict)
    """Per benchmark, the item names addressed on the command line (None: the whole benchmark)."""

    @classmethod
    def from_config(cls, config: pytest.Config, registry: Registry,
                    node_ids: dict[str, frozenset[str] | None] | None = None) -> TomOptions:
        root_dir = Path(config.invocation_params.dir)
        benchmarks = benchmark_names(_value(config, "tom_benchmark"))
        benchmarks += tuple(b for b in (node_ids or {}) if b not in benchmarks)
        data_dir = _value(config, "tom_data_dir") or os.environ.get(C.DATA_DIR_ENV) or None
        cache_dir = _value(config, "tom_cache_dir") or os.environ.get(C.CACHE_DIR_ENV)
        if not cache_dir:
            base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
            cache_dir = str(Path(base) / "pytest-tom")
        sample = _int(config, "tom_sample", C.SAMPLE_OPTION)
        if sample is not None and sample < 1:
            raise TomConfigError(f"{C.SAMPLE_OPTION}={sample}: must be at least 1")
        batch = _int(config, "tom_batch_size", C.BATCH_SIZE_OPTION)
        if batch is not None and batch < 1:
            raise TomConfigError(f"{C.BATCH_SIZE_OPTION}={batch}: must be at least 1")
        max_errors = _int(config, "tom_max_errors", C.MAX_ERRORS_OPTION) or 0
        if max_errors < 0:
            raise TomConfigError(f"{C.MAX_ERRORS_OPTION}={max_errors}: must be 0 or more")
        raw_report = _value(config, "tom_report")
        report = root_dir / Path(str(raw_report)).expanduser() if raw_report else None
        if report is not None:
            check_report_path(report)
        settings: dict[str, dict[str, str]] = {}
        for bench in registry.loadable():
            for opt in bench.options:
                v = _value(config, f"tom_{bench.name}_{opt.name}")
                if v is not None:
                    settings.setdefault(bench.name, {})[opt.name] = str(v)
        return cls(
            model=_value(config, "tom_model"),
            benchmarks=benchmarks,
            data_dir=(root_dir / Path(str(data_dir)).expanduser()) if data_dir else None,
            cache_dir=root_dir / Path(str(cache_dir)).expanduser(),
            no_cache=bool(_value(config, "tom_no_cache")),
            download=bool(_value(config, "tom_download")),
            sample=sample,
            seed=_int(config, "tom_seed", C.SEED_OPTION) or 0,
            report=report,
            batch_size=batch,
            max_errors=max_errors,
            benchmark_settings=settings,
            node_ids=dict(node_ids or {}),
        )
