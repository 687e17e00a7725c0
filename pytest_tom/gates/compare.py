"""Paired comparison of a run with its baseline: what may fail (`--tom-compare-fail`, rules read by
`parse_compare_rule`) and the verdicts. A baseline must hold every unit a rule compares (`gates.coverage`) unless the
rule ends in `:partial`. Each selected metric is compared unit by unit with `stats.compare_paired`, and Holm runs across
every comparison of the run, so gating twenty metrics does not multiply false alarms.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from pytest_tom.constants import SAMPLE_OPTION
from pytest_tom.errors import TomConfigError
from pytest_tom.gates.baseline import SAVE_OPTION, Baseline, BaselineSuite, SuiteRun
from pytest_tom.gates.metrics import match
from pytest_tom.gates.result import GateResult
from pytest_tom.gates.wording import points
from pytest_tom.output.report import leaves
from pytest_tom.record import Outcome, Verdict
from pytest_tom.stats import Comparison, compare_macro_f1, compare_paired, estimate_rate, gate, macro_f1

COMPARE_OPTION = "--tom-compare-fail"
FORCE_OPTION = "--tom-baseline-force"
SHOWN_FLIPS = 20
"""Flipped units listed in a message; details keep them all."""
MESSAGE_CHARS = 160
"""A flipped unit's failure message is cut to this in the gate's message (details keep 300 characters)."""
PARTIAL = "partial"
"""The rule suffix that compares on the units both runs have (`*.accuracy:partial`)."""
MAX_MARGIN = 0.999
"""compare_paired takes margins below 1; a relative drop of a rate at 1.0 can reach it."""

_DROP = re.compile(r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>%|pts?|pp)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class CompareRule:
    """One `--tom-compare-fail` rule: a metric pattern and the drop tolerated (absolute, or relative to the baseline)."""

    pattern: str
    drop: float = 0.0
    """An absolute drop as a rate (0.03), or with `relative` a fraction of the baseline value (0.02 for 2%)."""
    relative: bool = False
    text: str = ""
    """The rule as written, for messages."""
    drop_text: str = "0"
    """The drop as written (`2%`, `0.03`, `3pts`), for gate names."""
    partial: bool = False
    """`:partial`: compare on the units both runs have when the baseline lacks some of this run's."""

    def margin(self, base_value: float) -> float:
        """The absolute margin for a metric whose baseline value (in its own direction) is `base_value`."""
        return min(MAX_MARGIN, self.drop * base_value if self.relative else self.drop)

    def describe(self, margin: float, direction: str) -> str:
        """The margin in words: `tolerated drop 1.6 pts (2% of the baseline value)`."""
        if self.relative:
            return f"tolerated {direction} {margin * 100:.3g} pts ({self.drop_text} of the baseline value)"
        return f"no {direction} tolerated (margin 0)" if margin == 0 else f"tolerated {direction} {margin * 100:.3g} pts"


