"""Command-line options and ini keys, parsed once into `TomOptions`. Every `--tom-*` flag has an ini twin `tom_*` (whose
help points to the flag), defaults are plain strings so pytest-xdist can ship them, and benchmark settings are
`--tom-set BENCH.NAME=VALUE` (`pytest_tom.settings`). Their former flags `--tom-<benchmark>-<name>` and ini keys still
work for one release, hidden, with a `TomDeprecationWarning` at each use.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_tom import constants as C
from pytest_tom import settings as S
from pytest_tom.errors import TomConfigError, TomDeprecationWarning
from pytest_tom.evals import Registry
from pytest_tom.framework.base import Benchmark
from pytest_tom.gates.config import DEFAULT_BASELINE, GateConfig, parse_rate
from pytest_tom.gates.thresholds import parse_threshold
from pytest_tom.models import USAGE
from pytest_tom.models import schemes as model_schemes
from pytest_tom.robustness import register_profiles

# Each row: flag, ini key, help, addoption keywords; a metavar says what it takes (`--tom-sample=N`, not `=SAMPLE`).
_GENERAL: list[tuple[str, str, str, dict[str, Any]]] = [
    (C.MODEL_OPTION, "tom_model", "", {"metavar": "URI"}),  # help generated from the scheme registry: see model_help
    (C.BENCHMARK_OPTION, "tom_benchmark", "", {"metavar": "NAMES"}),  # help generated from the registry: benchmark_help
    (C.DATA_DIR_OPTION, "tom_data_dir", f"Folder holding each benchmark's official files (<dir>/tombench/data/*.jsonl...). "
     f"Default: ${C.DATA_DIR_ENV}.", {"metavar": "DIR"}),
    (C.CACHE_DIR_OPTION, "tom_cache_dir", f"Response cache folder. Default: ${C.CACHE_DIR_ENV} or ~/.cache/pytest-tom.",
     {"metavar": "DIR"}),
    (C.SAMPLE_OPTION, "tom_sample", "Run a stratified sample of N questions per suite (after -m/-k), for quick runs.",
     {"metavar": "N"}),
    (C.SEED_OPTION, "tom_seed", "Seed of --tom-sample (default 0); the same seed selects the same questions.", {"metavar": "N"}),
    (C.REPORT_OPTION, "tom_report", "Write a JSON report (metrics, per-item records, responses) to this file; "
     "checked before the run.", {"metavar": "PATH"}),
    ("--tom-html", "tom_html", "Write one self-contained HTML page of the run (metric tables, charts per facet, "
     "baseline differences and flips, robustness counterexamples, a searchable item table) to this file; needs "
     "matplotlib (pip install 'pytest-tom[html]'). Rebuild it from a JSON report with python -m pytest_tom html.",
     {"metavar": "PATH"}),
    ("--tom-judge", "tom_judge", "A second model URI (any --tom-model URI) that answers the judged step of a benchmark "
     "whose official scorer falls back to an LLM grader (BigToM); cached like every request. Its verdicts are reported "
     "beside the deterministic scores, never instead of them. Default: none (the deterministic rule alone).",
     {"metavar": "URI"}),
    (C.BATCH_SIZE_OPTION, "tom_batch_size", "Requests per model batch (default: the backend's own).", {"metavar": "N"}),
    (C.MAX_ERRORS_OPTION, "tom_max_errors", "Model errors (API failures after retries) to tolerate: up to N erroring "
     "questions are skipped instead of failing the run (default 0). Errors are never scored as wrong answers.", {"metavar": "N"}),
    ("--tom-progress", "tom_progress", "Live terminal output while the model answers: a bar with requests done/total, "
     "rate, elapsed time and ETA, and a line for one-time work (converting, loading a model). auto (default): the bar "
     "on a terminal, plain lines otherwise; on: the bar always; off: neither.", {"metavar": "auto|on|off"}),
    ("--tom-robustness", "tom_robustness", "Robustness strategies to search per question with hypothesis, comma-separated "
     "(rename, permute, irrelevant, whitespace, rephrase, witness, other_character, or all): adds a "
     "<bench>_robustness[<question>-<strategy>] item per applicable question, marked tom_robustness "
     "(select them with -m tom_robustness).", {"metavar": "NAMES"}),
    ("--tom-robustness-examples", "tom_robustness_examples", "Perturbations hypothesis may try per robustness item "
     "(default 10): each is one model request, answered through the cache.", {"metavar": "N"}),
    ("--tom-robustness-profile", "tom_robustness_profile", "Hypothesis settings profile of the robustness items: "
     "tom-ci (derandomized, no example database: reproducible), tom-dev (failing examples replayed first), or one "
     "you registered; default tom-ci when $CI is set, else tom-dev.", {"metavar": "NAME"}),
    ("--tom-reference", "tom_reference", "Show published models' numbers beside yours: comma-separated model names as "
     "the papers' tables spell them (case-insensitive, e.g. gpt-4o). The rows ship with each benchmark "
     "(pytest_tom/evals/<benchmark>/reference.csv: model, settings, metric, value, source table, copied from the papers "
     "and official READMEs) and are shown in the summary, the JSON report and the Markdown only where this run's "
     "settings match the row's protocol; otherwise the summary says there is none. A name no benchmark of the run "
     "has is a usage error listing the names. A threshold can name a row: 'tombench.languages.en.task_avg>=ref:gpt-4o'.",
     {"metavar": "NAMES"}),
    ("--tom-detail", "tom_detail", "How a wrong answer is shown: short (the answer, the gold and the raw responses, "
     "a few lines) or full (the prompt, the options and every try). Default: short, full with -v or --tb=long. The "
     "JSON report always holds the full detail.", {"metavar": "short|full"}),
]
_GATES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("--tom-threshold", "tom_thresholds", "A gate: METRIC[:lower|upper]>=VALUE or <=VALUE, e.g. 'tombench.accuracy:lower>=0.3', "
     "'fantom.all_star>=5%', 'tombench.errors<=0' (METRIC is <suite>.<metric>, shell globs allowed), or against a "
     "published row (see --tom-reference): 'tombench.languages.en.task_avg>=ref:chatglm3-6b-5%'. Repeatable; "
     "the ini key takes one per line. Any gate makes a gate run: wrong answers no longer fail items, the gates decide.",
     {"action": "append", "metavar": "RULE"}),
    ("--tom-baseline", "tom_baseline", "Compare this run with a stored baseline (see --tom-baseline-save) under the "
     "--tom-compare-fail rules (default: every suite's accuracy, margin 0).", {"metavar": "PATH"}),
    ("--tom-baseline-save", "tom_baseline_save", f"Store this run as a baseline (default path: {DEFAULT_BASELINE}).",
     {"nargs": "?", "const": DEFAULT_BASELINE, "metavar": "PATH"}),
    ("--tom-compare-fail", "tom_compare_fail", "What fails against --tom-baseline: PATTERN[:DROP], e.g. "
     "'fantom.all_star:2%' (relative: 2% of the baseline value), 'tombench.ability.*:0.03' or ':3pts' (absolute); "
     "no DROP means margin 0; a final ':partial' compares on the questions the baseline has when it lacks some of "
     "this run's (refused otherwise, before any model request). Repeatable; the ini key takes one per line.",
     {"action": "append", "metavar": "RULE"}),
    ("--tom-alpha", "tom_alpha", "Significance level of the baseline comparison, Holm-corrected across the metrics "
     "compared (default 0.05).", {"metavar": "X"}),
    ("--tom-noise-flip-rate", "tom_noise_flip_rate", "The model's measured run-to-run flip rate (share of questions "
     "whose correctness changes between two runs of the same model), so a comparison never fails on that noise; measure it with "
     "'python -m pytest_tom.gates.flips A.json B.json' on two runs' reports.", {"metavar": "X"}),
    ("--tom-markdown", "tom_markdown", "Append a Markdown summary of the gates to this file (e.g. "
     "\"$GITHUB_STEP_SUMMARY\").", {"metavar": "PATH"}),
]
_FLAG = {"action": "store_true"}
_INI_KINDS: dict[str, dict[str, Any]] = {"store_true": {"type": "bool", "default": False},
                                         "append": {"type": "linelist", "default": []}}
_GATE_FLAGS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("--tom-baseline-update", "tom_baseline_update", "Rewrite --tom-baseline from this run; comparisons are shown "
     "but never fail.", _FLAG),
    ("--tom-baseline-force", "tom_baseline_force", "Compare with a baseline even across different data, protocol "
     "or settings (refused otherwise).", _FLAG),
]
_FLAGS: list[tuple[str, str, str, dict[str, Any]]] = [
    (C.NO_CACHE_OPTION, "tom_no_cache", "Neither read nor write the response cache.", _FLAG),
    (C.DOWNLOAD_OPTION, "tom_download", "Download missing benchmark data from the official source (pinned, sha256-checked).",
     _FLAG),
]


def model_help(schemes: Iterable[str] | None = None) -> str:
    """`--tom-model`'s help: every scheme the registry knows (built-in and entry points), so it cannot drift."""
    names = list(schemes if schemes is not None else model_schemes())
    forms = [USAGE.get(s, f"{s}:... (a third-party backend)") for s in names]
    return ("Model under test, as a URI. Schemes: " + "; ".join(forms) + ". Options after '?' are listed in the "
            "README (Model URIs); an unknown one is an error that lists the known ones. Instead, the tom_model "
            "fixture can be overridden in conftest.py.")


