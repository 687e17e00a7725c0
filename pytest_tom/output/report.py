"""The versioned JSON report: built from typed records, written atomically, loaded back for baselines."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pytest_tom import robustness
from pytest_tom.constants import REPORT_SCHEMA_VERSION
from pytest_tom.errors import TomDataError
from pytest_tom.framework.base import Benchmark
from pytest_tom.framework.reference import beside, shipped
from pytest_tom.metrics import facet_table
from pytest_tom.output.render import to_json
from pytest_tom.record import DerivedRecord, Record
from pytest_tom.request import sha256_text

T = TypeVar("T")


def version() -> str:
    try:
        from importlib.metadata import version

        return version("pytest-tom")
    except Exception:  # noqa: BLE001 - running from a source tree
        return "0+unknown"


def item_dict(record: Record) -> dict[str, Any]:
    """A record as the report stores it: its fields plus the hash of every request it sent."""
    return {**record.to_dict(), "prompt_hash": sha256_text("\n".join(record.request_keys))}


def suite_entry(sid: str, info: Mapping[str, Any], records: Sequence[Record], derived: Sequence[DerivedRecord],
                benchmark: Benchmark[Any] | None) -> dict[str, Any]:
    """One suite's tables (overall and per summary facet), paper metrics and derived-result counts."""
    name = info.get("name") or (records[0].benchmark if records else derived[0].benchmark if derived else "?")
    entry: dict[str, Any] = {"id": sid, "benchmark": name, "settings": info.get("settings", {}), "n_items": len(records)}
    tables: list[dict[str, Any]] = [{"by": [], "rows": facet_table(records, [])}] if records else []
    metrics: dict[str, Any] = {}
    if benchmark is None:
        metrics = {"error": f"benchmark {name!r} could not be rebuilt from its settings"}
    elif records:
        try:
            tables += [{"by": list(f), "rows": facet_table(records, f)} for f in benchmark.summary_facets]
            metrics = to_json(benchmark.metrics(records))
        except Exception as exc:  # noqa: BLE001 - a report must still be written if a metric breaks
            metrics = {"error": f"{type(exc).__name__}: {exc}"}
    entry |= {"tables": tables, "metrics": metrics}
    kinds: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "error": 0})
    for d in derived:
        kinds[d.kind][d.verdict.value] = kinds[d.kind].get(d.verdict.value, 0) + 1
    entry["groups"] = dict(kinds)
    if any(d.kind == robustness.KIND for d in derived):
        entry["robustness"] = robustness.summarize(derived)
    return entry


def build_report(records: Sequence[Record], derived: Sequence[DerivedRecord], suites: Mapping[str, Mapping[str, Any]],
                 benchmark_for: Callable[[str], Benchmark[Any] | None], *, model: Mapping[str, Any],
                 engine: Mapping[str, Any] | None = None,
                 responses: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    entries = [suite_entry(sid, suites.get(sid, {}), [r for r in records if r.suite == sid],
                           [d for d in derived if d.suite == sid], benchmark_for(sid))
               for sid in sorted({r.suite for r in records} | {d.suite for d in derived})]
    return {"schema_version": REPORT_SCHEMA_VERSION, "pytest_tom_version": version(),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "model": dict(model),
            "engine": dict(engine or {}), "suites": entries, "items": [item_dict(r) for r in records],
            "groups": [d.to_dict() for d in derived], "responses": {k: dict(v) for k, v in (responses or {}).items()}}


def leaves(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested object (the report's `metrics`, a suite's settings) flat, by dotted key (`languages.en.task_avg`)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            out.update(leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def add_references(report: Mapping[str, Any], wanted: Sequence[str]) -> None:
    """Give each suite of `report` its `reference` field (--tom-reference): the published rows of the `wanted` models
    whose protocol the suite's settings follow, each beside the suite's own value of that metric, and a note per model
    with none (`framework.reference.beside`).
    """
    for suite in report.get("suites", []):
        values = leaves(suite.get("metrics") or {})
        rows, notes = beside(shipped(str(suite.get("benchmark"))), wanted, str(suite.get("benchmark")),
                             suite.get("settings") or {}, values)
        suite["reference"] = {
            "models": list(wanted), "notes": notes,
            "rows": [{"model": r.model, "metric": r.metric, "value": values[r.metric], "published": r.value,
                      "source": r.source, "settings": dict(r.settings)} for r in rows]}


def schema(name: str = "report-v1.json") -> dict[str, Any]:
    """A JSON schema shipped with the package (the report's by default; `baseline.schema.json`)."""
    text = resources.files("pytest_tom").joinpath(f"schema/{name}").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    """Write the report atomically (`write_atomic`); serialised before anything touches the disk."""
    write_atomic(path, json.dumps(report, ensure_ascii=False, indent=1, allow_nan=False))


def write_atomic(path: Path, text: str) -> None:
    """Write `text` so a reader sees the old file or the new one, never half of one. Written to a temporary file of this
    process next to the target and renamed over it; on any failure the temporary file is removed and the exception
    propagates. A symlink is followed, so the file it points to is replaced and the link kept.
    """
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


@dataclass(frozen=True, slots=True)
class LoadedReport:
    """A report read back: its typed records (for baselines and comparisons) and the rest as written."""

    records: tuple[Record, ...]
    derived: tuple[DerivedRecord, ...]
    raw: Mapping[str, Any]


def load_report(path: Path) -> LoadedReport:
    """Read a `--tom-report` file back into typed records."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TomDataError(f"cannot read the report: {exc}", path=path) from exc
    except json.JSONDecodeError as exc:
        raise TomDataError(f"invalid JSON ({exc.msg} at line {exc.lineno})", path=path) from None
    if not isinstance(raw, dict) or not str(raw.get("schema_version", "")).startswith("1."):
        raise TomDataError("not a pytest-tom report (schema_version 1.x expected)", path=path, field="schema_version")
    records = tuple(_parse(Record.from_dict, d, path, "items", i) for i, d in enumerate(raw.get("items", [])))
    derived = tuple(_parse(DerivedRecord.from_dict, d, path, "groups", i) for i, d in enumerate(raw.get("groups", [])))
    return LoadedReport(records, derived, raw)


def _parse(parse: Callable[[Mapping[str, Any]], T], data: Any, path: Path, field: str, index: int) -> T:
    try:
        return parse(data)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise TomDataError(f"malformed record: {type(exc).__name__}: {exc}", path=path, record=f"{field}[{index}]",
                           field=field) from None