def parse_compare_rule(text: str, *, where: str = COMPARE_OPTION) -> CompareRule:
    """Read `PATTERN[:DROP][:partial]`: metrics `<suite>.<metric>` (shell globs) and the drop tolerated, the
    non-inferiority margin: `0.03` or `3pts` absolute, `2%` relative to the baseline value (a tolerated drop reads as "no
    more than 2% worse"; thresholds read `5%` as 0.05), none margin 0. The pattern is split at its last colon only when
    what follows reads as a drop, so suite names holding `::` (node ids) still work.
    """
    raw = str(text).strip()
    head, sep, tail = raw.rpartition(":")
    if sep and tail.strip().lower() == PARTIAL and head.strip():
        return replace(parse_compare_rule(head, where=where), partial=True, text=raw)
    example = f"e.g. '{where}=fantom.all_star:2%' (2% of the baseline value), 'tombench.ability.*:0.03' or ':3pts' (absolute)"
    if not raw:
        raise TomConfigError(f"{where}: empty rule; expected PATTERN[:DROP], {example}")
    head, sep, tail = raw.rpartition(":")
    if sep and not tail.strip():
        raise TomConfigError(f"{where} {raw!r}: nothing after the colon; expected PATTERN[:DROP], {example}")
    m = _DROP.match(tail) if sep else None
    if m is None and sep and tail.strip()[:1] in tuple("0123456789.-+"):
        raise TomConfigError(f"{where} {raw!r}: cannot read the drop {tail.strip()!r}; expected a number, "
                             f"a number with 'pts', or a percentage, {example}")
    pattern, drop_text = (head.strip(), tail.strip()) if m else (raw, "0")
    if not pattern or any(ch.isspace() for ch in pattern):
        raise TomConfigError(f"{where} {raw!r}: the metric pattern {pattern!r} must be a non-empty name without spaces, "
                             f"{example}")
    if m is None:
        return CompareRule(pattern, 0.0, False, raw, "0")
    number, unit = float(m.group("num")), (m.group("unit") or "").lower()
    if unit == "%":
        if number >= 100:
            raise TomConfigError(f"{where} {raw!r}: a relative drop must be below 100% of the baseline value")
        return CompareRule(pattern, number / 100, True, raw, drop_text)
    drop = number / 100 if unit else number
    if drop >= 1:
        hint = "" if unit else f" (for points write '{number:g}pts', for a share of the baseline '{number:g}%')"
        raise TomConfigError(f"{where} {raw!r}: an absolute drop is a rate below 1{hint}")
    return CompareRule(pattern, drop, False, raw, drop_text)


def settings_diff(old: Mapping[str, Any], new: Mapping[str, Any], before: Mapping[str, Any] | None = None) -> list[str]:
    """Each setting that differs, as `name: old -> new` (nested settings by dotted name; JSON forms compared). A setting
    `old` lacks and `before` names (added by a later version) is read as what runs did before it existed.
    """
    a = leaves(json.loads(json.dumps(dict(old), default=str)))
    b = leaves(json.loads(json.dumps(dict(new), default=str)))
    implied = {k: v for k, v in json.loads(json.dumps(dict(before or {}), default=str)).items() if k not in a and k in b}
    a |= implied
    unset = "(unset)"

    def was(k: str) -> str:
        return unset if k not in a else json.dumps(a[k]) + (" (saved before this setting existed)" if k in implied else "")

    return [f"{k}: {was(k)} -> {json.dumps(b[k]) if k in b else unset}"
            for k in sorted(set(a) | set(b)) if a.get(k, unset) != b.get(k, unset) or (k in a) != (k in b)]


def check_settings(baseline_suite: BaselineSuite, sid: str, benchmark: str, fingerprint: str, settings: Mapping[str, Any],
                   *, force: bool, where: str = "the baseline", before: Mapping[str, Any] | None = None) -> list[str]:
    """A TomConfigError when suite `sid` differs from its baseline suite in more than the model (unless `force`).
    Benchmark, data fingerprint and settings are known once a suite is loaded, before any model request, so the run
    layer calls this right after collection; `check_compatible` again after the run. Returns the note a forced
    comparison carries (or nothing).
    """
    problems: list[str] = []
    if baseline_suite.benchmark != benchmark:
        problems.append(f"benchmark: {baseline_suite.benchmark} -> {benchmark}")
    if baseline_suite.data_fingerprint != fingerprint:
        problems.append(f"data fingerprint: {baseline_suite.data_fingerprint} -> {fingerprint} "
                        "(another data release or changed records)")
    problems += [f"setting {d}" for d in settings_diff(baseline_suite.settings, settings, before)]
    if not problems:
        return []
    listing = "\n  - ".join(problems)
    if not force:
        raise TomConfigError(f"suite {sid}: refusing to compare with {where}: the runs differ in more than the model, so a "
                             f"difference in scores would not be the model's:\n  - {listing}\nSave a new baseline with these "
                             f"settings ({SAVE_OPTION}=PATH, on the baseline model), or compare anyway with {FORCE_OPTION}.")
    return [f"suite {sid}: compared despite differences ({FORCE_OPTION}):\n  - {listing}"]


