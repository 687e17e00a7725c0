"""The contract every model backend fulfils, and the adapter for user callables (`as_model`, the `python:` scheme)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import linecache
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError
from pytest_tom.request import Request, Response


class Model(ABC):
    """A model the engine sends batches to; a failure is a `Response(error=...)`, never an exception sinking a run."""

    uri: str = ""
    batch_size: int = 16
    """Requests worked on at once (`hf:` sequences per forward pass, `openai:` requests in flight), set by a URI option
    or `--tom-batch-size`; it trades memory for throughput and never changes answers, so no fingerprint holds it.
    """

    @abstractmethod
    def fingerprint(self) -> str:
        """Identity of everything that changes answers (weights, template...), for the cache key."""

    @abstractmethod
    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer `requests`, one response per request, in order."""

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        """Yield `(index, response)` as answers arrive (each is cached at once, so an interrupted run resumes)."""
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

    def secrets(self) -> tuple[str, ...]:
        """Secrets this backend knows (API key, named values): redacted from answers and errors (servers echo them)."""
        return ()

    def user_traceback(self, message: str) -> str | None:
        """The user's own traceback behind an error this backend answered (`message` holds its text), if kept."""
        return None


REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 4  # shorter values are never redacted: replacing "ab" would garble answers


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret of at least `MIN_SECRET_LENGTH` characters replaced by `[redacted]`, longest first."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


class StreamingModel(Model):
    """A backend whose natural interface is `stream` (async APIs, engines that schedule themselves)."""

    @abstractmethod
    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        """Yield `(index, response)` for every request, in completion order."""

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = [Response(error="no answer")] * len(requests)
        for index, response in self.stream(requests):
            out[index] = response
        return out


def _callable_identity(fn: Callable[..., Any]) -> str:
    """Hash the callable's source where we can, so editing the user's model code invalidates the cache."""
    explicit = getattr(fn, "tom_fingerprint", None)
    if explicit is not None:
        return str(explicit)
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn)
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"
    return source_digest(target, name)


def source_digest(target: object, label: str) -> str:
    """A sha256 of `label` and `target`'s source code (none for code without source)."""
    try:
        src = inspect.getsource(target)  # type: ignore[arg-type]
    except (OSError, TypeError):
        src = ""
    return hashlib.sha256(f"{label}\n{src}".encode()).hexdigest()


class CallableModel(Model):
    """A user's callable: batched ``fn(conversations, settings) -> [str, ...]`` (they can batch on their own GPU), or
    `per_prompt` ``fn(messages[, settings]) -> str``; signature and answers are checked, so a slip is one clear error.
    """

    def __init__(self, fn: Callable[..., Any], *, uri: str = "", batch_size: int | None = None) -> None:
        self.fn = fn
        self.uri = uri or f"python:{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"
        self.per_prompt = bool(getattr(fn, "tom_per_prompt", False))
        self.batch_size = batch_size or int(getattr(fn, "tom_batch_size", 16))
        self._fp = _callable_identity(fn)
        self._with_settings = _check_signature(fn, self.uri, per_prompt=self.per_prompt)
        self._tracebacks: dict[str, str] = {}  # error text -> the user's frames behind it (the first few)

    def fingerprint(self) -> str:
        return f"callable:{self._fp}"

    def user_traceback(self, message: str) -> str | None:
        return next((text for error, text in self._tracebacks.items() if error in message), None)

    def _call(self, prompts: list[list[dict[str, Any]]], settings: dict[str, Any]) -> list[Response]:
        """One call of the user's function for a group of requests: their answers, or one error each."""
        texts: Sequence[str | Response]
        try:
            if self.per_prompt:
                texts = [self._one(p, settings) for p in prompts]
            else:
                texts = _batch_answers(self.fn(prompts, settings), len(prompts), self.uri)
        except _WrongAnswerType as exc:
            return [Response(error=str(exc))] * len(prompts)
        except Exception as exc:  # the user's code failing is an error, not an answer
            err = f"{type(exc).__name__}: {exc}"
            if err not in self._tracebacks and len(self._tracebacks) < _MAX_TRACEBACKS:
                self._tracebacks[err] = format_user_frames(exc)
            return [Response(error=err)] * len(prompts)
        return [t if isinstance(t, Response) else Response(text=t) for t in texts]

    def _one(self, prompt: list[dict[str, Any]], settings: dict[str, Any]) -> str | Response:
        text = self.fn(prompt, settings) if self._with_settings else self.fn(prompt)
        if isinstance(text, str):
            return text
        return Response(error=f"{self.uri} (a per_prompt function) returned {_shown(text)}, expected one str: "
                              "the answer to the one conversation it was given")

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = [Response(error="no answer")] * len(requests)
        by_settings: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            by_settings.setdefault((r.settings, r.kind, r.choices), []).append(i)
        for idxs in by_settings.values():
            first = requests[idxs[0]]
            if first.kind == "generate":
                prompts = [[m.to_dict() for m in requests[i].messages] for i in idxs]
                responses = self._call(prompts, first.settings.to_dict())
            else:
                error = f"{self.uri} answers only generate requests, not {first.kind!r}"
                responses = [Response(error=error)] * len(idxs)
            for i, response in zip(idxs, responses, strict=True):
                out[i] = response
        return out


