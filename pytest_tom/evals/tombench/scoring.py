"""From answers to a record: read each try's letter, map it back through the shuffle, majority-vote.

The vote is over original letters (a displayed one means nothing until mapped back). An answer no try
could read is "unparseable", never "wrong", unless the official extraction (which reads "A") is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_tom.evals.tombench.data import LETTERS, TASK_NAMES, ToMBenchSample
from pytest_tom.evals.tombench.prompts import Config, Try, tries
from pytest_tom.framework.base import Program
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Response
from pytest_tom.scoring import bracketed_label, majority
from pytest_tom.scoring.choice import most_likely


def solve(sample: ToMBenchSample, config: Config) -> Program:
    """Ask every try in one engine wave and score; under "both" the log-likelihood answer goes in `details`."""
    mode = config.scoring
    gen = tries(sample, config) if mode in ("generate", "both") else []
    ll = tries(sample, config, "loglikelihood") if mode in ("loglikelihood", "both") else []
    responses = yield [t.request for t in gen + ll]
    gen_resp, ll_resp = responses[: len(gen)], responses[len(gen) :]
    if mode == "loglikelihood":
        return _by_loglikelihood(sample, config, ll, ll_resp)
    record = score(sample, config, [t.order for t in gen], [r.text for r in gen_resp])
    if mode == "both":
        by_ll = _by_loglikelihood(sample, config, ll, ll_resp)
        record = record.replace(details={
            **record.details,
            "loglikelihood_answer": by_ll.parsed,
            "loglikelihood_correct": by_ll.outcome is Outcome.CORRECT,
        })
    return record


def _by_loglikelihood(sample: ToMBenchSample, config: Config, planned: Sequence[Try], responses: Sequence[Response]) -> Record:
    """Each try reads the displayed letter the model scores highest (`most_likely`)."""
    picks = [most_likely(r.logprobs, t.request.choices, LETTERS, config.ll_normalise)
             for t, r in zip(planned, responses, strict=False)]
    return score(sample, config, [t.order for t in planned], [None] * len(planned), ll_choice=picks)


def score(sample: ToMBenchSample, config: Config, orders: Sequence[Sequence[int]], texts: Sequence[str | None],
          ll_choice: Sequence[str | None] | None = None) -> Record:
    """Majority-vote the tries; `ll_choice` replaces text extraction in log-likelihood scoring."""
    n = len(sample.choices)
    votes: list[str] = []
    trials: list[dict[str, Any]] = []
    for k, (order, text) in enumerate(zip(orders, texts, strict=False)):
        shown = ll_choice[k] if ll_choice is not None else bracketed_label(text, config.extraction, n, LETTERS)
        original: str | None = None
        if shown is not None:
            pos = LETTERS.index(shown)
            # A C/D answer on a binary item maps to "" upstream: a vote that is always wrong.
            original = sample.choices[order[pos]].label if pos < n else ""
            votes.append(original)
        trials.append({"order": "".join(LETTERS[i] for i in order), "shown": shown, "original": original})
    parse_rate = len(votes) / len(texts) if texts else 0.0
    final = majority(votes) if votes else None
    outcome = Outcome.judge(final, sample.gold_label)
    details: dict[str, Any] = {"trials": trials, "votes": votes, "first_try": trials[0]["original"] if trials else None}
    if sample.extra.story_id:
        details["story_size"] = sample.extra.story_size
    if sample.defect:
        details["defect"] = sample.defect
    return Record.of(
        sample, outcome, parsed=final, gold=sample.gold, responses=tuple(texts), parse_rate=parse_rate, details=details,
        message="" if outcome is Outcome.CORRECT else explain(sample, config, orders, texts, trials, final, outcome))


def explain(sample: ToMBenchSample, config: Config, orders: Sequence[Sequence[int]], texts: Sequence[str | None],
            trials: Sequence[dict[str, Any]], final: str | None, outcome: Outcome) -> str:
    """Everything a user needs to judge a failure without opening the data file."""
    x = sample.extra
    story = sample.context.render()
    story = story if len(story) <= 400 else story[:400] + " [...]"
    lines = [
        f"ToMBench {x.language} {TASK_NAMES.get(x.task, 'extra ability')} / {x.ability} "
        f"({x.file}.jsonl line {x.row}): {outcome.value}",
        f"story: {story}",
        f"question: {sample.question}",
        "options (original order):",
        *[f"  {c.label}. {c.text}" for c in sample.choices],
        f"gold: {sample.gold_label}. {sample.choice(sample.gold_label).text}",
        f"final answer ({f'majority of {len(texts)} tries' if len(texts) > 1 else 'one try'}, "
        f"{config.extraction} extraction): "
        f"{final if final is not None else 'unparseable'}",
    ]
    for k, (order, text, trial) in enumerate(zip(orders, texts, trials, strict=False)):
        shown = " ".join(f"{LETTERS[pos]}={LETTERS[i]}" for pos, i in enumerate(order))
        raw = (text or "").strip().replace("\n", " ")
        raw = raw if len(raw) <= 200 else raw[:200] + " [...]"
        parsed = "unparseable" if trial["shown"] is None else f"{trial['shown']} -> {trial['original'] or 'invalid'}"
        lines.append(f"  try {k + 1} [shown {shown}]: {raw!r} -> {parsed}")
    if sample.defect:
        lines.append(f"note: known release defect: {sample.defect}")
    return "\n".join(lines)