def check_compatible(baseline_suite: BaselineSuite, current: SuiteRun, *, force: bool, where: str = "the baseline") -> list[str]:
    """Notes on comparing `current` with its baseline suite, or a TomConfigError when the comparison means nothing.
    Refused unless `force`: another benchmark, data or settings (each difference listed old -> new); always: no question
    in common. A different model is the point of comparing. The notes say how many questions are compared and how many
    ran in one run only.
    """
    sid = current.suite_id
    notes = check_settings(baseline_suite, sid, current.benchmark, current.data_fingerprint, current.settings,
                           force=force, where=where, before=current.settings_before)
    base_ids, cur_ids = set(baseline_suite.items), {r.sample_id for r in current.records}
    both = len(base_ids & cur_ids)
    base_derived, cur_derived = set(baseline_suite.derived), {d.derived_id for d in current.derived}
    if not both and not base_derived & cur_derived:
        raise TomConfigError(f"suite {sid}: no question of this run is in {where} ({len(cur_ids):,} here, {len(base_ids):,} "
                             "there), so there is nothing to pair; was the baseline saved from another selection or another "
                             "suite?")
    line = f"suite {sid}: compared on {both:,} question{'s' if both != 1 else ''} present in both runs"
    if only_base := len(base_ids - cur_ids):
        line += f"; {only_base:,} only in the baseline (deselected in this run, or removed)"
    if only_cur := len(cur_ids - base_ids):
        line += f"; {only_cur:,} only in this run (new, or not selected when the baseline was saved)"
    return [*notes, line]


def _noise(explicit: float | None, run: SuiteRun, base: BaselineSuite) -> tuple[float | None, str]:
    if explicit is not None:
        return explicit, "measured in this run"
    if run.noise_flip_rate is not None:
        return run.noise_flip_rate, f"measured in this run for suite {run.suite_id}"
    if base.noise_flip_rate is not None:
        return base.noise_flip_rate, "stored with the baseline"
    return None, ""


def compare(baseline: Baseline, current: Sequence[SuiteRun], rules: Sequence[CompareRule], *, alpha: float = 0.05,
            force: bool = False, noise_flip_rate: float | None = None, seed: int = 0,
            level: float = 0.95) -> list[GateResult]:
    """One GateResult (kind "baseline") per rule and metric it selects, with Holm across all of them. A rule that
    selects no metric present in both runs is a failed result naming the metrics that exist, so a typo never passes
    silently; refusals raise TomConfigError (`check_compatible`). Lower-is-better metrics (`errors`) are compared as 1 -
    value, so the margin is the rise tolerated; messages show the metric's own values. Noise floor: `noise_flip_rate`
    wins, else the suite's measured rate, else the baseline's, else none.
    """
    where = f"the baseline {baseline.path}" if baseline.path else "the baseline"
    runs = {s.suite_id: s for s in current}
    both: dict[str, tuple[BaselineSuite, SuiteRun, str]] = {}
    for sid, run in runs.items():
        base = baseline.suites.get(sid)
        if base is not None:
            both.update({f"{sid}.{m}": (base, run, m) for m in run.metrics if m in base.metrics})
    notes: dict[str, list[str]] = {}
    slots: list[GateResult | None] = []
    pending: list[tuple[int, str, str, Comparison, Callable[..., GateResult]]] = []
    seen: set[str] = set()
    for rule in rules:
        names = match(rule.pattern, both)
        if not names:
            slots.append(_no_match(rule, baseline, runs, both))
            continue
        for full in names:
            base, run, metric = both[full]
            name = f"{full}:baseline" + (f"-{rule.drop_text}" if rule.drop else "")
            if name in seen:
                continue
            seen.add(name)
            if run.suite_id not in notes:
                notes[run.suite_id] = check_compatible(base, run, force=force, where=where)
            result = _pair(name, full, rule, run, base, metric, noise_flip_rate, alpha, level, seed)
            if isinstance(result, GateResult):
                slots.append(result)
            else:
                pending.append((len(slots), name, run.suite_id, *result))
                slots.append(None)
    if pending:
        gated = gate({name: comparison for _, name, _, comparison, _ in pending}, alpha)
        for index, name, sid, _, finish in pending:
            slots[index] = finish(gated[name], len(pending), notes[sid], baseline)
    return [s for s in slots if s is not None]


