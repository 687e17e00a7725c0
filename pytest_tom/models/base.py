"""The contract every model backend fulfils, and the adapter for user callables."""

from __future__ import annotations

import hashlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pytest_tom.request import Request, Response


class Model(ABC):
    """A model the engine can send batches of requests to.

    Backends answer every request: a failure is a `Response(error=...)`, never an
    exception escaping `generate`, so one bad request cannot sink a whole run.
    """

    uri: str = ""
    batch_size: int = 16
    """How many requests the backend works on at once; one meaning for every backend.

    `hf:` sequences per forward pass (halved on out-of-memory), `vllm:` prompts
    per `llm.generate` call (both count a log-likelihood request once per
    choice), `openai:` HTTP requests in flight (its `concurrency=` option),
    any other `Model`: requests per `generate` call (`Model.stream` chunks by
    it). A URI option sets it; `--tom-batch-size` overrides that (the engine
    sets this attribute once, before the first request). It trades memory for
    throughput and sets how often answers reach the cache, so it is never part
    of a fingerprint.
    """

    @abstractmethod
    def fingerprint(self) -> str:
        """Identity of everything that changes answers (weights, template...), for the cache key."""

    @abstractmethod
    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer `requests`, one response per request, in order."""

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        """Yield `(index, response)` as answers arrive; batch backends answer batch by batch.

        The engine caches each response as it comes out of this iterator, which is
        what lets an interrupted run resume where it stopped.
        """
        size = max(1, self.batch_size)
        for start in range(0, len(requests), size):
            chunk = requests[start : start + size]
            for offset, response in enumerate(self.generate(chunk)):
                yield start + offset, response

    def describe(self) -> dict[str, Any]:
        """What the report records about the model."""
        return {"uri": self.uri, "fingerprint": self.fingerprint(), "class": type(self).__name__}

    def close(self) -> None:  # noqa: B027 - a no-op default, not a forgotten abstract method
        """Release GPU memory, sockets, subprocesses."""


class StreamingModel(Model):
    """A backend whose natural interface is `stream` (async APIs, engines that schedule themselves).

    `generate` simply collects the stream in request order.
    """

    @abstractmethod
    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        """Yield `(index, response)` for every request, in completion order."""

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out: list[Response | None] = [None] * len(requests)
        for index, response in self.stream(requests):
            out[index] = response
        return [r if r is not None else Response(error="no answer") for r in out]


def _callable_identity(fn: Callable[..., Any]) -> str:
    """Hash the callable's source where we can, so editing the user's model code invalidates the cache."""
    explicit = getattr(fn, "tom_fingerprint", None)
    if explicit is not None:
        return str(explicit)
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn)
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"
    try:
        src = inspect.getsource(target)
    except (OSError, TypeError):
        src = ""
    return hashlib.sha256(f"{name}\n{src}".encode()).hexdigest()


class CallableModel(Model):
    """Wraps a user's Python callable.

    A batched callable (the default) receives ``list[list[dict]]`` (chat messages
    per request) and a settings dict, and returns ``list[str]``: that lets users
    batch on their own GPU. Mark a one-prompt-at-a-time function with
    `pytest_tom.per_prompt`; it then receives ``list[dict]`` and returns ``str``.
    Requests are grouped by decoding settings, so each call sees one settings dict.
    """

    def __init__(self, fn: Callable[..., Any], *, uri: str = "", batch_size: int | None = None) -> None:
        self.fn = fn
        self.uri = uri or f"python:{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"
        self.per_prompt = bool(getattr(fn, "tom_per_prompt", False))
        self.batch_size = batch_size or int(getattr(fn, "tom_batch_size", 16))
        self._fp = _callable_identity(fn)

    def fingerprint(self) -> str:
        return f"callable:{self._fp}"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out: list[Response | None] = [None] * len(requests)
        by_settings: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            by_settings.setdefault((r.settings, r.kind, r.choices), []).append(i)
        for idxs in by_settings.values():
            first = requests[idxs[0]]
            settings: Mapping[str, Any] = first.settings.to_dict()
            if first.kind != "generate":
                err = f"{self.uri} answers only generate requests, not {first.kind!r}"
                for i in idxs:
                    out[i] = Response(error=err)
                continue
            prompts = [[m.to_dict() for m in requests[i].messages] for i in idxs]
            try:
                if self.per_prompt:
                    texts = [self.fn(p, dict(settings)) for p in prompts]
                else:
                    texts = list(self.fn(prompts, dict(settings)))
            except Exception as exc:  # the user's code failing is an error, not an answer
                err = f"{type(exc).__name__}: {exc}"
                for i in idxs:
                    out[i] = Response(error=err)
                continue
            if len(texts) != len(idxs):
                err = f"{self.uri} returned {len(texts)} answers for {len(idxs)} prompts"
                for i in idxs:
                    out[i] = Response(error=err)
                continue
            for i, text in zip(idxs, texts, strict=True):
                if not isinstance(text, str):
                    out[i] = Response(error=f"{self.uri} returned {type(text).__name__}, expected str")
                else:
                    out[i] = Response(text=text)
        return [r if r is not None else Response(error="no answer") for r in out]


def per_prompt(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a model callable that takes one conversation and returns one string."""
    fn.tom_per_prompt = True  # type: ignore[attr-defined]
    return fn