def benchmark_help(registry: Registry) -> str:
    """`--tom-benchmark`'s help: the benchmarks of the registry (built-in and entry points)."""
    return (f"Comma-separated benchmarks to run without any test file; available: {', '.join(registry.names())} "
            "(e.g. tombench,fantom; each runs once).")


SET_HELP = (f"A benchmark setting, e.g. tombench.prompt=cot; repeatable (a later one wins), "
            f"the ini key {S.SET_INI} takes one per line. `pytest {S.SET_OPTION} {S.LIST_WORD}` lists every "
            "benchmark's settings with their choices and defaults.")


def add_options(parser: pytest.Parser, registry: Registry) -> None:
    """The general --tom-* options, --tom-set, and the hidden deprecated flags of each benchmark the registry imports now."""
    group = parser.getgroup("tom", "pytest-tom: theory-of-mind benchmarks as tests")
    gates = parser.getgroup("tom-gates", "pytest-tom regression gates: thresholds and baselines")
    generated = {"tom_model": model_help(), "tom_benchmark": benchmark_help(registry)}
    tom_rows = [*_GENERAL, (S.SET_OPTION, S.SET_INI, SET_HELP, {"action": "append", "metavar": "BENCH.NAME=VALUE"}), *_FLAGS]
    for where, rows in ((group, tom_rows), (gates, [*_GATES, *_GATE_FLAGS])):
        for flag, dest, text, kw in rows:
            action = str(kw.get("action", ""))
            # argparse %-formats help texts; the ini help is shown as written, a pointer to its flag (not the text twice).
            where.addoption(flag, dest=dest, default=None, help=generated.get(dest, text).replace("%", "%%"), **kw)
            ini_help = f"Same as {flag}" + (", one per line." if action == "append" else ".")
            parser.addini(dest, help=ini_help, **_INI_KINDS.get(action, {"default": None}))
    for cls in registry.loadable():
        add_benchmark_options(parser, cls)