def _pair(name: str, full: str, rule: CompareRule, run: SuiteRun, base: BaselineSuite, metric: str, noise_flip_rate: float | None,
          alpha: float, level: float, seed: int) -> GateResult | tuple[Comparison, Callable[..., GateResult]]:
    """The paired comparison of one metric, with what makes its result once Holm has adjusted its p; or a failed result."""
    old, new = base.metrics[metric], run.metrics[metric]
    by_id = dict(zip(old.ids, old.values, strict=True))
    rows = [(uid, by_id[uid], v, c) for uid, v, c in zip(new.ids, new.values, new.clusters, strict=True) if uid in by_id]
    if not rows:
        message = (f"{full}: no unit is in both runs ({old.n:,} in the baseline, {new.n:,} in this run), so nothing "
                   f"shows the candidate is not worse; select the same questions as the baseline run")
        return GateResult(name, "baseline", full, False, None, message, details={"rule": rule.text})
    unaccounted = [uid for uid in new.ids if uid not in by_id and not unjudged_in(base, uid)]
    if unaccounted and not rule.partial:
        unit = "group" if metric in {d.kind for d in run.derived} else "question"
        message = (f"{full}: the baseline has {len(rows):,} of the {new.n:,} {unit}s of this run (missing: "
                   f"{', '.join(unaccounted[:5])}{' ...' if len(unaccounted) > 5 else ''}), so a comparison would "
                   f"leave {len(unaccounted):,} out unseen. {coverage_hint(rule)}")
        return GateResult(name, "baseline", full, False, None, message,
                          details={"rule": rule.text, "coverage": {"paired": len(rows), "in_run": new.n}})
    ids = tuple(r[0] for r in rows)
    b, w, clusters = tuple(r[1] for r in rows), tuple(r[2] for r in rows), tuple(r[3] for r in rows)
    good_b, good_w = (b, w) if new.higher_is_better else (tuple(1 - x for x in b), tuple(1 - x for x in w))
    base_value = sum(b) / len(b)
    noise, source = _noise(noise_flip_rate, run, base)
    if new.labels and old.labels:  # a macro-F1: McNemar and the t test do not apply; bootstrap the F1 difference
        base_labels, new_labels = dict(zip(old.ids, old.labels, strict=True)), dict(zip(new.ids, new.labels, strict=True))
        gold = [new_labels[u][0] for u in ids]
        base_pred, new_pred = [base_labels[u][1] for u in ids], [new_labels[u][1] for u in ids]
        comp = compare_macro_f1(gold, base_pred, new_pred, clusters, margin=rule.margin(macro_f1(gold, base_pred)),
                                level=level, alpha=alpha, seed=seed)
    else:
        comp = compare_paired(good_b, good_w, clusters, margin=rule.margin(base_value), level=level, alpha=alpha,
                              seed=seed, noise_flip_rate=noise)
    return comp, partial(_result, name, full, rule, run, base, metric, ids, b, w, clusters, source, alpha=alpha, level=level,
                         seed=seed)


def unjudged_in(base: BaselineSuite, uid: str) -> bool:
    """Whether the baseline ran unit `uid` without a value: a model error, a question without a gold, or an assertion it
    could not judge. Such a unit is in no metric of the baseline by definition (accuracies leave errors out), so its
    absence is not a gap in the file.
    """
    item = base.items.get(uid)
    if item is not None:
        return item.outcome in (Outcome.ERROR, Outcome.UNSCORED)
    derived = base.derived.get(uid)
    return derived is not None and derived.verdict not in (Verdict.PASSED, Verdict.FAILED)


