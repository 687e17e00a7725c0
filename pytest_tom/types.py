"""Value objects shared by benchmarks, the engine and model backends.

Requests are deliberately separate from questions: one question may need several
requests (ToMBench's shuffled tries), one request may answer several questions
(ToMValley's 71 questions in one prompt), and a request may depend on the answer
to another (SimpleToM's mental-state reminder). The engine dedupes requests by
their `key`, so two questions that send the same prompt cost one model call.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace, so equal objects hash equally."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    """"system", "user" or "assistant"."""
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class GenerationSettings:
    """Decoding settings; every field changes the output, so all are in the cache key."""

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "stop": list(self.stop),
        }


@dataclass(frozen=True, slots=True)
class Request:
    """One call to a model.

    `kind` is "generate" (free text) or "loglikelihood" (score each of `choices`
    as a continuation of the prompt). `answer_labels` and `answer_format` tell
    model-agnostic baselines (the `random` model) what a well-formed answer looks
    like; they are derived from the prompt, so they change nothing in the key.
    """

    messages: tuple[Message, ...]
    settings: GenerationSettings = GenerationSettings()
    kind: str = "generate"
    choices: tuple[str, ...] = ()
    answer_labels: tuple[str, ...] = ()
    answer_format: str = "{}"
    key: str = field(init=False, repr=False, compare=False, default="")
    """Content hash of everything the model sees and every decoding setting (computed once)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", sha256_text(canonical_json(self.to_dict())))

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": [m.to_dict() for m in self.messages],
            "settings": self.settings.to_dict(),
            "kind": self.kind,
            "choices": list(self.choices),
        }

    def prompt_text(self) -> str:
        """A plain rendering for messages and baselines that need no chat template."""
        return "\n\n".join(m.content for m in self.messages)


@dataclass(frozen=True, slots=True)
class Response:
    """A model's answer to one request, or the error that prevented one.

    An error is never an answer: the engine turns it into an item error, so an API
    outage can never be counted as a wrong answer.
    """

    text: str | None = None
    error: str | None = None
    logprobs: tuple[float, ...] | None = None
    """For loglikelihood requests: one summed log-probability per choice."""
    usage: Mapping[str, int] = field(default_factory=dict)
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"text": self.text, "error": self.error}
        if self.logprobs is not None:
            d["logprobs"] = list(self.logprobs)
        if self.usage:
            d["usage"] = dict(self.usage)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, cached: bool = False) -> Response:
        lp = d.get("logprobs")
        return cls(
            text=d.get("text"),
            error=d.get("error"),
            logprobs=tuple(lp) if lp is not None else None,
            usage=dict(d.get("usage") or {}),
            cached=cached,
        )


class Outcome(str, enum.Enum):
    """What happened to one question. Unparseable and error are never "incorrect"."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    UNPARSEABLE = "unparseable"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Question:
    """One benchmark question in one setting (language, context length...), one pytest item."""

    benchmark: str
    """Registry name of the benchmark, e.g. "tombench"."""
    qid: str
    """Identifier, unique within its benchmark and stable across runs; the item's id."""
    marks: tuple[str, ...]
    """Mark names the item carries, e.g. ("tombench", "en", "fbt", "belief")."""
    facets: Mapping[str, str]
    """Grouping keys for the summary (language, task, ability...); also the strata for sampling."""
    payload: Any
    """The benchmark's own record; only that benchmark's module looks inside."""
    source: str = ""
    """Where the question came from (file and record), for failure messages."""


@dataclass(frozen=True, slots=True)
class Group:
    """Questions that must all pass together (a story, a FANToM question set)."""

    benchmark: str
    gid: str
    kind: str
    """What the group asserts, e.g. "coherent" or "all_star"; also a mark."""
    members: tuple[str, ...]
    """qids of the member questions."""
    marks: tuple[str, ...] = ()
    facets: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ItemResult:
    """The scored result of one question; serialisable so it can cross xdist."""

    benchmark: str
    qid: str
    outcome: Outcome
    facets: dict[str, str]
    score: float | None = None
    """Per-item score where the metric is not plain accuracy (token F1...)."""
    parsed: Any = None
    gold: Any = None
    responses: list[str | None] = field(default_factory=list)
    request_keys: list[str] = field(default_factory=list)
    parse_rate: float = 1.0
    """Share of this item's model responses the parser could read."""
    details: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    """Human-readable explanation shown when the item fails."""

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.CORRECT

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "qid": self.qid,
            "outcome": self.outcome.value,
            "facets": dict(self.facets),
            "score": self.score,
            "parsed": self.parsed,
            "gold": self.gold,
            "responses": list(self.responses),
            "request_keys": list(self.request_keys),
            "parse_rate": self.parse_rate,
            "details": self.details,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ItemResult:
        return cls(
            benchmark=d["benchmark"],
            qid=d["qid"],
            outcome=Outcome(d["outcome"]),
            facets=dict(d.get("facets") or {}),
            score=d.get("score"),
            parsed=d.get("parsed"),
            gold=d.get("gold"),
            responses=list(d.get("responses") or []),
            request_keys=list(d.get("request_keys") or []),
            parse_rate=float(d.get("parse_rate", 1.0)),
            details=dict(d.get("details") or {}),
            message=d.get("message", ""),
        )
