"""SimpleToM's aggregate assertions: the per-story chain (a failure names the first broken link, spec 5 A), and
`letter_balance`: every gold has the same content, only its letter varies, so a question type answered (almost)
always with one letter while its golds are not flags a constant answerer.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.derived import Derived, Judgement, Rule
from pytest_tom.evals.simpletom.data import BENCHMARK, QUESTION_TYPES, TYPE_NAMES, SimpleToMSample
from pytest_tom.record import Outcome, Record

CHAIN = "chain"
BALANCE = "letter_balance"
BUCKETS = ("fail_ms", "fail_behavior", "fail_judgment", "all_correct")  # spec 5 A: each complete story in one
SAME_LETTER_THRESHOLD = 0.95  # `letter_balance` fails at this share of one letter (its golds below it)
MIN_BALANCE_ANSWERS = 10  # fewer questions of a type get no `letter_balance` item (too few to tell)


def bucket(ms: bool, behavior: bool, judgment: bool) -> str:
    """The first broken link of a chain, or "all_correct"."""
    return next((b for b, ok in zip(BUCKETS, (ms, behavior, judgment), strict=False) if not ok), "all_correct")


def chains(samples: Sequence[SimpleToMSample], benchmark: str = BENCHMARK) -> list[Derived]:
    """One chain per story that has all three questions, in sample order."""
    by_story: dict[str, dict[str, SimpleToMSample]] = defaultdict(dict)
    for s in samples:
        by_story[s.extra.story_id][s.extra.question_type] = s
    complete = {sid: [qs[t] for t in QUESTION_TYPES] for sid, qs in by_story.items() if len(qs) == len(QUESTION_TYPES)}
    return [Derived(benchmark=benchmark, id=sid, kind=CHAIN, members=tuple(s.id for s in picked),
                    marks=(benchmark, CHAIN, scenario, sev), facets={"scenario": scenario, "severity": sev, "story": sid},
                    params={"options": [[c.text for c in s.choices] for s in picked]})
            for sid, picked in complete.items()
            for scenario, sev in ((picked[0].extra.scenario, picked[0].facets["severity"]),)]


def balance_checks(samples: Sequence[SimpleToMSample], benchmark: str = BENCHMARK) -> list[Derived]:
    """One `letter_balance` item per question type with at least MIN_BALANCE_ANSWERS questions."""
    by_type = {qtype: [s.id for s in samples if s.extra.question_type == qtype] for qtype in QUESTION_TYPES}
    return [Derived(benchmark=benchmark, id=qtype, kind=BALANCE, members=tuple(ids), marks=(benchmark, BALANCE, qtype),
                    facets={"question_type": qtype}, params={"threshold": SAME_LETTER_THRESHOLD})
            for qtype, ids in by_type.items() if len(ids) >= MIN_BALANCE_ANSWERS]


def _readable(r: Record) -> bool:
    return r.outcome is not Outcome.UNPARSEABLE and isinstance(r.parsed, str) and bool(r.parsed)


def _answer(r: Record, options: Sequence[str] | None = None) -> str:
    """"(A)" and its option text when `options` are given, or "unparseable"."""
    if not _readable(r):
        return "unparseable"
    text = _option(r.parsed, options)
    return f"({r.parsed})" + (f' "{text}"' if text else "")


def _option(label: str, options: Sequence[str] | None) -> str:
    i = ord(label) - ord("A") if len(label) == 1 else -1
    return options[i] if options is not None and 0 <= i < len(options) else ""


def chain_rule(derived: Derived, members: Sequence[Record]) -> Judgement:
    """Mental state right => behavior right => judgment right; a failure names the first broken link."""
    ok = [r.outcome is Outcome.CORRECT for r in members]
    where = bucket(*ok)
    options: list[Sequence[str]] = list(derived.params.get("options") or [None] * len(members))
    answers = {t: {"parsed": r.parsed, "gold": r.gold, "correct": good}
               for t, r, good in zip(QUESTION_TYPES, members, ok, strict=True)}
    details: dict[str, Any] = {"bucket": where, "answers": answers}
    if where == "all_correct":
        return Judgement(True, value=1.0, details=details)
    f = derived.facets
    why = {
        "fail_ms": "the model did not infer the mental state (it takes the character to be aware)",
        "fail_behavior": "the model inferred the mental state but did not apply it to predict the behavior",
        "fail_judgment": "the model inferred the mental state and predicted the behavior, but judged it unreasonable",
    }[where]
    short = ", ".join(
        f"{TYPE_NAMES[t]} {_answer(r)} " + ("ok" if good else f"WRONG (gold {r.gold})")
        for t, r, good in zip(QUESTION_TYPES, members, ok, strict=True))
    lines = [f"SimpleToM chain {derived.id} broken at {where}: {short}",
             f"  {why} ({f.get('scenario', '')}, {f.get('severity', '')})"]
    for t, r, good, opts in zip(QUESTION_TYPES, members, ok, options, strict=True):
        gold = f"({r.gold})" + (f' "{_option(str(r.gold), opts)}"' if isinstance(r.gold, str) else "")
        lines.append(f"  {TYPE_NAMES[t] + ':':14s}{'ok   ' if good else 'WRONG'} answered {_answer(r, opts)}, gold {gold}")
    failed = tuple(r.sample_id for r, good in zip(members, ok, strict=True) if not good)
    return Judgement(False, "\n".join(lines), value=0.0, failed_members=failed, details=details)


def letter_counts(records: Sequence[Record]) -> tuple[Counter[str], Counter[str]]:
    """(answers, golds) by letter; answers the parser could not read count as "unparseable"."""
    return Counter(str(r.parsed) if _readable(r) else "unparseable" for r in records), Counter(str(r.gold) for r in records)


def top_letter(answers: Mapping[str, int]) -> tuple[int, str]:
    """(count, letter) of the most answered readable letter; (0, "") when none was readable."""
    return max(((c, k) for k, c in answers.items() if k != "unparseable"), default=(0, ""))


def balance_text(counter: Mapping[str, int], n: int) -> str:
    keys = sorted(k for k in counter if k != "unparseable") + (["unparseable"] if counter.get("unparseable") else [])
    return " / ".join(f"{k} {counter[k]} ({100 * counter[k] / n:.1f}%)" for k in keys) if n else "none"


def balance_rule(derived: Derived, members: Sequence[Record]) -> Judgement:
    """Fails when >= threshold of the answers are one letter while fewer than threshold of the golds are."""
    threshold = float(derived.params.get("threshold", SAME_LETTER_THRESHOLD))
    n = len(members)
    answers, golds = letter_counts(members)
    count, top = top_letter(answers)
    share = count / n if n else 0.0
    gold_share = golds.get(top, 0) / n if n else 0.0
    details = {"answers": dict(answers), "golds": dict(golds), "top_letter": top, "top_share": share,
               "gold_share": gold_share}
    if not n or share < threshold or gold_share >= threshold:
        return Judgement(True, value=share, details=details)
    qtype = derived.facets.get("question_type", derived.id)
    msg = (f"SimpleToM {TYPE_NAMES.get(qtype, qtype)} answers are (almost) always the same letter: {top!r} on {count} "
           f"of {n} ({100 * share:.1f}%, threshold {100 * threshold:.0f}%) while the gold is {top!r} on "
           f"{golds.get(top, 0)} ({100 * gold_share:.1f}%). The release's gold content never varies (always the "
           "unaware reading), only its letter does, so this looks like a position-biased or constant answerer, "
           f"not theory of mind.\n  answers: {balance_text(answers, n)}\n  golds:   {balance_text(golds, n)}")
    return Judgement(False, msg, value=share, details=details)


RULES: Mapping[str, Rule] = {CHAIN: chain_rule, BALANCE: balance_rule}