def coverage_hint(rule: CompareRule | None = None) -> str:
    """What to do about a baseline that lacks units of this run."""
    example = f"'{rule.text}:{PARTIAL}'" if rule is not None and rule.text else f"'*.accuracy:{PARTIAL}'"
    return (f"Save a baseline of this selection ({SAVE_OPTION}=PATH on the baseline model), select only what the baseline "
            f"holds (-m, -k, {SAMPLE_OPTION}), or compare on the units both have with a rule ending in "
            f"':{PARTIAL}', e.g. {COMPARE_OPTION}={example}.")


def _own_terms(c: Comparison, higher_is_better: bool) -> Comparison:
    """A comparison made on 1 - value, told in the metric's own values."""
    if higher_is_better:
        return c
    d = c.diff
    diff = replace(d, point=-d.point, low=-d.high, high=-d.low,
                   method=d.method + "; lower is better, so the test was on 1 - value and a regression is a rise")
    return replace(c, base=1 - c.base, new=1 - c.new, diff=diff)


def _result(name: str, full: str, rule: CompareRule, run: SuiteRun, base: BaselineSuite, metric: str, ids: tuple[str, ...],
            base_values: tuple[float, ...], new_values: tuple[float, ...], clusters: tuple[str, ...], noise_source: str,
            gated: Comparison, m: int, notes: list[str], baseline: Baseline, *, alpha: float, level: float,
            seed: int) -> GateResult:
    higher = run.metrics[metric].higher_is_better
    c = _own_terms(gated, higher)
    est = estimate_rate(new_values, clusters, level=level, seed=seed)
    worse = [uid for uid, x, y in zip(ids, base_values, new_values, strict=True) if (y < x if higher else y > x)]
    better = [uid for uid, x, y in zip(ids, base_values, new_values, strict=True) if (y > x if higher else y < x)]
    units = _current_units(run, metric)
    worse_rows = [{"id": uid, **units.get(uid, {}), **_base_answer(base, uid)} for uid in worse]
    better_rows = [{"id": uid, "baseline_message": _base_message(base, metric, uid), **_base_answer(base, uid)}
                   for uid in better]
    direction = "drop" if higher else "rise"
    noise = f"; noise floor {c.noise_flip_rate:.1%} flips ({noise_source})" if c.noise_flip_rate else ""
    verdict = (f"REGRESSION: worse than the baseline by more than the tolerated {direction}" if c.regressed
               else f"passes: no {direction} beyond the margin is shown")
    flips = ("right->wrong", "wrong->right") if higher else ("worse (0->1)", "better (1->0)")
    lines = [f"{full}: baseline {c.base:.1%} -> candidate {c.new:.1%} (difference {points(c.diff.point)} pts, {level:.0%} "
             f"interval {points(c.diff.low)} pts to {points(c.diff.high)} pts; {c.n_pairs:,} pairs in {c.diff.clusters:,} "
             f"clusters); {rule.describe(c.margin, direction)}{noise}.",
             ("macro-F1, paired cluster bootstrap" if math.isnan(c.mcnemar_p) else f"McNemar p = {c.mcnemar_p:.3g}")
             + f" ({c.right_to_wrong} {flips[0]}, {c.wrong_to_right} {flips[1]}); one-sided p = "
             f"{c.p_regression:.3g}, Holm-adjusted over {m} comparison{'s' if m != 1 else ''} {c.p_adjusted:.3g} "
             f"(alpha {alpha:g}): {verdict}.",
             *_listing(flips[0], worse_rows, "message"), *_listing(flips[1], better_rows, "baseline_message")]
    old_n, new_n = base.metrics[metric].n, run.metrics[metric].n
    unit = "group" if metric in {d.kind for d in run.derived} else "question"
    if c.n_pairs < new_n:
        why = f"{rule.text!r} ends in ':{PARTIAL}'" if rule.partial else "the baseline has no value for the others"
        lines.append(f"{full}: compared on {c.n_pairs:,} of {new_n:,} {unit}s of this run ({why}).")
    lines += notes
    details: dict[str, Any] = {
        "rule": rule.text, "margin": c.margin, "relative_drop": rule.drop if rule.relative else None,
        "higher_is_better": higher, "noise_source": noise_source or None, "alpha": alpha, "holm_over": m, "unit": unit,
        "coverage": {"paired": c.n_pairs, "only_in_baseline": old_n - c.n_pairs, "only_in_run": new_n - c.n_pairs},
        "partial": rule.partial, "right_to_wrong": worse_rows, "wrong_to_right": better_rows, "notes": list(notes),
        "baseline": {"path": baseline.path, "created": baseline.created, "model_uri": baseline.model_uri,
                     "model_fingerprint": baseline.model_fingerprint, "pytest_tom_version": baseline.plugin_version}}
    return GateResult(name, "baseline", full, not c.regressed, est, "\n".join(lines), comparison=c, details=details)


