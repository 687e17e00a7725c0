"""The gates as Markdown, for people who read a CI job page rather than a pytest log. GitHub shows what a step appends
to `$GITHUB_STEP_SUMMARY` on the run's page. The renderer is a pure function of `GateResult`s, testable on hand-built
results; `write_markdown` appends, since every step of a job shares that file. Everything taken from a result is
escaped: a `|` splits a cell, a newline ends the table, and `<` could open a tag that GitHub's sanitiser drops with the
text after it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.framework.metric import Metric
from pytest_tom.gates.result import GateResult
from pytest_tom.gates.wording import coverage_words, untestable, verdict
from pytest_tom.output.render import by_table, plain, reference_cells, value_text

FLIP_CAP = 20
"""Flipped items listed per direction and gate; a regression of 600 items must not bury the table."""

_OPS = {">=": "≥", "<=": "≤"}


def render_markdown(results: Sequence[GateResult], *, model_uri: str, baseline: str | None,
                    summary_lines: Sequence[str] = (), metrics: Sequence[tuple[str, Sequence[Metric]]] = (),
                    title: str = "pytest-tom gates", references: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The Markdown summary of one gate run: verdict, table, failure messages, flipped items, metrics. Failing gates
    come first (on a long list the question is "what broke"), otherwise in order. `summary_lines` go into a collapsed
    block at the end, `metrics` into a collapsed table per suite, and `references` (a suite's report `reference` field,
    by suite id) into a table of published rows beside this run's values per suite.
    """
    out = [f"## {_text(title)}", ""]
    failed = [r for r in results if not r.passed]
    if not results:
        out.append("⚪ **No gates configured**: nothing was decided. Pass `--tom-threshold` or `--tom-baseline` "
                   "(or set `tom_threshold` / `tom_baseline` in the ini file) to gate this run.")
    elif failed:
        out.append(f"❌ **{len(failed)} of {_count(len(results))} failed**")
    else:
        out.append(f"✅ **All {_count(len(results))} passed**")
    out += ["", f"Model {_code(model_uri)}; " + (f"baseline {_code(baseline)}." if baseline else "no baseline.")]
    if results:
        ordered = failed + [r for r in results if r.passed]
        out += ["", "| gate | value (interval) | threshold / baseline → candidate | difference (interval) | p (Holm) | verdict |",
                "|---|---|---|---|---|---|"]
        out += ["| " + " | ".join([_code(r.name, cell=True), _value(r), _reference(r), _difference(r), _p(r),
                                   _verdict(r)]) + " |" for r in ordered]
    if failed:
        out += ["", "### Failed gates", ""]
        out += [f"- {_code(r.name)}: {_text(r.message)}" for r in failed]
        for r in failed:
            out += _flips(r)
    if summary_lines:
        longest = max((len(run) for line in summary_lines for run in re.findall(r"`+", line)), default=0)
        fence = "`" * max(3, longest + 1)
        out += ["", "<details><summary>Metrics</summary>", "", fence + "text", *summary_lines, fence, "", "</details>"]
    for suite, rows in metrics:
        table = metric_rows(rows)
        if len(table) > 2:
            out += ["", f"<details><summary>Paper metrics of {_html(suite)}</summary>", "", *table, "", "</details>"]
    typed = dict(metrics)
    for suite, reference in (references or {}).items():
        out += reference_rows(suite, typed.get(suite, ()), reference)
    return "\n".join(out) + "\n"


def reference_rows(suite: str, metrics: Sequence[Metric], reference: Mapping[str, Any]) -> list[str]:
    """--tom-reference for one suite: a table of this run's value beside each published row (model, metric, both values,
    the source table), then the notes saying where a model has no row for the run's settings.
    """
    cells = [(model, source, table, cell) for (model, source), tables in
             reference_cells(metrics, reference.get("rows") or ()).items() for table, row in tables.items() for cell in row]
    notes = [str(n) for n in reference.get("notes") or ()]
    if not cells and not notes:
        return []
    out = ["", f"### Published rows beside {_text(suite)}", ""]
    if cells:
        out += ["| model | metric | this run | published | source |", "|---|---|---|---|---|"]
        out += [f"| {_text(model)} | {_text(f'{table}: {label}' if table else label)} | {_text(ours)} | {_text(theirs)} | "
                f"{_text(source)} |" for model, source, table, (label, ours, theirs) in cells]
    return out + ([""] if cells and notes else []) + [f"- {_text(n)}" for n in notes]


def metric_rows(metrics: Sequence[Metric]) -> list[str]:
    """The printed metrics as a Markdown table: table, metric, value (formatted by unit, as in the terminal)."""
    out = ["| table | metric | value |", "|---|---|---|"]
    for table, rows in by_table(metrics).items():
        out += [f"| {_text(table)} | {_text(m.label)} | {_text(value_text(m))} |" for m in rows]
    return out


