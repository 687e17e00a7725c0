"""--tom-html: one self-contained HTML page of a run, for people who would rather look at results than read them.

The page is a pure function of the JSON report (`render_page(report)`): a run renders its report after a JSON round trip
and `python -m pytest_tom html report.json -o page.html` renders the stored one, so the two pages are identical and a CI
artifact can be viewed long after the run. Typed metrics are recomputed from the report's items by the suite's benchmark,
rebuilt from its recorded settings, as the terminal summary does. Everything taken from the data is escaped (item texts
hold `<`, `&` and quotes); charts are matplotlib's SVG (`charts`, where the choice is explained), the filters a few lines
of inline JavaScript, so opening the page requests nothing from anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from html import escape
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from pytest_tom.framework.base import Benchmark
from pytest_tom.output.html.charts import Bar, bar_chart
from pytest_tom.output.render import by_table, value_text
from pytest_tom.output.report import write_atomic
from pytest_tom.output.summary import suite_metrics

MISSING = "matplotlib is not installed; the HTML report draws its charts with it: pip install 'pytest-tom[html]'"
FLIPS = (("right_to_wrong", "right → wrong"), ("wrong_to_right", "wrong → right"))


def write_html(path: Path, report: Mapping[str, Any]) -> None:
    """Render `report` as it reads back from JSON and write the page atomically."""
    write_atomic(path, render_page(json.loads(json.dumps(report, ensure_ascii=False, allow_nan=False))))


BenchmarkFor = Callable[[Mapping[str, Any]], "Benchmark[Any] | None"]
"""A report's suite entry -> its benchmark, to recompute the typed metrics (`benchmark_of` unless a test gives its own)."""


def render_page(report: Mapping[str, Any], benchmark_for: BenchmarkFor | None = None) -> str:
    """The whole page: run header, gates, then per suite its metrics, charts, flips, counterexamples and items."""
    model = report.get("model") or {}
    title = f"pytest-tom: {model.get('uri') or 'run'}"
    head = (f"<h1>{escape(title)}</h1><p class=meta>{escape(str(report.get('created', '')))} · pytest-tom "
            f"{escape(str(report.get('pytest_tom_version', '')))} · {_engine(report.get('engine') or {})}</p>")
    suites = list(report.get("suites") or [])
    gates = list(report.get("gates") or [])
    owner = {id(g): _owner(str(g.get("metric", "")), [str(s["id"]) for s in suites]) for g in gates}
    body = [head, _gates(gates)]
    nav = "".join(f'<a href="#suite-{escape(str(s["id"]), True)}">{escape(str(s["id"]))}</a>' for s in suites)
    body.insert(1, f"<nav>{nav}</nav>" if len(suites) > 1 else "")
    for suite in suites:
        mine = [g for g in gates if owner[id(g)] == suite["id"]]
        body.append(_suite(report, suite, mine, benchmark_for or benchmark_of))
    text = resources.files("pytest_tom").joinpath("output/html/page.html").read_text(encoding="utf-8")
    return Template(text).substitute(title=escape(title), body="\n".join(b for b in body if b))


def _owner(metric: str, sids: Sequence[str]) -> str | None:
    """The suite a gate's metric (`<suite>.<metric>`) belongs to: the longest suite id it starts with."""
    found = [s for s in sids if metric.startswith(s + ".")]
    return max(found, key=len) if found else None


def _engine(eng: Mapping[str, Any]) -> str:
    return escape(f"{eng.get('questions', 0)} questions, {eng.get('requests', 0)} requests, {eng.get('cache_hits', 0)} "
                  f"from cache, {eng.get('errors', 0)} errors") if eng else ""


def _text(value: Any) -> str:
    """An answer or gold as text: strings as they are, anything else as compact JSON; empty for none."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _table(head: Sequence[str], rows: Sequence[str], *, cls: str = "") -> str:
    ths = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f'<table class="{cls}"><thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _row(cells: Sequence[str], **data: str) -> str:
    """A table row of already-escaped cells; `data` become `data-*` attributes the filters read."""
    attrs = "".join(f' data-{k}="{escape(v, True)}"' for k, v in data.items())
    return f"<tr{attrs}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _filterable(title: str, table: str, choices: Sequence[str], what: str) -> str:
    """A table with a search box and a select over its rows' `data-key`, and a count of the rows shown."""
    options = "".join(f'<option value="{escape(c, True)}">{escape(c)}</option>' for c in choices)
    return (f'<div class="filterable"><h3>{escape(title)}</h3><div class="controls">'
            f'<input type="search" class="search" placeholder="search" aria-label="search {escape(what, True)}">'
            f'<select class="key" aria-label="{escape(what, True)}"><option value="">every {escape(what)}</option>{options}'
            f'</select> <span class="count"></span></div>{table}</div>')


