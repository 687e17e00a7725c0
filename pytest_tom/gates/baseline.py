"""The baseline file: one run of the model a release candidate replaces, stored for paired comparisons. Per suite it
keeps what a later comparison needs, and what refuses one that would mean nothing: benchmark, settings, a data
fingerprint, the outcome and message of every question and aggregate that ran, and every gateable metric as its units
(ids, values, clusters), so a later benchmark version's grouping never matters. Model, plugin version and time are for
the reader. The file is versioned and validated against `schema/baseline.schema.json`, so a damaged or foreign file
stops the run naming the file and JSON path. It is read only as a regular file under `$TOM_BASELINE_MAX_MB` (256 MiB):
`/dev/zero` would exhaust memory, a FIFO wait forever.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.output.report import schema, write_atomic
from pytest_tom.record import DerivedRecord, MetricData, Outcome, Record, Verdict
from pytest_tom.sample import Sample

BASELINE_VERSION = 1
SAVE_OPTION = "--tom-baseline-save"
MAX_MB_ENV = "TOM_BASELINE_MAX_MB"
DEFAULT_MAX_MB = 256
"""A 7,200-question ToMValley baseline is a few MB; far more is a wrong path, not a baseline."""
MESSAGE_CHARS = 300
"""Failure messages are stored this long at most: enough to recognise a failure, small enough for 7k items."""


@dataclass(frozen=True)
class SuiteRun:
    """One suite of the current run, as the comparison and `build_baseline` need it. `suite_id` is `<suite>` in rule
    patterns; `data_fingerprint` is taken over the suite's samples before any selection, so deselecting items does not
    change it; `metrics` are its `gate_metrics`; `noise_flip_rate` is the flip rate measured in this run, if it was.
    """

    suite_id: str
    benchmark: str
    settings: Mapping[str, Any]
    data_fingerprint: str
    records: Sequence[Record]
    derived: Sequence[DerivedRecord]
    metrics: Mapping[str, MetricData]
    noise_flip_rate: float | None = None
    settings_before: Mapping[str, Any] = field(default_factory=dict)
    """What a baseline saved before a setting existed is read as having (`Benchmark.settings_before`)."""


@dataclass(frozen=True)
class BaselineItem:
    """A question's result in the baseline run: enough to list it when it flips."""

    outcome: Outcome
    message: str = ""
    facets: Mapping[str, str] = field(default_factory=dict)
    answer: Any = None
    """The parsed answer (absent from baselines saved before it was stored): the HTML flip list shows both answers."""


@dataclass(frozen=True)
class BaselineDerived:
    """An aggregate assertion's verdict in the baseline run."""

    kind: str
    verdict: Verdict
    message: str = ""


@dataclass(frozen=True)
class BaselineSuite:
    suite_id: str
    benchmark: str
    settings: Mapping[str, Any]
    data_fingerprint: str
    items: Mapping[str, BaselineItem]
    """The selection of the baseline run: every question that ran, by sample id."""
    derived: Mapping[str, BaselineDerived]
    metrics: Mapping[str, MetricData]
    noise_flip_rate: float | None = None


@dataclass(frozen=True)
class Baseline:
    version: int
    plugin_version: str
    created: str
    model_uri: str | None
    model_fingerprint: str | None
    suites: Mapping[str, BaselineSuite]
    path: str = ""
    """Where it was read from, for messages ("" when built in memory)."""


def data_fingerprint(samples: Sequence[Sample[Any]]) -> str:
    """A sha256 over what a benchmark asks and expects: ids, contexts, questions, choices, golds, facets. Two runs
    compare item by item only when item `x` is the same question in both; a new release or a fixed record changes this
    value. Samples are hashed in id order, each shared context once (7k FANToM samples: tens of ms). `extra` is left
    out: it is the benchmark's own, maybe not text, and what a prompt shows comes from the fields hashed here.
    """
    contexts: dict[int, str] = {}
    outer = hashlib.sha256()
    for s in sorted(samples, key=lambda s: (s.benchmark, s.id)):
        ctx = contexts.get(id(s.context))
        if ctx is None:
            kind = type(s.context).__name__
            ctx = contexts[id(s.context)] = hashlib.sha256(f"{kind}\n{s.context.render()}".encode()).hexdigest()
        row = [s.benchmark, s.id, ctx, s.question, [[c.label, c.text] for c in s.choices],
               list(s.gold) if isinstance(s.gold, tuple) else s.gold, sorted(s.facets.items())]
        outer.update(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode())
        outer.update(b"\n")
    return "sha256:" + outer.hexdigest()