def add_benchmark_options(parser: pytest.Parser, cls: type[Benchmark[object]]) -> None:
    """The deprecated `--tom-<benchmark>-<setting>` flags of a benchmark, hidden from `--help` (once per name). Parsed
    for one release (`legacy_settings`); their ini twins come from `add_legacy_ini`.
    """
    group = parser.getgroup("tom")
    for opt in cls.options:
        flag = S.legacy_flag(cls.name, opt.name)
        if any(flag in o.names() for o in group.options):
            continue  # registered twice (entry point and hook): the first one wins
        group.addoption(flag, dest=S.legacy_ini(cls.name, opt.name), default=None, help=argparse.SUPPRESS)


def add_legacy_ini(parser: pytest.Parser, cls: type[Benchmark[object]], done: set[str]) -> None:
    """The deprecated `tom_<benchmark>_<setting>` ini keys of a benchmark, so an ini file using them still works.
    Registered once the command line asks for no help (pytest lists every ini key in `--help` and cannot hide one); ini
    keys are validated after collection, so no "Unknown config option" warning.
    """
    for opt in cls.options:
        key = S.legacy_ini(cls.name, opt.name)
        if key not in done:
            done.add(key)
            parser.addini(key, help=f"Deprecated: {S.SET_INI} = {cls.name}.{opt.name}=VALUE.", default=None)


