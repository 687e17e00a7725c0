"""How a pytest-tom item shows its failure: a few lines by default, everything on request, a model error once. Printing
every wrong answer's prompt and tries buried a weak model's summary under 77,000 lines, so a wrong answer is two lines
(answer against gold, raw responses); the benchmark's whole explanation comes with `-v`, `--tb=long` or
`--tom-detail=full`, and is always in the JSON report. A model error, the same for a whole planning unit, is shown with
the user's own frames by the first item; the others point to it. The repr is built from pytest's repr classes, so `-r`
and `--tb=line` show its summary line with the data file and row, `--tb=no` nothing, and pytest-xdist carries it
unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import ReprEntry, ReprExceptionInfo, ReprFileLocation, ReprTraceback

from pytest_tom.record import DerivedRecord, Outcome, Record
from pytest_tom.run.session import tom_session

if TYPE_CHECKING:
    from pytest_tom.sample import Sample

SHORT, FULL = "short", "full"

_FIRST_ERROR = pytest.StashKey[dict[str, str]]()
"""Per process (so per planning unit under pytest-xdist): model error text -> the node id that showed it in full."""
_HINTED = pytest.StashKey[bool]()

_MORE = re.compile(r" \(and \d+ more\)$")
_SOURCE = re.compile(r"^(?P<path>.+) line (?P<line>\d+)$")
_WIDTH = 80
"""Characters of one value (an answer, a response) on a compact line."""


def detail(config: pytest.Config) -> str:
    """The detail level, short or full: --tom-detail when given, else full with --tb=long or -v (unless --tb=short)."""
    chosen = tom_session(config).options.detail
    if chosen is not None:
        return chosen
    style = config.getoption("tbstyle", "auto")
    if style in ("short", "line", "no"):
        return SHORT
    return FULL if style == "long" or config.get_verbosity() >= 1 else SHORT


def located(config: pytest.Config, summary: str, source: str, lines: Sequence[str], *,
            error: bool = False) -> ReprExceptionInfo:
    """`lines` shown as pytest shows a failure's text, `summary` as what -r and --tb=line show. The summary points into
    the data file ("<file> line <n>"). With --tb=line pytest prints the summary after the text, so the text is left out;
    an `error` (setup) prints header and text only, so the text is its first line.
    """
    m = _SOURCE.match(source)
    where, lineno = (m["path"], int(m["line"])) if m is not None else (source, 0)
    shown = list(lines)
    if config.getoption("tbstyle", "auto") == "line":
        shown = shown[:1] if error else []
    entries = [ReprEntry(lines=shown, reprfuncargs=None, reprlocals=None, reprfileloc=None, style="value")] if shown else []
    return ReprExceptionInfo(reprtraceback=ReprTraceback(entries, None, "value"),
                             reprcrash=ReprFileLocation(where, lineno, summary))


def _value(sample: Sample[Any], value: object) -> str:
    """An answer or gold as a reader wants it: a choice letter with its text, names joined, long text cut."""
    if value is None:
        return "none"
    if isinstance(value, str):
        for choice in sample.choices:
            if choice.label == value:
                return f"{value} ({_cut(choice.text, 40)})"
        return repr(_cut(value, _WIDTH))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_cut(str(v), 40) for v in value) + "]"
    return _cut(repr(value), _WIDTH)


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 5] + "[...]"


def question_summary(record: Record, sample: Sample[Any]) -> str:
    """One line: what the model answered against the gold."""
    if record.outcome is Outcome.UNPARSEABLE:
        return f"unparseable: no answer could be read (gold {_value(sample, record.gold)})"
    return f"{record.outcome.value}: answer {_value(sample, record.parsed)}, gold {_value(sample, record.gold)}"


def question_failure(item: pytest.Item, record: Record, sample: Sample[Any]) -> ReprExceptionInfo:
    summary = question_summary(record, sample)
    level = detail(item.config)
    if level == FULL and record.message:
        return located(item.config, summary, sample.source, record.message.splitlines())
    lines = [summary]
    if item.config.get_verbosity() >= 0 and record.responses:
        lines.append(_responses(record))
    if not item.config.stash.get(_HINTED, False):
        item.config.stash[_HINTED] = True
        lines.append("  (wrong answers are shown in short; -v or --tom-detail=full shows the prompt and every try, "
                     "as the --tom-report JSON does)")
    return located(item.config, summary, sample.source, lines)


def _responses(record: Record, most: int = 5) -> str:
    """The raw responses on one line, each with what it was read as where the benchmark records that per try. ToMBench
    shuffles the options per try, so '[[C]]' may stand for option A: the reading after the arrow is in the original
    order, as the answer and gold are.
    """
    trials = record.details.get("trials")
    readings: list[Any] = (
        [t.get("original") if isinstance(t, dict) else None for t in trials]
        if isinstance(trials, list) and len(trials) == len(record.responses) else []
    )
    shown = []
    for k, text in enumerate(record.responses[:most]):
        raw = repr(_cut(text, _WIDTH)) if text is not None else "none"
        if readings:
            raw += f" -> {readings[k] or 'unparseable'}"
        shown.append(raw)
    more = f" (+{len(record.responses) - most} more)" if len(record.responses) > most else ""
    word = "response" if len(record.responses) == 1 else "responses"
    return f"  {word}: {', '.join(shown)}{more}"


def derived_failure(config: pytest.Config, verdict: DerivedRecord, source: str) -> ReprExceptionInfo:
    """The rule's message; in short, its first line and the failed members' ids on one line."""
    lines = verdict.message.splitlines() or [f"{verdict.kind} {verdict.derived_id}: {verdict.verdict.value}"]
    summary = lines[0]
    if detail(config) == SHORT and len(lines) > 1:
        failed = list(verdict.failed_members)
        more = f" (+{len(failed) - 8} more)" if len(failed) > 8 else ""
        lines = [summary, f"  failed: {', '.join(failed[:8])}{more}"] if failed else [summary]
    return located(config, summary, source, lines)


def model_error(item: pytest.Item, message: str, *, error: str, source: str = "",
                traceback: str | None = None) -> ReprExceptionInfo:
    """The error in full (with the user's frames) for the first item that meets it, one line for the others. `error` is
    the model's error text, the same for each question it failed (a trailing "(and N more)" aside); `message` adds where
    this item's data lies.
    """
    key = _MORE.sub("", error)
    first = item.config.stash.setdefault(_FIRST_ERROR, {})
    shown_by = first.get(key)
    if shown_by is not None and shown_by != item.nodeid:
        line = f"same error as {shown_by}: {key}"
        return located(item.config, line, source, [line], error=True)
    first[key] = item.nodeid
    lines = message.splitlines()
    if traceback:
        lines += traceback.splitlines()
        lines.append("(other items with this error say 'same error as' this one)")
    return located(item.config, key, source, lines, error=True)