def _message(result: Record | DerivedRecord) -> dict[str, str]:
    """A failure's message, clipped to MESSAGE_CHARS; nothing for a pass."""
    text = result.message
    if not text or result.passed:
        return {}
    return {"message": text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."}


def _suite_dict(run: SuiteRun) -> dict[str, Any]:
    items = {r.sample_id: {"outcome": r.outcome.value, **_message(r), "facets": dict(r.facets),
                           **({"answer": r.parsed} if r.parsed is not None else {})} for r in run.records}
    derived = {d.derived_id: {"kind": d.kind, "verdict": d.verdict.value, **_message(d)} for d in run.derived}
    metrics = {name: {"value": m.rate(), "n": m.n, "higher_is_better": m.higher_is_better, "description": m.description,
                      "ids": list(m.ids), "values": list(m.values), "clusters": list(m.clusters),
                      **({"labels": [list(x) for x in m.labels]} if m.labels else {})}
               for name, m in sorted(run.metrics.items())}
    # Settings as JSON gives them back (tuples become lists), so saved and current settings compare equal.
    settings = json.loads(json.dumps(dict(run.settings), default=str, sort_keys=True))
    return {"id": run.suite_id, "benchmark": run.benchmark, "settings": settings, "data_fingerprint": run.data_fingerprint,
            "noise_flip_rate": run.noise_flip_rate, "items": items, "derived": derived, "metrics": metrics}


def build_baseline(suites: Sequence[SuiteRun], *, model_uri: str | None, model_fingerprint: str | None,
                   plugin_version: str) -> dict[str, Any]:
    """The baseline file's content (JSON-ready) for the suites of one run."""
    ids = [s.suite_id for s in suites]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"suite ids must be unique in a baseline, got {dupes[0]!r} twice")
    return {"baseline_version": BASELINE_VERSION, "pytest_tom_version": plugin_version,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "model": {"uri": model_uri, "fingerprint": model_fingerprint}, "suites": [_suite_dict(s) for s in suites]}


def write_baseline(path: Path, baseline: Mapping[str, Any]) -> None:
    """Write a baseline atomically (`output.report.write_atomic`), so a reader or CI cache never sees half of one. Each
    question, derived result and metric takes one line (one JSON value per line would make a 7k-item file hundreds of
    thousands of lines long): a diff shows which ones changed.
    """

    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    def fields(mapping: Mapping[str, Any], skip: Sequence[str]) -> str:
        return dump({k: v for k, v in mapping.items() if k not in skip})[1:-1]

    def lines(parts: Iterable[str]) -> str:
        return ",".join("\n" + part for part in parts)

    nested = ("items", "derived", "metrics")
    suites = []
    for suite in baseline.get("suites", ()):
        blocks = [f'"{key}":{{' + lines(dump(k) + ":" + dump(v) for k, v in suite[key].items()) + "\n}" for key in nested]
        suites.append("{" + fields(suite, nested) + "," + lines(blocks) + "\n}")
    write_atomic(path, "{" + fields(baseline, ("suites",)) + ',"suites":[' + lines(suites) + "\n]}\n")


def describe_missing(path: Path | str) -> str:
    """What a user sees when `--tom-baseline` names a file that does not exist."""
    return (f"no baseline at {path}: there is nothing to compare this run with. Create one by running the model the candidate "
            f"must not be worse than (the current release) with `pytest {SAVE_OPTION}={path}` and the same suites and "
            f"settings, then keep the file with the repository or as a CI artifact and compare with `--tom-baseline={path}`.")


def _fail(path: Path, problem: str, where: str = "$") -> TomConfigError:
    return TomConfigError(f"baseline {path}: {problem} (at {where}). Re-create it with {SAVE_OPTION}={path}")


