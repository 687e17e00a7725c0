r"""From a response to a record: the official substring rule of `evaluate_conditions.py` (spec §3.5), deterministically.

The gold key (`a)` / `b)`) anywhere in the lower-cased answer is correct, else the other key is wrong: gold first, so an
answer holding both is correct, as officially (`both_keys`). Where the official code calls its LLM grader, the answer is
matched against the option texts, else it is `unparseable`: not correct, in the denominator (as a grader "False" is).
"""

from __future__ import annotations

from pytest_tom.evals.bigtom.data import BigToMSample
from pytest_tom.evals.bigtom.prompts import GRADER, answer_call, first, grade
from pytest_tom.framework.base import Program
from pytest_tom.framework.judge import ask, verdict
from pytest_tom.record import Outcome, Record


def parse_chat_response(response: str) -> str:
    """The official cut (chat 0shot-cot only): from 8 characters after the first `Answer:` (7 in when there is none)."""
    return response[response.find("Answer:") + 8:].strip()


def read(sample: BigToMSample, response: str | None, *, cut: bool, extraction: str = "official") -> tuple[str | None, str, bool]:
    """(letter, via, both_keys): by the official rule (`via` "key"), else the one option whose text the answer holds
    ("text"), else None ("none"); `cut`: chat 0shot-cot's quirk; `extraction` "first": the earlier key, not the gold first.
    """
    r = (response or "").strip()
    low = (parse_chat_response(r) if cut else r).lower()
    both = "a)" in low and "b)" in low
    if extraction == "first" and both:
        return min("ab", key=lambda x: low.find(f"{x})")), "key", both
    for letter in sorted("ab", key=lambda x: x != sample.gold_label):  # the gold key first
        if f"{letter})" in low:
            return letter, "key", both
    text = " ".join(low.split()).removesuffix(".")  # options and answer: whitespace collapsed, a final "." dropped
    hits = [c.label for c in sample.choices if " ".join(c.text.lower().split()).removesuffix(".") in text]
    return (hits[0], "text", both) if len(hits) == 1 else (None, "none", both)


def solve(sample: BigToMSample, method: str, fmt: str, tokens: int, extraction: str) -> Program:
    reqs = [first(sample, method, fmt, tokens)]
    (response,) = yield [reqs[0]]
    texts = [response.text]
    if fmt == "completion" and method.endswith("cot"):
        reqs.append(answer_call(reqs[0], response.text or ""))
        (response,) = yield [reqs[1]]
        texts.append(response.text)
    cut = (fmt, method) == ("chat", "0shot-cot")
    record = score(sample, response.text, cut=cut, extraction=extraction, keys=tuple(r.key for r in reqs), texts=tuple(texts))
    if record.details["via"] == "none":  # where the official code asks its grader: the judged step (--tom-judge)
        r = (response.text or "").strip()
        (said,) = yield [ask(grade(sample, parse_chat_response(r) if cut else r), GRADER, ("True", "False"))]
        if (judged := verdict(said)) is not None:
            record = record.replace(details={**record.details, "judge": judged, "judge_correct": judged == "True"})
    return record


def score(sample: BigToMSample, text: str | None, *, cut: bool = False, extraction: str = "official",
          keys: tuple[str, ...] = (), texts: tuple[str | None, ...] | None = None) -> Record:
    """Correct iff the letter read is the gold; nothing read is unparseable (not correct, in the denominator)."""
    letter, via, both = read(sample, text, cut=cut, extraction=extraction)
    outcome, gold = Outcome.judge(letter, sample.gold_label), sample.gold_label
    read_as = f"{letter}) via its {via}" if letter else "neither key a)/b) nor exactly one option's text"
    message = "" if outcome is Outcome.CORRECT else (
        f"BigToM {sample.id} ({sample.source}): {outcome.value}\nquestion: {sample.question}\n"
        f"gold: {gold}){sample.choice(gold).text}\nanswer: {(text or '')[:300]!r}; read: {read_as}")
    return Record.of(sample, outcome, parsed=letter, gold=gold, responses=texts if texts is not None else (text,),
                     request_keys=keys, details={"via": via, "both_keys": both}, message=message)
