"""`mock[:strategy]`: a scripted model for your own tests, deterministic and instant. It answers from a table (request
key or prompt substring -> answer), else by a strategy (`first`/`last` well-formed answer the request allows, `echo`,
`fixed=TEXT`), and keeps every request in `calls`. A request it has no answer for is an error, never a guess.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pytest_tom.errors import TomConfigError
from pytest_tom.models.base import Model
from pytest_tom.request import Request, Response

STRATEGIES = ("first", "last", "echo", "fixed", "none")


class MockModel(Model):
    """A scripted model; see the module docstring for how it answers."""

    batch_size = 1024

    def __init__(self, answers: Mapping[str, str] | Callable[[Request], str | None] | None = None, *,
                 strategy: str = "first", fixed: str = "", name: str = "mock") -> None:
        if strategy not in STRATEGIES:
            raise TomConfigError(f"mock strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
        self.answers = answers
        self.strategy = strategy
        self.fixed = fixed
        self.uri = name if name.startswith("mock") else f"mock:{name}"
        self.calls: list[Request] = []  # Every request answered, in order.

    def fingerprint(self) -> str:
        if callable(self.answers):
            source = getattr(self.answers, "tom_fingerprint", None) or _code_identity(self.answers)
        else:
            source = "" if self.answers is None else json.dumps(dict(self.answers), sort_keys=True)
        return f"mock:v1:{self.strategy}:{self.fixed}:{source}"

    def _scripted(self, request: Request) -> str | None:
        if self.answers is None:
            return None
        if callable(self.answers):
            return self.answers(request)
        if request.key in self.answers:
            return self.answers[request.key]
        prompt = request.prompt_text()
        return next((answer for needle, answer in self.answers.items() if needle and needle in prompt), None)

    def _by_strategy(self, request: Request) -> str | None:
        if self.strategy == "echo":
            return request.messages[-1].content if request.messages else request.text
        if self.strategy == "fixed":
            return self.fixed
        if self.strategy in ("first", "last") and request.answer_labels:
            label = request.answer_labels[0 if self.strategy == "first" else -1]
            return request.answer_format.format(label)
        return None

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [self._answer(r) for r in requests]

    def _answer(self, r: Request) -> Response:
        self.calls.append(r)
        text = self._scripted(r)
        missing = Response(error=f"mock has no answer for request {r.key[:12]} ({self.strategy} strategy)")
        if r.kind == "loglikelihood":
            if not r.choices:
                return Response(error="mock: a loglikelihood request needs choices")
            if text in r.choices:
                pick = r.choices.index(text)
            elif self.strategy in ("first", "last"):
                pick = len(r.choices) - 1 if self.strategy == "last" else 0
            else:
                return missing
            logprobs = tuple(0.0 if i == pick else -1.0 for i in range(len(r.choices)))
            return Response(text=r.choices[pick], logprobs=logprobs)
        if r.kind != "generate":
            return Response(error=f"mock answers generate and loglikelihood requests, not {r.kind!r}")
        text = text if text is not None else self._by_strategy(r)
        return missing if text is None else Response(text=text)


def _code_identity(fn: Callable[..., object]) -> str:
    """A hash of a script's compiled code (constants included): two different lambdas differ, reruns agree."""
    code = getattr(fn, "__code__", None) or getattr(type(fn).__call__, "__code__", None)
    if code is None:
        return f"{type(fn).__module__}.{type(fn).__qualname__}"
    return hashlib.sha256(marshal.dumps(code)).hexdigest()


def make(spec: str) -> MockModel:
    """`mock`, `mock:first`, `mock:last`, `mock:echo`, `mock:fixed=TEXT`, or `mock:answers=PATH.json`."""
    name, _, value = spec.partition("=")
    if name in ("", "first", "last", "echo", "none"):
        if value:
            raise TomConfigError(f"--tom-model mock:{spec}: {name or 'first'} takes no value")
        return MockModel(strategy=name or "first", name=f"mock:{spec}" if spec else "mock")
    if name == "fixed":
        return MockModel(strategy="fixed", fixed=value, name=f"mock:{spec}")
    if name == "answers":
        try:
            table = json.loads(Path(value).expanduser().read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise TomConfigError(f"--tom-model mock:{spec}: cannot read the answers file: {exc}") from None
        if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
            raise TomConfigError(f"--tom-model mock:{spec}: expected a JSON object of prompt substring -> answer")
        return MockModel(table, strategy="none", name=f"mock:{spec}")
    raise TomConfigError(f"--tom-model mock:{spec}: expected first, last, echo, fixed=TEXT or answers=PATH.json")