def max_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The largest baseline read, from `$TOM_BASELINE_MAX_MB` (MiB, default 256); a bad value is a usage error."""
    raw = (os.environ if environ is None else environ).get(MAX_MB_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_MB * 2**20
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if not mb > 0:
        raise TomConfigError(f"${MAX_MB_ENV}={raw!r}: expected a size in MiB above 0 (default {DEFAULT_MAX_MB})")
    return int(mb * 2**20)


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe), which would wait for a writer"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _check_kind(path: Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    what = next((text for test, text in _KINDS if test(mode)), "not a regular file")
    target = f" (a symlink to {os.path.realpath(path)})" if os.path.islink(path) else ""
    raise TomConfigError(f"baseline {path}{target}: is {what}, not a regular file; a baseline is the JSON file "
                         f"{SAVE_OPTION} writes, so it was not opened")


def _bytes(n: int) -> str:
    return f"{n:,} bytes" if n < 1024 else f"{n / 1024:,.1f} KiB" if n < 2**20 else f"{n / 2**20:,.1f} MiB"


def _check_size(path: Path, size: int, limit: int) -> None:
    if size > limit:
        raise TomConfigError(f"baseline {path}: {_bytes(size)} is over the limit of {_bytes(limit)} for a baseline (one "
                             f"of 7,200 questions takes a few MiB), so it was not read; if it really is a baseline, raise "
                             f"the limit with ${MAX_MB_ENV} (in MiB, default {DEFAULT_MAX_MB})")


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """The file's bytes, read only if it is a regular file (symlinks followed) of at most `limit` bytes. Checked on the
    path, then again on the open descriptor (the path may be swapped in between); opened non-blocking, so a FIFO put in
    its place is refused, not waited on.
    """
    limit = max_bytes() if limit is None else limit
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise TomConfigError(f"baseline {path}: a symlink to {os.readlink(path)}, which does not exist") from None
        raise TomConfigError(describe_missing(path)) from None
    except OSError as exc:
        raise TomConfigError(f"baseline {path}: cannot be read: {exc.strerror or exc}") from None
    _check_kind(path, info.st_mode)
    _check_size(path, info.st_size, limit)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise TomConfigError(f"baseline {path}: cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        _check_kind(path, info.st_mode)
        _check_size(path, info.st_size, limit)
        data = fh.read(limit + 1)
    _check_size(path, len(data), limit)  # it grew after fstat
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose key appears twice would keep its last value silently: an edited or merged file."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def load_baseline(path: Path, *, limit: int | None = None) -> Baseline:
    """Read and validate a baseline file; every problem is a TomConfigError naming the file and the JSON path. `limit`:
    the largest file read, in bytes (default: `max_bytes()`).
    """
    data = read_bytes(path, limit)
    try:
        raw = json.loads(data.decode("utf-8-sig"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as exc:
        raise _fail(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except ValueError as exc:  # a duplicate key, or a number JSON cannot hold
        raise _fail(path, f"not a valid baseline: {exc}") from None
    except RecursionError:
        raise _fail(path, "not valid JSON: nested too deeply") from None
    if not isinstance(raw, dict):
        raise _fail(path, f"expected a JSON object, got {type(raw).__name__}")
    if "baseline_version" not in raw:
        what = "a pytest-tom report (--tom-report), not a baseline" if "schema_version" in raw else "not a pytest-tom baseline"
        raise _fail(path, f"{what}: it has no baseline_version", "$.baseline_version")
    version = raw["baseline_version"]
    if version != BASELINE_VERSION or isinstance(version, bool):
        raise _fail(path, f"baseline_version {version!r} is not one this pytest-tom reads (it reads {BASELINE_VERSION})",
                    "$.baseline_version")
    _validate(path, raw)
    return _parse(path, raw)


def _validate(path: Path, raw: Mapping[str, Any]) -> None:
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - jsonschema comes with pytest-tom
        raise TomDependencyError("reading a baseline validates it with jsonschema: pip install jsonschema") from None
    validator = jsonschema.Draft202012Validator(schema("baseline.schema.json"))
    errors = list(validator.iter_errors(raw))
    if errors:
        first = jsonschema.exceptions.best_match(errors)
        more = f" ({len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        raise _fail(path, f"invalid baseline: {first.message}{more}", first.json_path)


def _parse(path: Path, raw: Mapping[str, Any]) -> Baseline:
    suites: dict[str, BaselineSuite] = {}
    for i, s in enumerate(raw["suites"]):
        where = f"$.suites[{i}]"
        if s["id"] in suites:
            raise _fail(path, f"suite id {s['id']!r} appears twice", f"{where}.id")
        metrics: dict[str, MetricData] = {}
        for name, m in s["metrics"].items():
            lengths = {len(m["ids"]), len(m["values"]), len(m["clusters"])}
            if len(lengths) != 1:
                raise _fail(path, f"metric {name!r} has {len(m['ids'])} ids, {len(m['values'])} values and "
                                  f"{len(m['clusters'])} clusters; each unit needs one of each", f"{where}.metrics.{name}")
            _check_metric(path, name, m, f"{where}.metrics.{name}")
            metrics[name] = MetricData(name, tuple(m["ids"]), tuple(float(v) for v in m["values"]), tuple(m["clusters"]),
                                       m.get("description", ""), bool(m["higher_is_better"]),
                                       tuple((g, p) for g, p in m.get("labels", ())))
        items = {k: BaselineItem(Outcome(v["outcome"]), v.get("message", ""), dict(v.get("facets", {})), v.get("answer"))
                 for k, v in s["items"].items()}
        derived = {k: BaselineDerived(v["kind"], Verdict(v["verdict"]), v.get("message", "")) for k, v in s["derived"].items()}
        suites[s["id"]] = BaselineSuite(s["id"], s["benchmark"], dict(s["settings"]), s["data_fingerprint"], items, derived,
                                        metrics, s.get("noise_flip_rate"))
    model = raw["model"]
    return Baseline(raw["baseline_version"], raw["pytest_tom_version"], raw["created"], model.get("uri"),
                    model.get("fingerprint"), suites, str(path))


def _check_metric(path: Path, name: str, m: Mapping[str, Any], where: str) -> None:
    """A metric's own numbers must agree with its units: a file trimmed or edited by hand is refused, not compared."""
    ids = m["ids"]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise _fail(path, f"metric {name!r} lists the unit {twice!r} twice", f"{where}.ids")
    if m["n"] != len(ids):
        raise _fail(path, f"metric {name!r} says n={m['n']} but lists {len(ids)} unit{'s' if len(ids) != 1 else ''}",
                    f"{where}.n")
    values = m["values"]
    mean = sum(values) / len(values) if values else None
    if (mean is None) != (m["value"] is None) or (mean is not None and abs(mean - m["value"]) > 1e-6):
        raise _fail(path, f"metric {name!r} has value {m['value']!r} but its {len(values)} units average {mean!r}",
                    f"{where}.value")
