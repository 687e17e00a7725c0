"""Whether a baseline covers the coming run, decided after collection and before the first model request. A comparison
pairs units by id, so a baseline lacking some of this run's units would pass on the rest and speak for questions it
never saw, found out only after every model request. Once items are selected, which suites run, their settings, data and
each gateable metric's units are known: `check_coverage` takes a `PlannedSuite` per suite and refuses a baseline that
does not cover what a rule compares. The units come from the real run's `gate_metrics` on records that pretend every
selected question was answered and every complete group judged (a model error only shrinks what is needed); a unit the
baseline ran without a value is not a gap (`compare.unjudged_in`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.errors import TomConfigError
from pytest_tom.gates.baseline import Baseline
from pytest_tom.gates.compare import CompareRule, check_settings, coverage_hint, unjudged_in
from pytest_tom.gates.metrics import SuiteView, match
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.sample import Sample

SHOWN = 8
"""Problems listed in the refusal (the rest are counted): one screen."""
SHOWN_IDS = 3
"""Missing unit ids named per metric."""


@dataclass(frozen=True)
class PlannedSuite:
    """One suite of the coming run as a comparison will see it, known before any model request."""

    name: str
    """What rules call it (`<suite>` in `<suite>.<metric>`), as `gates.metrics.SuiteView.name`."""
    benchmark: str
    settings: Mapping[str, Any]
    data_fingerprint: str
    metrics: Mapping[str, tuple[str, ...]]
    """The unit ids each gateable metric will have (`planned_metrics`)."""
    group_metrics: frozenset[str] = field(default_factory=frozenset)
    """The derived kinds: metrics named by one (`pair`, `pair.group.<value>`) have aggregate assertions as units."""
    settings_before: Mapping[str, Any] = field(default_factory=dict)
    """What a baseline saved before a setting existed is read as having (`Benchmark.settings_before`)."""


def planned_metrics(benchmark: Any, samples: Sequence[Sample[Any]], derived: Sequence[Derived]
                    ) -> dict[str, tuple[str, ...]]:
    """The unit ids of each gateable metric if every question in `samples` is answered and every group judged.
    `benchmark` is the suite's `Benchmark` (its gate facets, clusters and own gate rates).
    """
    records = [Record(s.benchmark, s.id, Outcome.CORRECT, dict(s.facets)) for s in samples]
    judged = [DerivedRecord(d.benchmark, d.id, d.kind, Verdict.PASSED, d.members, facets=dict(d.facets)) for d in derived]
    return {name: m.ids for name, m in SuiteView("", "", benchmark, {}, records, judged).metrics().items()}


def check_coverage(baseline: Baseline, planned: Sequence[PlannedSuite], rules: Sequence[CompareRule], *,
                   force: bool = False, lenient: bool = False) -> list[str]:
    """Refuse (TomConfigError) a baseline that lacks what `rules` compare in this run; else notes on partial coverage. Each
    metric a rule selects needs its suite in the baseline with the same benchmark, data and settings (unless `force`),
    and every unit of this run. A `:partial` rule (or `lenient`, for `--tom-baseline-update`, which rewrites the file
    anyway) accepts partial or missing coverage with a note; a metric with no unit in common is refused even then.
    """
    where = f"the baseline {baseline.path}" if baseline.path else "the baseline"
    problems: list[str] = []
    notes: list[str] = []
    checked: set[str] = set()
    for suite in planned:
        names = {f"{suite.name}.{m}": m for m in suite.metrics}
        selected = [(rule, full) for rule in rules for full in match(rule.pattern, names)]
        if not selected:
            continue
        base = baseline.suites.get(suite.name)
        if base is None:
            if lenient or all(rule.partial for rule, _ in selected):
                notes.append(f"suite {suite.name}: not in {where}, so not compared")
                continue
            have = ", ".join(sorted(baseline.suites)) or "none"
            problems.append(f"suite {suite.name} is not in the baseline (its suites: {have}), so "
                            f"{selected[0][1]} has nothing to be compared with")
            continue
        try:
            check_settings(base, suite.name, suite.benchmark, suite.data_fingerprint, suite.settings, force=force,
                           where=where, before=suite.settings_before)
        except TomConfigError as exc:
            if not lenient:
                raise
            notes.append(str(exc).splitlines()[0])
            continue
        for _, full in selected:
            if full in checked:
                continue
            checked.add(full)
            metric = names[full]
            unit = "group" if metric.split(".")[0] in suite.group_metrics else "question"  # `pair`, `pair.group.x`
            needed = suite.metrics[metric]
            old = base.metrics.get(metric)
            held = set(old.ids) if old is not None else set()
            covered = sum(1 for uid in needed if uid in held)
            missing = [uid for uid in needed if uid not in held and not unjudged_in(base, uid)]
            if not missing:
                continue
            partial = lenient or any(r.partial for r, f in selected if f == full)
            count = f"{covered:,} of the {len(needed):,} {unit}s this run selects"
            if partial and old is None:
                notes.append(f"{full}: not in the baseline, so not compared")
                continue
            if partial and covered:
                notes.append(f"{full}: compared on {covered:,} of {len(needed):,} {unit}s (the baseline lacks the others)")
                continue
            shown = ", ".join(missing[:SHOWN_IDS]) + (f" and {len(missing) - SHOWN_IDS:,} more" if len(missing) > SHOWN_IDS
                                                      else "")
            held_text = f" is not in the baseline (it holds {count}: none)" if old is None else f": the baseline holds {count}"
            problems.append(f"{full}{held_text}; missing {shown}")
    if problems:
        listing = "\n  - ".join(problems[:SHOWN])
        more = f"\n  ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        hint = coverage_hint(rules[0] if len(rules) == 1 and not rules[0].partial else None)
        raise TomConfigError(f"{where} does not cover this run, so no question was asked:\n  - {listing}{more}\n{hint}")
    return notes
