"""The request engine: plan, dedupe, answer from cache, batch the rest.

Questions talk to the engine through programs (generators that yield lists of
requests and receive the responses). The engine advances all programs in waves:
each wave gathers every pending request of every question, dedupes identical
requests, answers what the cache holds and sends the rest to the model in
batches, storing each response as it arrives. Dependent requests (a follow-up
that needs an earlier answer) simply arrive in a later wave.

A program may yield an empty list: it then resumes in the next wave, after every
other program has advanced once. FANToM uses this to queue all free-response
answers first and embed them in one batch; keep that contract.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_tom.benchmarks.base import Program
from pytest_tom.cache import ResponseCache
from pytest_tom.models.base import Model
from pytest_tom.types import ItemResult, Outcome, Question, Request, Response

ProgressCallback = Callable[[int, int], None]
"""Called with (answered, total) model requests as a wave progresses."""

_FLUSH_EVERY_S = 0.5
_FLUSH_EVERY_N = 256


@dataclass(slots=True)
class EngineStats:
    """What the engine did; reported so users can see the cache working."""

    questions: int = 0
    requests: int = 0
    """Requests the questions asked for, duplicates included."""
    unique_requests: int = 0
    cache_hits: int = 0
    model_requests: int = 0
    errors: int = 0
    waves: int = 0
    model_seconds: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "requests": self.requests,
            "unique_requests": self.unique_requests,
            "cache_hits": self.cache_hits,
            "model_requests": self.model_requests,
            "errors": self.errors,
            "waves": self.waves,
            "model_seconds": round(self.model_seconds, 3),
            "usage": dict(self.usage),
        }


class Engine:
    def __init__(
        self,
        model: Model,
        cache: ResponseCache | None = None,
        *,
        batch_size: int | None = None,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.model = model
        self.cache = cache
        self.batch_size = batch_size
        if batch_size:
            # Once, not per wave: a backend that backed off after out-of-memory keeps its smaller size.
            model.batch_size = batch_size
        self.progress = progress
        self.stats = EngineStats()
        self.responses: dict[str, Response] = {}
        """Every response this engine saw, by request key (the report's replay table)."""
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = self.model.fingerprint()
        return self._fingerprint

    def run(self, programs: Mapping[str, tuple[Question, Program]]) -> dict[str, ItemResult]:
        """Drive every program to completion and return results keyed like `programs`."""
        results: dict[str, ItemResult] = {}
        pending: dict[str, list[Request]] = {}
        keys_seen: dict[str, list[str]] = {}
        self.stats.questions += len(programs)
        for key, (question, program) in programs.items():
            keys_seen[key] = []
            self._advance(key, question, program, None, pending, results, keys_seen)
        while pending:
            self.stats.waves += 1
            unique: dict[str, Request] = {}
            for reqs in pending.values():
                self.stats.requests += len(reqs)
                for r in reqs:
                    unique.setdefault(r.key, r)
            answers = self._answer(list(unique.values()))
            current, pending = pending, {}
            for key, reqs in current.items():
                question, program = programs[key]
                responses = [answers[r.key] for r in reqs]
                self._advance(key, question, program, responses, pending, results, keys_seen)
        return results

    def _advance(
        self,
        key: str,
        question: Question,
        program: Program,
        responses: Sequence[Response] | None,
        pending: dict[str, list[Request]],
        results: dict[str, ItemResult],
        keys_seen: dict[str, list[str]],
    ) -> None:
        errors = [r.error for r in responses or () if r.error is not None]
        if errors:
            # An API failure is an error, never an answer: the program never sees it.
            program.close()
            results[key] = ItemResult(
                benchmark=question.benchmark,
                qid=question.qid,
                outcome=Outcome.ERROR,
                facets=dict(question.facets),
                request_keys=keys_seen[key],
                parse_rate=0.0,
                message=f"model error: {errors[0]}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
            )
            return
        try:
            reqs = next(program) if responses is None else program.send(list(responses))
        except StopIteration as stop:
            result: ItemResult = stop.value
            result.request_keys = keys_seen[key]
            results[key] = result
            return
        reqs = list(reqs)
        keys_seen[key].extend(r.key for r in reqs)
        pending[key] = reqs

    def _answer(self, requests: list[Request]) -> dict[str, Response]:
        self.stats.unique_requests += len(requests)
        answers: dict[str, Response] = {}
        if self.cache is not None:
            answers.update(self.cache.get_many(self.fingerprint, [r.key for r in requests]))
        self.stats.cache_hits += len(answers)
        misses = [r for r in requests if r.key not in answers]
        total = len(misses)
        if misses:
            done = 0
            unsaved: list[tuple[str, Response]] = []
            last_flush = time.monotonic()
            start = time.perf_counter()
            if self.progress:
                self.progress(0, total)
            try:
                for index, response in self.model.stream(misses):
                    req = misses[index]
                    answers[req.key] = response
                    unsaved.append((req.key, response))
                    done += 1
                    for k, v in response.usage.items():
                        if not k.startswith("choice_tokens."):  # per-choice detail, not spend
                            self.stats.usage[k] = self.stats.usage.get(k, 0) + int(v)
                    now = time.monotonic()
                    if len(unsaved) >= _FLUSH_EVERY_N or now - last_flush >= _FLUSH_EVERY_S:
                        self._flush(unsaved)
                        unsaved = []
                        last_flush = now
                        if self.progress:
                            self.progress(done, total)
            except Exception as exc:  # a crashing backend must not lose what it answered
                message = f"{type(exc).__name__}: {exc}"
                for r in misses:
                    answers.setdefault(r.key, Response(error=f"backend crashed: {message}"))
            finally:
                self._flush(unsaved)
                self.stats.model_seconds += time.perf_counter() - start
            if self.progress:
                self.progress(total, total)
            self.stats.model_requests += total
        for r in requests:
            resp = answers.setdefault(r.key, Response(error="the backend returned no answer"))
            if resp.error is not None:
                self.stats.errors += 1
            self.responses[r.key] = resp
        return answers

    def _flush(self, unsaved: list[tuple[str, Response]]) -> None:
        if self.cache is not None and unsaved:
            self.cache.put_many(self.fingerprint, unsaved)