def _long(text: str, limit: int = 90) -> str:
    """A long text collapsed to its first line (of the last message, where `engine.prompt_text` put several under their
    roles: the question is there), the whole of it one click away (and always searchable).
    """
    if len(text) <= limit and "\n" not in text:
        return escape(text)
    last = text.rsplit("\n[user]\n", 1)[-1] if text.startswith("[") else text
    first = last.strip().split("\n", 1)[0][:limit]
    return f"<details><summary>{escape(first)}…</summary><pre>{escape(text)}</pre></details>"


def _gates(gates: Sequence[Mapping[str, Any]]) -> str:
    if not gates:
        return ""
    failed = sum(not g.get("passed") for g in gates)
    verdict = f"{failed} of {len(gates)} gates failed" if failed else f"all {len(gates)} gates passed"
    rows = [_row([escape(str(g.get("name"))), "PASS" if g.get("passed") else "<strong>FAIL</strong>",
                  _long(str(g.get("message", "")))], key="pass" if g.get("passed") else "fail") for g in gates]
    return (f'<section class="gates {"failed" if failed else "passed"}"><h2>Gates: {escape(verdict)}</h2>'
            + _table(["gate", "verdict", "why"], rows) + "</section>")


def _suite(report: Mapping[str, Any], suite: Mapping[str, Any], gates: Sequence[Mapping[str, Any]],
           benchmark_for: BenchmarkFor) -> str:
    sid = str(suite["id"])
    items = [i for i in report.get("items") or () if i.get("suite", "") == sid]
    parts = [f'<section class="suite" id="suite-{escape(sid, True)}"><h2>{escape(sid)} '
             f'<small>({escape(str(suite.get("benchmark")))}, {suite.get("n_items", 0)} questions)</small></h2>',
             _metrics(report, suite, benchmark_for(suite)), *_facet_charts(suite), _differences(gates), _flips(gates, items),
             _counterexamples([g for g in report.get("groups") or () if g.get("suite") == sid]), _items(items)]
    return "\n".join(p for p in parts if p) + "</section>"


def _metrics(report: Mapping[str, Any], suite: Mapping[str, Any], bench: Benchmark[Any] | None) -> str:
    """The paper's metric tables, formatted by unit as in the terminal (`render.value_text`), intervals included."""
    if bench is None:
        return f"<p class=error>metrics unavailable: benchmark {escape(str(suite.get('benchmark')))} could not be rebuilt</p>"
    try:
        typed = suite_metrics(report, bench, str(suite["id"]))
    except Exception as exc:  # noqa: BLE001 - the rest of the page still shows
        return f"<p class=error>metrics unavailable: {escape(f'{type(exc).__name__}: {exc}')}</p>"
    tables = [f"<h4>{escape(table or 'metrics')}</h4>" + _table(
        ["metric", "value [95% interval] (n)"], [_row([escape(m.label), escape(value_text(m))]) for m in rows],
        cls="metrics") for table, rows in by_table(typed).items()]
    return "<h3>Paper metrics</h3>" + "".join(tables) if tables else ""


def benchmark_of(suite: Mapping[str, Any]) -> Benchmark[Any] | None:
    """The suite's benchmark rebuilt from the settings the report recorded (None if that fails)."""
    from pytest_tom.evals import Registry

    try:
        return Registry().get(str(suite["benchmark"]))(dict(suite.get("settings") or {}))
    except Exception:  # noqa: BLE001 - an unknown or changed benchmark: the page says so instead
        return None


def _facet_charts(suite: Mapping[str, Any]) -> list[str]:
    """Accuracy with its 95% Wilson interval per group of each of the suite's summary facets (ability, order...)."""
    out = []
    for table in suite.get("tables") or ():
        rows = [r for r in table["rows"] if r.get("accuracy") is not None]
        if not table["by"] or not rows:
            continue
        bars = [Bar(f"{' / '.join(map(str, r['facets'].values()))} (n={r['n']})", 100 * r["accuracy"], 100 * r["ci95"][0],
                    100 * r["ci95"][1]) for r in rows]
        svg = bar_chart(bars, xlabel="% of questions right (95% Wilson interval)", xlim=(0, 100))
        out.append(_figure(f"Accuracy by {' / '.join(table['by'])}", svg))
    return out


def _figure(caption: str, svg: str) -> str:
    return f'<figure class="chart"><figcaption>{escape(caption)}</figcaption>{svg}</figure>'


def _differences(gates: Sequence[Mapping[str, Any]]) -> str:
    """Each baseline gate's paired difference (candidate - baseline, in points, signed so that positive is better) with
    its interval, and the gate's threshold: the drop it tolerates.
    """
    compared = [g for g in gates if g.get("comparison")]
    if not compared:
        return ""
    bars = []
    for g in compared:
        d, sign = g["comparison"]["diff"], 1 if (g.get("details") or {}).get("higher_is_better", True) else -1
        lo, hi = sorted((sign * 100 * d["low"], sign * 100 * d["high"]))
        bars.append(Bar(str(g["metric"]), sign * 100 * d["point"], lo, hi, bad=not g.get("passed"),
                        mark=-100 * float(g["comparison"].get("margin") or 0.0) + 0.0))  # + 0.0: no "-0.0"
    xlabel = "change from the baseline, points (positive: better; interval 95%)"
    if len({b.mark for b in bars}) == 1:  # one threshold for all: a line across
        line = bars[0].mark
        svg = bar_chart([replace(b, mark=None) for b in bars], xlabel=xlabel, line=line,
                        line_label=f"gate: largest drop tolerated ({line:+.1f} pts)")
    else:
        svg = bar_chart(bars, xlabel=xlabel, line_label="gate: largest drop tolerated by each")
    return _figure("Paired differences from the baseline", svg)


