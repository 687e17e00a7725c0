r"""From answers to a record: the official first-match extraction, each run's answer, the item's verdict.

The authors take the second character of ``re.search(r'\[[A,B,C,D]\]', response)``; the comma is a slip,
so ``[,]`` matches too and, found first, reads as ",". By default (`first`) the rule is read as intended
(a ``[,]`` is skipped); `official` keeps the regex and makes such an answer unparseable. No match at all
is unparseable, never wrong; the paper's accuracies still count it as not correct.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pytest_tom.evals.tomato.data import LETTERS, ToMATOSample
from pytest_tom.evals.tomato.prompts import PromptConfig, requests
from pytest_tom.framework.base import Program
from pytest_tom.record import Outcome, Record
from pytest_tom.scoring import majority
from pytest_tom.scoring.choice import most_likely

OFFICIAL = re.compile(r"\[[A,B,C,D]\]")
"""The authors' regex (run_local_llm.py, run_gpt.py), comma included."""
BRACKETED = re.compile(r"\[([ABCD])\]")


def extract(text: str | None, mode: str = "first") -> str | None:
    """The letter a response picks under `mode` (first, official, last), or None when it cannot be read."""
    text = text or ""
    if mode == "official":
        m = OFFICIAL.search(text)
        return None if m is None or m.group()[1] == "," else m.group()[1]
    found = BRACKETED.findall(text)
    return str(found[-1] if mode == "last" else found[0]) if found else None


def solve(sample: ToMATOSample, config: PromptConfig) -> Program:
    """Ask every run at once (one engine wave), then score them together."""
    planned = requests(sample, config)
    responses = yield planned
    keys = tuple(r.key for r in planned)
    if config.scoring == "loglikelihood":
        picks = [most_likely(r.logprobs, planned[0].choices, LETTERS) for r in responses]
        return score(sample, config, [None] * len(picks), picks, keys)
    texts = [r.text for r in responses]
    return score(sample, config, texts, [extract(t, config.extraction) for t in texts], keys)


def score(sample: ToMATOSample, config: PromptConfig, texts: Sequence[str | None], picks: Sequence[str | None],
          keys: Sequence[str] = ()) -> Record:
    """Record of one question over its runs: the majority letter of the readable runs (ties to the earlier) decides.

    `score` is the share of runs right; `details["runs"]` feeds the paper's mean and std over runs.
    """
    gold = sample.gold_label
    readable = [p for p in picks if p is not None]
    final = majority(readable) if readable else None
    outcome = Outcome.judge(final, gold)
    right = [p == gold for p in picks]
    details: dict[str, Any] = {"runs": list(picks), "run_correct": right, "scoring": config.scoring,
                               "extraction": config.extraction}
    return Record.of(
        sample, outcome, score=sum(right) / len(right) if right else None, parsed=final, gold=gold, responses=tuple(texts),
        request_keys=tuple(keys), parse_rate=len(readable) / len(picks) if picks else 0.0, details=details,
        message="" if outcome is Outcome.CORRECT else explain(sample, config, texts, picks, final, outcome),
    )


def explain(sample: ToMATOSample, config: PromptConfig, texts: Sequence[str | None], picks: Sequence[str | None],
            final: str | None, outcome: Outcome) -> str:
    """Everything needed to judge a failure without opening the data file."""
    x = sample.extra
    kind = f"{x.mental_state}, {'first' if x.order == 1 else 'second'} order" + (", false belief" if x.false_belief
                                                                                  else "")
    turns = sample.context.render().split("\n")
    shown = "\n".join(f"  {t}" for t in turns[:20]) + ("\n  [...]" if len(turns) > 20 else "")
    how = "log-likelihood of [A]-[D]" if config.scoring == "loglikelihood" else f"{config.extraction} extraction"
    lines = [
        f"ToMATO {x.q_id} ({kind}; {x.file} record {x.record}): {outcome.value}",
        f"speaker's Big Five: {', '.join(f'{k} {v}' for k, v in x.big_five.items())}",
        "conversation:", shown,
        f"question: {sample.question}",
        "options:", *[f"  [{c.label}] {c.text}" for c in sample.choices],
        f"gold: [{sample.gold_label}]",
        f"answer ({how}" + (f", majority of {len(picks)} runs" if len(picks) > 1 else "") + "): "
        + (f"[{final}]" if final is not None else "unparseable"),
    ]
    for k, (text, pick) in enumerate(zip(texts, picks, strict=True)):
        if text is None and config.scoring == "loglikelihood":
            continue
        raw = (text or "").strip().replace("\n", " ")
        raw = raw if len(raw) <= 300 else raw[:300] + " [...]"
        lines.append(f"  run {k + 1}: {raw!r} -> {f'[{pick}]' if pick else 'unparseable'}")
    return "\n".join(lines)
