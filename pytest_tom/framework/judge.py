"""The judged step: a benchmark whose official scorer falls back to an LLM grader asks a second model, the judge.

A program yields `ask(...)` where its deterministic rule reads nothing. The engine routes the request to the model
`--tom-judge=URI` names (ini `tom_judge`), through the same planning, dedupe and cache as every request (the judge's
fingerprint is in the key). Without a judge the engine answers at once with no text, never an error, and sends, caches
and counts nothing, so the benchmark keeps its deterministic verdict and a run without the option is unchanged. A
verdict never changes an item's outcome: the benchmark reports it beside it (its `details`, and metrics of their own),
so the headline stays reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_tom.request import GenerationSettings, Message, Request, Response

JUDGE = "judge"
"""`Request.model` of a judge request: the model --tom-judge names."""


def ask(prompt: str | Sequence[Message], settings: GenerationSettings, labels: tuple[str, ...] = ()) -> Request:
    """A request for the judge: `prompt` as one user message (or the messages given); `labels` are the verdicts a
    baseline judge (`random`, `mock`) may answer.
    """
    messages = (Message("user", prompt),) if isinstance(prompt, str) else tuple(prompt)
    return Request(messages=messages, settings=settings, model=JUDGE, answer_labels=labels)


def verdict(response: Response) -> str | None:
    """The judge's answer, stripped; None when no judge was configured (or it said nothing)."""
    return response.text.strip() if response.text is not None else None