def write_markdown(path: Path | str, text: str) -> None:
    """Append `text` to `path` (created if missing), after a blank line so our heading never glues onto earlier text."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    lead = "\n" if target.exists() and target.stat().st_size > 0 else ""
    with target.open("a", encoding="utf-8") as fh:
        fh.write(lead + text)


def _value(r: GateResult) -> str:
    est, ref = r.estimate, r.details.get("reference")
    if est is None and isinstance(ref, Mapping) and "got" in ref:
        return _in_unit(ref["got"], str(ref.get("unit")))
    if est is None:
        return "—"
    clusters = f", {est.clusters} clusters" if est.clusters != est.n else ""
    return f"{_pct(est.point)} ({_pct(est.low)} – {_pct(est.high)}), n={est.n}{clusters}"


def _in_unit(value: object, unit: str) -> str:
    """A published row's number (or the value compared with it) as the summary prints that metric, `%` for a share."""
    return plain(value, unit) + ("%" if unit in ("rate", "percent") and isinstance(value, int | float) else "")


def _reference(r: GateResult) -> str:
    if r.comparison is not None:
        return f"{_pct(r.comparison.base)} → {_pct(r.comparison.new)}"
    ref = r.details.get("reference")
    bound = "" if r.bound == "point" else f" ({_text(r.bound)} bound)"
    if isinstance(ref, Mapping):
        unit = str(ref.get("unit"))
        margin = f" {ref['margin']} = {_in_unit(ref.get('required'), unit)}" if ref.get("margin") else ""
        return (f"{_OPS.get(r.op, _text(r.op))} {_text(str(ref.get('model')))} {_in_unit(ref.get('value'), unit)}"
                f"{_text(margin)}{bound} ({_text(str(ref.get('source')))})")
    if r.threshold is not None:
        return f"{_OPS.get(r.op, _text(r.op))} {_pct(r.threshold)}{bound}"
    return "—"


def _difference(r: GateResult) -> str:
    c = r.comparison
    if c is None:
        return "—"
    d = c.diff
    small = untestable(r)
    if small is not None:  # no interval: with so few units it would mean nothing
        text = f"{_pts(d.point)} pts, not testable ({small})"
    elif d.low == d.high:
        text = f"{_pts(d.point)} pts (no interval: every unit changed alike)"
    else:
        text = f"{_pts(d.point)} pts ({_pts(d.low)} to {_pts(d.high)})"
    if c.margin:
        text += f", margin {c.margin * 100:.1f} pts"
    if c.noise_flip_rate is not None:
        text += f", noise flips {_pct(c.noise_flip_rate)}"
    return text + f"; {c.right_to_wrong} right→wrong, {c.wrong_to_right} wrong→right of {c.n_pairs}" + coverage_words(r)


def _p(r: GateResult) -> str:
    if r.comparison is None:
        return "—"
    p = r.comparison.p_adjusted
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _verdict(r: GateResult) -> str:
    """The terminal's verdict words (`gates.wording`), with a mark: not testable is a pass that decided nothing."""
    mark = "❌" if not r.passed else "⚪" if untestable(r) else "✅"
    return f"{mark} {_text(verdict(r))}"


def _flips(r: GateResult) -> list[str]:
    """A collapsed list of the items that flipped, right→wrong first (those are the regression). An entry of
    `details["right_to_wrong"]` / `["wrong_to_right"]` is an item id, or a mapping with `id` (or `sample_id`) and an
    optional `message` (the candidate's failure message).
    """
    if r.kind != "baseline":
        return []
    groups = [(label, list(r.details.get(key) or ())) for key, label in
              (("right_to_wrong", "right → wrong"), ("wrong_to_right", "wrong → right"))]
    total = sum(len(entries) for _, entries in groups)
    if not total:
        return []
    out = ["", f"<details><summary>{_html(r.name)}: {total} flipped item{'s' if total != 1 else ''}</summary>", ""]
    for label, entries in groups:
        if entries:
            more = [f"- … and {len(entries) - FLIP_CAP} more"] if len(entries) > FLIP_CAP else []
            out += [f"**{label}** ({len(entries)})", "", *(_flip_line(e) for e in entries[:FLIP_CAP]), *more, ""]
    return [*out, "</details>"]


def _flip_line(entry: object) -> str:
    if isinstance(entry, Mapping):
        fields: Mapping[str, Any] = entry
        item = str(fields.get("id", fields.get("sample_id", "?")))
        message = str(fields.get("message") or "")
        return f"- {_code(item)}" + (f": {_text(message)}" if message else "")
    return f"- {_code(str(entry))}"


def _count(n: int) -> str:
    return f"{n} gate{'s' if n != 1 else ''}"


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _pts(x: float) -> str:
    """A difference of rates in percentage points, signed with a real minus so it reads as a number."""
    return f"{x * 100:+.1f}".replace("-", "−")


def _text(s: str) -> str:
    """Plain text safe in a table cell or a list item: no tags, no cell-splitting pipes, no line breaks."""
    s = html.escape(s, quote=False).replace("|", "\\|")
    return re.sub(r"\r\n|\r|\n", "<br>", s)


def _html(s: str) -> str:
    """Text inside an HTML element (`<summary>`), where Markdown escapes would show as backslashes."""
    return html.escape(re.sub(r"\r\n|\r|\n", " ", s), quote=False)


def _code(s: str, *, cell: bool = False) -> str:
    r"""`s` as inline code, with a fence longer than any backtick run in it. A code span shows HTML and backslashes
    literally, so only line breaks need care, and in a table cell the pipes: GitHub splits cells on them first, and
    drops the backslash of `\|` there.
    """
    s = re.sub(r"\r\n|\r|\n", " ", s)
    if cell:
        s = s.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


