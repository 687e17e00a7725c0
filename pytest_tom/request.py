"""Model requests and responses: what the engine plans, dedupes, caches and sends. Requests are separate from samples: a
sample may need several (ToMBench's shuffled tries), one may answer several samples (ToMValley's 71 questions in one
prompt, sent once), and one may depend on another's answer (SimpleToM's reminder, in a later wave). Scoring models
(embedders) are requests too, routed by `Request.model`, sharing planning, cache and fingerprints.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

RequestKind = Literal["generate", "loglikelihood", "embed"]
MODEL_UNDER_TEST = ""
"""`Request.model` of a request for the model under test (every other value names a scoring model)."""


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
    """Stop strings cut from the answer (excluded, as OpenAI does)."""
    stop_after: tuple[str, ...] = ()
    """Answer-contract stops: generation ends right after the first of these the answer contains, which is KEPT. A
    benchmark sets them only where its parser provably reads the same answer from every continuation of a text that
    contains one (see README, "Stopping at the answer"); the tokens after it would be generated and then ignored.
    """

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature, "top_p": self.top_p,
                             "seed": self.seed, "stop": list(self.stop)}
        # Only where set, so the keys of requests without an answer-contract stop never change.
        if self.stop_after:
            d["stop_after"] = list(self.stop_after)
        return d


@dataclass(frozen=True, slots=True)
class Request:
    """One call to a model. `kind` is "generate", "loglikelihood" (score each of `choices` as a continuation) or "embed"
    (a vector of `text` from the scoring model `model`). `answer_labels` and `answer_format` tell model-agnostic
    baselines (`random`, `mock`) what a well-formed answer looks like; derived from the prompt, they are not in the key.
    """

    messages: tuple[Message, ...] = ()
    settings: GenerationSettings = GenerationSettings()
    kind: RequestKind = "generate"
    choices: tuple[str, ...] = ()
    answer_labels: tuple[str, ...] = ()
    answer_format: str = "{}"
    model: str = MODEL_UNDER_TEST
    """Which model answers: "" for the model under test, else a scoring model spec such as "embed:auto"."""
    text: str = ""
    """The text to embed (kind "embed")."""
    key: str = field(init=False, repr=False, compare=False, default="")
    """Content hash of everything the model sees and every decoding setting (computed once)."""

    def __post_init__(self) -> None:
        # Sorted keys and no whitespace, so equal requests hash equally.
        canonical = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        object.__setattr__(self, "key", sha256_text(canonical))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"messages": [m.to_dict() for m in self.messages], "settings": self.settings.to_dict(),
                             "kind": self.kind, "choices": list(self.choices)}
        # Only where set, so the keys of model-under-test requests never change.
        if self.model:
            d["model"] = self.model
        if self.kind == "embed":
            d["text"] = self.text
        return d

    def prompt_text(self) -> str:
        """A plain rendering for messages and baselines that need no chat template."""
        return "\n\n".join(m.content for m in self.messages)


@dataclass(frozen=True, slots=True)
class Response:
    """A model's answer to one request, or the error that prevented one. An error is never an answer: the engine turns
    it into an item error, so an API outage can never be counted as a wrong answer.
    """

    text: str | None = None
    error: str | None = None
    logprobs: tuple[float, ...] | None = None
    """For loglikelihood requests: one summed log-probability per choice."""
    choice_tokens: tuple[int, ...] | None = None
    """For loglikelihood requests: how many tokens each choice was scored over (for per-token normalisation)."""
    vector: tuple[float, ...] | None = None
    """For embed requests: the sentence embedding."""
    usage: Mapping[str, int] = field(default_factory=dict)
    """Token spend (prompt_tokens, completion_tokens...)."""
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"text": self.text, "error": self.error}
        d.update((name, list(v)) for name, v in (("logprobs", self.logprobs), ("choice_tokens", self.choice_tokens),
                                                 ("vector", self.vector)) if v is not None)
        if self.usage:
            d["usage"] = dict(self.usage)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, cached: bool = False) -> Response:
        lp = d.get("logprobs")
        usage = dict(d.get("usage") or {})
        tokens = d.get("choice_tokens")
        if tokens is None and any(k.startswith(_LEGACY_CHOICE_TOKENS) for k in usage):
            # Cache entries written before choice_tokens was a field kept them in usage.
            legacy = {int(k[len(_LEGACY_CHOICE_TOKENS) :]): int(v) for k, v in usage.items()
                      if k.startswith(_LEGACY_CHOICE_TOKENS)}
            tokens = [legacy[i] for i in sorted(legacy)]
            usage = {k: v for k, v in usage.items() if not k.startswith(_LEGACY_CHOICE_TOKENS)}
        vec = d.get("vector")
        return cls(text=d.get("text"), error=d.get("error"), logprobs=tuple(lp) if lp is not None else None,
                   choice_tokens=tuple(int(t) for t in tokens) if tokens is not None else None,
                   vector=tuple(float(x) for x in vec) if vec is not None else None, usage=usage, cached=cached)


_LEGACY_CHOICE_TOKENS = "choice_tokens."
