"""Results out: the terminal summary and the versioned JSON report.

Both are built from result records (plain dicts carried in test reports), so the
same code works in one process and on the pytest-xdist controller.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_tom.benchmarks import Registry
from pytest_tom.constants import REPORT_SCHEMA_VERSION
from pytest_tom.stats import tally


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("pytest-tom")
    except Exception:
        return "0+unknown"


def facet_table(records: Sequence[Mapping[str, Any]], facets: Sequence[str]) -> list[dict[str, Any]]:
    """Tally records grouped by the values of `facets`, in first-seen order."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        groups[tuple(str(r["facets"].get(f, "")) for f in facets)].append(r)
    return [{"facets": dict(zip(facets, key)), **tally(rs).to_dict()} for key, rs in groups.items()]


def build_report(
    records: Sequence[Mapping[str, Any]],
    group_records: Sequence[Mapping[str, Any]],
    registry: Registry,
    *,
    model: Mapping[str, Any],
    engine: Mapping[str, Any] | None = None,
    responses: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    by_suite: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        by_suite[r["suite"]].append(r)
    groups_by_suite: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for g in group_records:
        groups_by_suite[g["suite"]].append(g)
    suites = []
    for sid in sorted(set(by_suite) | set(groups_by_suite)):
        recs = by_suite.get(sid, [])
        info = dict(recs[0].get("suite_info") or {}) if recs else {}
        name = info.get("name") or (groups_by_suite[sid][0]["benchmark"] if groups_by_suite.get(sid) else "?")
        entry: dict[str, Any] = {"id": sid, "benchmark": name, "settings": info.get("settings", {}), "n_items": len(recs)}
        tables: list[dict[str, Any]] = [{"by": [], "rows": facet_table(recs, [])}] if recs else []
        metrics: dict[str, Any] = {}
        try:
            cls = registry.get(name)
            bench = cls(info.get("settings", {}))
            tables += [{"by": list(f), "rows": facet_table(recs, f)} for f in cls.summary_facets] if recs else []
            metrics = bench.metrics(recs) if recs else {}
        except Exception as exc:  # a report must still be written if a metric breaks
            metrics = {"error": f"{type(exc).__name__}: {exc}"}
        entry["tables"] = tables
        entry["metrics"] = metrics
        gs = groups_by_suite.get(sid, [])
        kinds: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "error": 0})
        for g in gs:
            kinds[g["group_kind"]][g["outcome"]] += 1
        entry["groups"] = dict(kinds)
        suites.append(entry)
    items = []
    for r in records:
        item = {k: v for k, v in r.items() if k != "suite_info"}
        items.append(item)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "pytest_tom_version": _version(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": dict(model),
        "engine": dict(engine or {}),
        "suites": suites,
        "items": items,
        "groups": [dict(g) for g in group_records],
        "responses": {k: dict(v) for k, v in (responses or {}).items()},
    }


def schema() -> dict[str, Any]:
    text = resources.files("pytest_tom").joinpath("schema/report-v1.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, ensure_ascii=False, indent=1, allow_nan=False), encoding="utf-8")
    tmp.replace(path)


def _pct(v: float | None) -> str:
    return "   n/a" if v is None else f"{100 * v:6.1f}"


def summary_lines(report: Mapping[str, Any], registry: Registry) -> list[str]:
    lines: list[str] = []
    model = report.get("model", {})
    fp = str(model.get("fingerprint") or "")
    lines.append(f"model: {model.get('uri')}" + (f" (fingerprint {fp[:16]})" if fp else ""))
    eng = report.get("engine") or {}
    if eng:
        lines.append(
            f"engine: {eng.get('questions', 0)} questions, {eng.get('requests', 0)} requests "
            f"({eng.get('unique_requests', 0)} unique), {eng.get('cache_hits', 0)} from cache, "
            f"{eng.get('model_requests', 0)} sent to the model in {eng.get('model_seconds', 0)} s, "
            f"{eng.get('errors', 0)} errors"
        )
    for suite in report.get("suites", []):
        lines.append("")
        lines.append(f"{suite['id']} ({suite['benchmark']}, {suite['n_items']} questions)")
        header = f"  {'group':<48} {'n':>5} {'acc %':>6} {'95% CI':>13} {'parse %':>7} {'unparse':>7} {'errors':>6}"
        lines.append(header)
        for table in suite.get("tables", []):
            for row in table["rows"]:
                label = " / ".join(row["facets"].values()) or "all"
                lo, hi = row["ci95"]
                lines.append(
                    f"  {label[:48]:<48} {row['n']:>5} {_pct(row['accuracy'])} "
                    f"{100 * lo:5.1f}-{100 * hi:5.1f}  {100 * row['parse_rate']:6.1f} {row['unparseable']:>7} {row['errors']:>6}"
                )
        try:
            bench = registry.get(suite["benchmark"])(suite.get("settings", {}))
            lines.extend(bench.metric_lines(suite.get("metrics", {})))
        except Exception:
            pass
        for kind, counts in suite.get("groups", {}).items():
            total = sum(counts.values())
            lines.append(f"  {kind} groups: {counts['passed']}/{total} passed, {counts['failed']} failed, {counts['error']} errors")
    return lines