def _flips(gates: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]]) -> str:
    """The questions whose correctness flipped against the baseline: question, both answers, gold."""
    by_id = {str(i["qid"]): i for i in items}
    rows, seen = [], set()
    for g in gates:
        for key, label in FLIPS:
            for entry in (g.get("details") or {}).get(key) or ():
                uid = str(entry.get("id"))
                if (uid, label) in seen:
                    continue
                seen.add((uid, label))
                item = by_id.get(uid, {})
                question = str(item.get("prompt") or item.get("message") or entry.get("message") or
                               entry.get("baseline_message") or "")
                rows.append(_row([escape(label), escape(uid), _long(question), escape(_text(entry.get("baseline_answer"))),
                                  escape(_text(item.get("parsed"))), escape(_text(item.get("gold")))], key=label))
    if not rows:
        return ""
    table = _table(["flip", "question id", "question", "baseline answer", "this run's answer", "gold"], rows, cls="flips")
    return _filterable(f"Flipped questions ({len(rows)})", table, [label for _, label in FLIPS], "flip")


def _counterexamples(groups: Sequence[Mapping[str, Any]]) -> str:
    """Robustness items a perturbation broke: the minimal change, the original and perturbed input, both answers."""
    broken = [g for g in groups if g.get("group_kind") == "robustness" and g.get("outcome") == "failed"]
    if not broken:
        return ""
    rows = []
    for g in broken:
        d = g.get("details") or {}
        minimal = d.get("minimal") or {}
        pairs = _sides(str(g.get("message", "")))
        inputs = "".join(f"<tr><th>{escape(k)}</th><td>{escape(a)}</td><td>{escape(b)}</td></tr>" for k, (a, b) in pairs)
        rows.append(_row([escape(str(g.get("gid"))), escape(str(d.get("strategy", ""))), escape(str(minimal.get("change", ""))),
                          f'<table class="sides"><tr><th></th><th>original</th><th>perturbed</th></tr>'
                          f'<tr><th>answer</th><td>{escape(_text(d.get("original_answer")))}</td>'
                          f'<td>{escape(_text(d.get("perturbed_answer")))}</td></tr>{inputs}</table>'],
                         key=str(d.get("strategy", ""))))
    strategies = sorted({str((g.get("details") or {}).get("strategy", "")) for g in broken})
    table = _table(["item", "strategy", "minimal change", "original vs perturbed"], rows, cls="counterexamples")
    return _filterable(f"Robustness counterexamples ({len(rows)})", table, strategies, "strategy")


def _sides(message: str) -> list[tuple[str, tuple[str, str]]]:
    """The `original X: ...` / `perturbed X: ...` line pairs of a robustness failure message (question, options,
    context), in order.
    """
    found: dict[str, dict[str, str]] = {}
    for line in message.splitlines():
        side, _, rest = line.strip().partition(" ")
        what, sep, value = rest.partition(":")
        if side in ("original", "perturbed") and sep and what in ("question", "options", "context"):
            found.setdefault(what, {})[side] = value.strip()
    return [(k, (v.get("original", ""), v.get("perturbed", ""))) for k, v in found.items()]


def _items(items: Sequence[Mapping[str, Any]]) -> str:
    """Every question: prompt, answer (parsed, and the first raw response), gold, outcome and marks (its facets)."""
    if not items:
        return ""
    rows = []
    for i in items:
        raw = next((r for r in i.get("responses") or () if r is not None), "")
        answer = escape(_text(i.get("parsed"))) + (f'<div class="raw">{_long(str(raw), 60)}</div>' if raw else "")
        marks = " ".join(f"<code>{escape(f'{k}={v}')}</code>" for k, v in (i.get("facets") or {}).items())
        outcome = str(i.get("outcome"))
        rows.append(_row([escape(str(i.get("qid"))), _long(str(i.get("prompt") or i.get("message") or "")), answer,
                          escape(_text(i.get("gold"))), f'<span class="o-{escape(outcome, True)}">{escape(outcome)}</span>',
                          marks], key=outcome))
    table = _table(["question id", "prompt", "answer", "gold", "outcome", "marks"], rows, cls="items")
    return _filterable(f"Items ({len(rows)})", table, ["correct", "incorrect", "unparseable", "error", "unscored"], "outcome")