_MAX_TRACEBACKS = 8
# pytest-tom's own folder: its frames are never the user's (nor are pytest's and pluggy's, matched by name).
_FRAMEWORK = (Path(__file__).resolve().parents[1],)
_FRAMEWORK_PARTS = frozenset({"_pytest", "pluggy"})


class _WrongAnswerType(Exception):
    """A batched callable returned something other than one string per conversation."""


def _shown(value: object, width: int = 60) -> str:
    """A value's type and a short repr, for messages about what a callable returned."""
    text = shown if len(shown := repr(value)) <= width else shown[: width - 5] + "[...]"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name} ({text})"


def _batch_answers(result: object, expected: int, uri: str) -> list[str]:
    """A batched callable's return value, checked: a list of `expected` strings, else one error for the whole call."""
    per_prompt_hint = ("; a function that answers one conversation at a time needs @pytest_tom.per_prompt"
                       if isinstance(result, str) else "")
    if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
        raise _WrongAnswerType(f"{uri} returned {_shown(result)}, expected a list of str, one answer per "
                               f"conversation in order{per_prompt_hint}")
    texts = list(result)
    if len(texts) != expected:
        raise _WrongAnswerType(f"{uri} returned {len(texts)} answers for {expected} conversations: a batched callable "
                               "returns one str per conversation, in order")
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            raise _WrongAnswerType(f"{uri} returned a list whose item {k} is {_shown(text)}, expected str (one answer "
                                   "per conversation)")
    return texts


def _check_signature(fn: Callable[..., Any], uri: str, *, per_prompt: bool) -> bool:
    """Whether to pass the settings dict; a callable that cannot take the arguments it will get is a `TomConfigError`."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or extension callable: nothing to check, call it as documented
        return True
    with contextlib.suppress(TypeError):
        sig.bind(None, None)
        return True
    try:
        sig.bind(None)
    except TypeError:
        raise TomConfigError(f"{uri}: cannot be called with the arguments pytest-tom passes: it takes {sig}; a model "
                             "callable takes (conversations, settings) and returns one str per conversation, or, "
                             "decorated with @pytest_tom.per_prompt, (messages) or (messages, settings) and returns "
                             "one str") from None
    if per_prompt:
        return False
    raise TomConfigError(f"{uri} takes one argument {sig}: if it answers one conversation (a list of chat messages) "
                         "with one str, decorate it with @pytest_tom.per_prompt; a batched callable takes "
                         "(conversations, settings) and returns one str per conversation")


def format_user_frames(exc: BaseException) -> str:
    """The user's own frames of `exc` and its message, as Python prints a traceback: pytest-tom's, pytest's, pluggy's
    and `__tracebackhide__` frames are left out, since a user needs where their model code raised.
    """
    lines = ["Traceback (your code only, most recent call last):"]
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        path = Path(frame.f_code.co_filename)
        if frame.f_locals.get("__tracebackhide__") or _FRAMEWORK_PARTS & set(path.parts) or any(
                path.is_relative_to(root) for root in _FRAMEWORK):
            continue
        lines.append(f'  File "{path}", line {lineno}, in {frame.f_code.co_name}')
        source = linecache.getline(str(path), lineno).strip()
        if source:
            lines.append(f"    {source}")
    lines.extend(traceback.format_exception_only(type(exc), exc)[-1:])
    return "\n".join(line.rstrip("\n") for line in lines)


def per_prompt(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a model callable that takes one conversation (and, if it wants, the settings dict) and returns one string."""
    fn.tom_per_prompt = True  # type: ignore[attr-defined]
    return fn


def as_model(obj: Any, *, uri: str = "") -> Model:
    """Adapt whatever a user hands in (conftest fixture or URI) to a `Model`."""
    if isinstance(obj, Model):
        if uri and not obj.uri:
            obj.uri = uri
        return obj
    if (inspect.isclass(obj) and issubclass(obj, Model)) or getattr(obj, "tom_factory", False):
        return as_model(obj(), uri=uri)
    if callable(obj):
        return CallableModel(obj, uri=uri)
    raise TomConfigError(f"{uri or obj!r}: expected a pytest_tom Model or a callable, got {type(obj).__name__}")


def import_target(target: str, where: str) -> Any:
    """The object "package.module:attr.sub" names; `where` starts the `TomConfigError` when it cannot be imported."""
    module_name, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise TomConfigError(f"{where}: cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TomConfigError(f"{where}: {module_name} has no attribute {attr!r}") from None
    return obj


def make_python(spec: str) -> Model:
    """`python:package.module:callable`: the user's own model code, a batched callable, a `per_prompt` callable, a
    `Model` instance, or a zero-argument factory (class or function) that returns either.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise TomConfigError(f"--tom-model python:{spec}: expected python:package.module:callable")
    return as_model(import_target(spec, f"--tom-model python:{spec}"), uri=f"python:{spec}")