def _value(config: pytest.Config, dest: str) -> Any:
    value = config.getoption(dest, default=None)
    value = _ini(config, dest) if value is None else value
    return value if value not in ("", []) else None


def _int(config: pytest.Config, dest: str, flag: str, minimum: int | None = 1) -> int | None:
    raw = _value(config, dest)
    if raw is None:
        return None
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise TomConfigError(f"{flag}={raw!r}: expected an integer") from None
    if minimum is not None and value < minimum:
        raise TomConfigError(f"{flag}={value}: must be " + ("at least 1" if minimum else "0 or more"))
    return value


def comma_names(raw: object, flag: str, what: str, example: str, *, fold: bool = False) -> tuple[str, ...]:
    """The names of a comma-separated `--tom-benchmark` or `--tom-reference` value, each once (case-insensitively with
    `fold`), in the order first given: a repeated benchmark would run every item twice. Unset or empty
    (`--tom-benchmark=`, to override an ini setting) means none; a value naming nothing (",") is a usage error.
    """
    if raw is None or raw == "":
        return ()
    names: dict[str, str] = {}
    for part in (p.strip() for p in str(raw).split(",")):
        if part:
            names.setdefault(part.casefold() if fold else part, part)
    if not names:
        raise TomConfigError(f"{flag} (ini {flag[2:].replace('-', '_')}) is {raw!r}: it names no {what}; give "
                             f"comma-separated {what} names, e.g. {example}")
    return tuple(names.values())