def _current_units(run: SuiteRun, metric: str) -> dict[str, dict[str, str]]:
    """Node id and failure message of this run's units of `metric` (assertions for a derived kind, else questions)."""
    if metric in {d.kind for d in run.derived}:
        rows = [(d.derived_id, d.nodeid, d.message) for d in run.derived]
    else:
        rows = [(r.sample_id, r.nodeid, r.message) for r in run.records]
    return {uid: {"message": _clip(message, 300), **({"nodeid": nodeid} if nodeid else {})} for uid, nodeid, message in rows}


def _base_answer(base: BaselineSuite, uid: str) -> dict[str, Any]:
    """The baseline's parsed answer of a flipped question, where the baseline stored one."""
    item = base.items.get(uid)
    return {"baseline_answer": item.answer} if item is not None and item.answer is not None else {}


def _base_message(base: BaselineSuite, metric: str, uid: str) -> str:
    derived = base.derived.get(uid)
    if derived is not None and derived.kind == metric:
        return derived.message
    item = base.items.get(uid)
    return item.message if item is not None else ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _listing(label: str, rows: Sequence[Mapping[str, str]], key: str) -> list[str]:
    if not rows:
        return []
    shown = f", first {SHOWN_FLIPS}" if len(rows) > SHOWN_FLIPS else ""
    out = [f"{label} ({len(rows):,}{shown}):"]
    for row in rows[:SHOWN_FLIPS]:
        target = row.get("nodeid") or row["id"]
        text = _clip(row.get(key, ""), MESSAGE_CHARS)
        out.append(f"  {target}" + (f": {text}" if text else ""))
    return out


def _no_match(rule: CompareRule, baseline: Baseline, runs: Mapping[str, SuiteRun],
              both: Mapping[str, tuple[BaselineSuite, SuiteRun, str]]) -> GateResult:
    only_run = sorted(f"{sid}.{m}" for sid, r in runs.items() for m in r.metrics if f"{sid}.{m}" not in both)
    only_base = sorted(f"{sid}.{m}" for sid, s in baseline.suites.items() for m in s.metrics if f"{sid}.{m}" not in both)

    def names(xs: Sequence[str]) -> str:
        return ", ".join(xs[:30]) + (f" and {len(xs) - 30} more" if len(xs) > 30 else "") if xs else "none"

    message = (f"{COMPARE_OPTION} {rule.text!r}: the pattern {rule.pattern!r} selects no metric present in both the baseline "
               f"and this run, so nothing was compared. Metrics in both: {names(sorted(both))}. Only in this run: "
               f"{names(only_run)}. Only in the baseline: {names(only_base)}.")
    details = {"rule": rule.text, "in_both": sorted(both), "only_in_run": only_run, "only_in_baseline": only_base}
    return GateResult(f"{rule.pattern}:baseline", "baseline", rule.pattern, False, None, message, details=details)