def report_path_problem(path: Path) -> str | None:
    """Why a report cannot be written to `path` (None when it can), in words for the user. Missing folders are fine
    (they are created); a folder, a special file, an ancestor that is not a folder or one this process may not write in
    are not.
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
    """Refuse an unwritable output path at configure time, before the run spends any model time."""
    problem = report_path_problem(path)
    if problem is not None:
        raise TomConfigError(f"{flag}={path}: {problem}")


def html_path(config: pytest.Config, root_dir: Path) -> Path | None:
    """--tom-html's path, checked like the report's, and refused at once without matplotlib (before any model request)."""
    raw = _value(config, "tom_html")
    if not raw:
        return None
    path = root_dir / Path(str(raw)).expanduser()
    check_report_path(path, "--tom-html")
    from pytest_tom.output.html.charts import available

    if not available():
        raise TomConfigError(f"--tom-html={raw}: matplotlib is not installed; the HTML report draws its charts with it: "
                             "pip install 'pytest-tom[html]'")
    return path


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
    html: Path | None = None
    """--tom-html: the self-contained HTML page (`pytest_tom.output.html`), written with the report."""
    max_errors: int = 0
    judge: str | None = None
    """--tom-judge: the URI of the model judge requests go to (`pytest_tom.framework.judge`); None: no judge."""
    progress: str = "auto"
    """auto, on or off: the live request bar and one-time-work lines (`pytest_tom.run.progress`)."""
    detail: str | None = None
    """short or full: how a failing item is shown; None leaves it to -v and --tb (`pytest_tom.run.failures`)."""
    robustness: tuple[str, ...] = ()
    """Strategy names of the robustness items (`pytest_tom.robustness`); suites may add their own."""
    robustness_examples: int = 10
    robustness_profile: str = "tom-dev"
    references: tuple[str, ...] = ()
    """--tom-reference: published models whose rows are shown beside this run's metrics (`framework.reference`)."""
    gates: GateConfig = field(default_factory=GateConfig)
    """Thresholds, baseline and comparison rules (`pytest_tom.gates.config`)."""
    benchmark_settings: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per benchmark, the settings given by flag or ini (suite keywords override them)."""
    node_ids: dict[str, frozenset[str] | None] = field(default_factory=dict)
    """Per benchmark, the item names addressed on the command line (None: the whole benchmark)."""

    @classmethod
    def from_config(cls, config: pytest.Config, registry: Registry,
                    node_ids: dict[str, frozenset[str] | None] | None = None) -> TomOptions:
        root_dir = Path(config.invocation_params.dir)
        benchmarks = comma_names(_value(config, "tom_benchmark"), C.BENCHMARK_OPTION, "benchmark", "tombench,fantom")
        benchmarks += tuple(b for b in (node_ids or {}) if b not in benchmarks)
        data_dir = _value(config, "tom_data_dir") or os.environ.get(C.DATA_DIR_ENV) or None
        cache_dir = (_value(config, "tom_cache_dir") or os.environ.get(C.CACHE_DIR_ENV)
                     or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-tom")
        sample = _int(config, "tom_sample", C.SAMPLE_OPTION)
        batch = _int(config, "tom_batch_size", C.BATCH_SIZE_OPTION)
        max_errors = _int(config, "tom_max_errors", C.MAX_ERRORS_OPTION, minimum=0) or 0
        progress = str(_value(config, "tom_progress") or "auto").strip().lower()
        if progress not in ("auto", "on", "off"):
            raise TomConfigError(f"--tom-progress={progress!r} (ini tom_progress): expected auto, on or off")
        detail = _value(config, "tom_detail")
        detail = str(detail).strip().lower() if detail is not None else None
        if detail not in (None, "short", "full"):
            raise TomConfigError(f"--tom-detail={detail!r} (ini tom_detail): expected short or full")
        robustness, examples, profile = robustness_options(config)
        raw_report = _value(config, "tom_report")
        report = root_dir / Path(str(raw_report)).expanduser() if raw_report else None
        if report is not None:
            check_report_path(report)
        html = html_path(config, root_dir)
        settings = benchmark_settings(config, registry)
        return cls(
            gates=gate_config(config, root_dir), model=_value(config, "tom_model"), benchmarks=benchmarks,
            data_dir=(root_dir / Path(str(data_dir)).expanduser()) if data_dir else None,
            cache_dir=root_dir / Path(str(cache_dir)).expanduser(), no_cache=bool(_value(config, "tom_no_cache")),
            download=bool(_value(config, "tom_download")), sample=sample, report=report, batch_size=batch,
            seed=_int(config, "tom_seed", C.SEED_OPTION, minimum=None) or 0, max_errors=max_errors,
            progress=progress, detail=detail, robustness=robustness, robustness_examples=examples,
            robustness_profile=profile, benchmark_settings=settings, node_ids=dict(node_ids or {}),
            references=comma_names(_value(config, "tom_reference"), "--tom-reference", "model", "gpt-4o,llama3.1 8b",
                                   fold=True),
            html=html, judge=_value(config, "tom_judge") or None,
        )


def benchmark_settings(config: pytest.Config, registry: Registry) -> dict[str, dict[str, str]]:
    """Per benchmark, the settings of the command line over those of the ini file, each checked now. In each place the
    deprecated spelling comes first and `tom_set`/`--tom-set` after it, so the new spelling wins where both name one
    setting.
    """
    ini_legacy, flag_legacy = legacy_settings(config, registry)
    entries = [*ini_legacy, *S.parse_entries(config.getini(S.SET_INI) or [], f"ini {S.SET_INI}"),
               *flag_legacy, *S.parse_entries(config.getoption(S.SET_INI, default=None) or [], S.SET_OPTION)]
    return S.resolve(entries, registry.get, registry.names())


def legacy_settings(config: pytest.Config, registry: Registry) -> tuple[list[S.Setting], list[S.Setting]]:
    """The settings given by the deprecated ini keys and flags, each use warned once (on the xdist controller only)."""
    on_worker = hasattr(config, "workerinput")
    ini: list[S.Setting] = []
    flags: list[S.Setting] = []
    for bench in registry.loadable():
        for opt in bench.options:
            dest = S.legacy_ini(bench.name, opt.name)
            for is_ini, raw in ((False, config.getoption(dest, default=None)), (True, _ini(config, dest))):
                if raw is None or raw == "":
                    continue
                origin = f"ini {dest}" if is_ini else S.legacy_flag(bench.name, opt.name)
                (ini if is_ini else flags).append(S.Setting(bench.name, opt.name, str(raw), origin))
                if not on_worker:
                    message = S.deprecation(bench.name, opt.name, str(raw), ini=is_ini)
                    config.issue_config_time_warning(TomDeprecationWarning(message), stacklevel=2)
    return ini, flags


def _ini(config: pytest.Config, name: str) -> Any:
    try:
        return config.getini(name)
    except ValueError:  # not registered: `--help` runs, or the plugin was loaded too late to register it
        return None


def robustness_options(config: pytest.Config) -> tuple[tuple[str, ...], int, str]:
    """The robustness strategies (checked against the registry now), examples per item and hypothesis profile."""
    raw = _value(config, "tom_robustness")
    names: tuple[str, ...] = ()
    if raw:
        from pytest_tom.robustness import resolve

        names = tuple(s.name for s in resolve(str(raw)))
    examples = _int(config, "tom_robustness_examples", "--tom-robustness-examples")
    profile = str(_value(config, "tom_robustness_profile") or ("tom-ci" if os.environ.get("CI") else "tom-dev"))
    if raw:
        from hypothesis import settings
        from hypothesis.errors import InvalidArgument

        register_profiles()
        try:
            settings.get_profile(profile)
        except InvalidArgument:
            raise TomConfigError(f"--tom-robustness-profile={profile!r}: no hypothesis settings profile of that name "
                                 "(tom-ci, tom-dev, or one registered with hypothesis.settings.register_profile)") from None
    return names, examples or 10, profile


def gate_config(config: pytest.Config, root: Path) -> GateConfig:
    """The gate options, each checked now: a bad rule or an unwritable path is a usage error before any model call."""

    def path(dest: str) -> Path | None:
        raw = _value(config, dest)
        return root / Path(str(raw)).expanduser() if raw else None

    def many(dest: str) -> list[str]:
        raw = config.getoption(dest, default=None) or []
        return list(raw) or list(config.getini(dest) or [])

    thresholds = tuple(parse_threshold(line) for line in S.entry_lines(many("tom_thresholds")))
    compare = tuple(r.strip() for raw in many("tom_compare_fail") for r in str(raw).splitlines() if r.strip())
    from pytest_tom.gates.compare import parse_compare_rule

    for rule in compare:
        parse_compare_rule(rule)
    alpha = _value(config, "tom_alpha")
    noise = _value(config, "tom_noise_flip_rate")
    cfg = GateConfig(
        thresholds=thresholds, baseline=path("tom_baseline"), save=path("tom_baseline_save"),
        update=bool(_value(config, "tom_baseline_update")), compare=compare, force=bool(_value(config, "tom_baseline_force")),
        alpha=parse_rate(str(alpha), "--tom-alpha") if alpha is not None else 0.05, markdown=path("tom_markdown"),
        noise_flip_rate=parse_rate(str(noise), "--tom-noise-flip-rate", high=1.0) if noise is not None else None,
    )
    if cfg.update and cfg.baseline is None:
        raise TomConfigError("--tom-baseline-update needs --tom-baseline=PATH: the file to rewrite from this run")
    if cfg.compare and cfg.baseline is None:
        raise TomConfigError("--tom-compare-fail needs --tom-baseline=PATH: the stored run to compare with")
    for flag, target in (("--tom-baseline-save", cfg.save), ("--tom-markdown", cfg.markdown),
                         ("--tom-baseline-update", cfg.baseline if cfg.update else None)):
        if target is not None:
            check_report_path(target, flag)
    return cfg
