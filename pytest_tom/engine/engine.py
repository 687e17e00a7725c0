"""The request engine: plan, dedupe, answer from cache, batch the rest; the only caller of models. Samples are programs
(generators yielding lists of requests and receiving the responses), advanced in waves: each wave dedupes every pending
request, answers what the cache holds and sends the rest to their model in batches, storing each response as it arrives
(see `ResponseCache.store`), so Ctrl-C or SIGTERM loses no answer and `kill -9` at most those of the last commit. A
follow-up that needs an earlier answer simply arrives in a later wave. `Request.model` routes a request: the model under
test answers the empty name, scoring models (embedders) theirs, each with its own fingerprint in the cache key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_tom.engine.cache import ResponseCache
from pytest_tom.framework.base import Program
from pytest_tom.models.base import Model, redact
from pytest_tom.record import Outcome, Record
from pytest_tom.request import MODEL_UNDER_TEST, Request, Response
from pytest_tom.sample import Sample


class ProgressCallback(Protocol):
    """Told how a pass of model requests goes; throttles its own drawing. Called with (0, total) first, then as each
    response arrives: `answered` counts answers, `errors` the requests that got none (never retried by the engine),
    `retries` the backend's retries so far in this pass (its `stats["retries"]`). The pass ends at answered + errors ==
    total.
    """

    def __call__(self, answered: int, total: int, /, *, errors: int = 0, retries: int = 0) -> None: ...


def _retries(model: Model) -> int:
    """The backend's retry counter (`openai:` keeps one in `stats`), 0 for a backend without one."""
    stats = getattr(model, "stats", None)
    value = stats.get("retries", 0) if isinstance(stats, Mapping) else 0
    return value if isinstance(value, int) else 0


def _secrets_of(model: Model) -> tuple[str, ...]:
    """The backend's secrets; a duck-typed model without `secrets()` has none."""
    secrets = getattr(model, "secrets", None)
    return tuple(str(s) for s in secrets()) if callable(secrets) else ()


ModelResolver = Callable[[str], Model]
"""Builds the scoring model a `Request.model` name stands for."""


@contextlib.contextmanager
def _flush_on_sigterm(cache: ResponseCache | None) -> Iterator[None]:
    """While the engine runs, SIGTERM (a CI timeout, `kill`) still ends the process, after the cache has every answer.
    (Ctrl-C runs the engine's `finally`.) Only the default disposition is replaced, from the main thread, for the engine
    run: a handler the user installed is left alone.
    """
    if (cache is None or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def flush_and_die(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        cache.flush()
        signal.raise_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, flush_and_die)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def prompt_text(request: Request) -> str:
    """A request's messages as one text (a lone message as itself, else each under its role), and the continuations
    a loglikelihood request scores: what the HTML report shows as the item's prompt.
    """
    msgs = request.messages
    text = msgs[0].content if len(msgs) == 1 else "\n\n".join(f"[{m.role}]\n{m.content}" for m in msgs)
    return text + "".join(f"\n[continuation] {c}" for c in request.choices)


def error_record(sample: Sample[Any], message: str, request_keys: Sequence[str] = ()) -> Record:
    """The record of a question that has no answer: an ERROR, never scored, with the reason."""
    return Record.of(sample, Outcome.ERROR, request_keys=tuple(request_keys), parse_rate=0.0, message=message)


@dataclass(slots=True)
class EngineStats:
    """What the engine did for the model under test; reported so users can see the cache working."""

    questions: int = 0
    requests: int = 0
    """Requests the programs asked for, duplicates included."""
    unique_requests: int = 0
    cache_hits: int = 0
    model_requests: int = 0
    errors: int = 0
    waves: int = 0
    model_seconds: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)
    scoring: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per scoring model: requests, unique_requests, cache_hits, model_requests, errors, model_seconds."""

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["model_seconds"] = round(self.model_seconds, 3)
        del d["scoring"]
        if self.scoring:
            d["scoring"] = {k: {n: (round(v, 3) if n == "model_seconds" else int(v)) for n, v in s.items()}
                            for k, s in self.scoring.items()}
        return d


class Engine:
    def __init__(self, model: Model, cache: ResponseCache | None = None, *, batch_size: int | None = None,
                 progress: ProgressCallback | None = None, scoring_models: ModelResolver | None = None,
                 absent: Collection[str] = ()) -> None:
        self.model = model
        self.cache = cache
        if batch_size:
            # Once, not per wave: a backend that backed off after out-of-memory keeps its smaller size.
            model.batch_size = batch_size
        self.progress = progress
        self.stats = EngineStats()
        self.responses: dict[str, Response] = {}
        self._prompts: dict[str, str] = {}
        """Per program key, the text of its first request to the model under test, until its record is made."""
        """Every response of the model under test, by request key (the report's replay table)."""
        self._resolve_scoring = scoring_models
        self._absent = frozenset(absent)
        """Optional scoring models not configured (no --tom-judge): their requests get a Response without text at once,
        never sent, cached or counted, so a program can fall back to its own verdict."""
        self._models: dict[str, Model] = {MODEL_UNDER_TEST: model}
        self._fingerprints: dict[str, str] = {}
        self._secrets: set[str] = set(_secrets_of(model))
        """Every secret of every model this engine asked: redacted from all answers and errors it hands on."""

    def model_for(self, name: str) -> Model:
        found = self._models.get(name)
        if found is None:
            if self._resolve_scoring is None:
                raise LookupError(f"no scoring model {name!r} is configured")
            found = self._models[name] = self._resolve_scoring(name)
            self._secrets.update(_secrets_of(found))
        return found

    def redact(self, response: Response) -> Response:
        """`response` without any secret in its text or error: what the cache, the records and the report may hold."""
        if not self._secrets:
            return response
        text = response.text if response.text is None else redact(response.text, self._secrets)
        error = response.error if response.error is None else redact(response.error, self._secrets)
        if text == response.text and error == response.error:
            return response
        return dataclasses.replace(response, text=text, error=error)

    def fingerprint(self, name: str = MODEL_UNDER_TEST) -> str:
        if name not in self._fingerprints:
            self._fingerprints[name] = self.model_for(name).fingerprint()
        return self._fingerprints[name]

    def close_scoring_models(self) -> None:
        """Release scoring models this engine built (the model under test belongs to its fixture)."""
        for name, model in list(self._models.items()):
            if name != MODEL_UNDER_TEST:
                model.close()
                del self._models[name]

    def run(self, programs: Mapping[str, tuple[Sample[Any], Program]]) -> dict[str, Record]:
        """Drive every program to completion and return records keyed like `programs`."""
        with _flush_on_sigterm(self.cache):
            return self._run(programs)

    def _run(self, programs: Mapping[str, tuple[Sample[Any], Program]]) -> dict[str, Record]:
        results: dict[str, Record] = {}
        pending: dict[str, list[Request]] = {}
        keys_seen: dict[str, list[str]] = {}
        self.stats.questions += len(programs)
        for key, (sample, program) in programs.items():
            keys_seen[key] = []
            self._advance(key, sample, program, None, pending, results, keys_seen)
        while pending:
            self.stats.waves += 1
            unique: dict[str, Request] = {}
            for reqs in pending.values():
                for r in reqs:
                    if r.model in self._absent:
                        continue
                    if r.model == MODEL_UNDER_TEST:
                        self.stats.requests += 1
                    else:
                        self._scoring_stats(r.model)["requests"] += 1
                    unique.setdefault(r.key, r)
            answers = self._answer(list(unique.values()))
            answers.update((r.key, Response()) for reqs in pending.values() for r in reqs if r.model in self._absent)
            current, pending = pending, {}
            for key, reqs in current.items():
                sample, program = programs[key]
                responses = [answers[r.key] for r in reqs]
                self._advance(key, sample, program, responses, pending, results, keys_seen)
        return results

    def _advance(self, key: str, sample: Sample[Any], program: Program, responses: Sequence[Response] | None,
                 pending: dict[str, list[Request]], results: dict[str, Record], keys_seen: dict[str, list[str]]) -> None:
        errors = [r.error for r in responses or () if r.error is not None]
        if errors:
            # An API failure is an error, never an answer: the program never sees it.
            program.close()
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            results[key] = error_record(sample, f"model error: {errors[0]}{more}", keys_seen[key]).replace(
                prompt=self._prompts.pop(key, ""))
            return
        try:
            reqs = next(program) if responses is None else program.send(list(responses))
        except StopIteration as stop:
            record: Record = stop.value
            results[key] = record.replace(request_keys=tuple(keys_seen[key]), prompt=self._prompts.pop(key, ""))
            return
        except Exception as exc:  # a scoring bug must cost one item, never the whole planning unit
            results[key] = error_record(
                sample, f"{sample.benchmark} could not score {sample.id}: {type(exc).__name__}: {exc}", keys_seen[key]
            ).replace(prompt=self._prompts.pop(key, ""))
            return
        reqs = list(reqs)
        keys_seen[key].extend(r.key for r in reqs if r.model == MODEL_UNDER_TEST)
        first = next((r for r in reqs if r.model == MODEL_UNDER_TEST and r.messages), None)
        if first is not None and key not in self._prompts:
            self._prompts[key] = prompt_text(first)
        pending[key] = reqs

    def _scoring_stats(self, name: str) -> dict[str, float]:
        return self.stats.scoring.setdefault(name, dict.fromkeys(
            ("requests", "unique_requests", "cache_hits", "model_requests", "errors", "model_seconds"), 0.0))

    def _answer(self, requests: list[Request]) -> dict[str, Response]:
        by_model: dict[str, list[Request]] = {}
        for r in requests:
            by_model.setdefault(r.model, []).append(r)
        return {k: v for name, reqs in by_model.items() for k, v in self._answer_one_model(name, reqs).items()}

    def _answer_one_model(self, name: str, requests: list[Request]) -> dict[str, Response]:
        main = name == MODEL_UNDER_TEST
        answers: dict[str, Response] = {}
        try:
            model = self.model_for(name)
            fingerprint = self.fingerprint(name)
        except Exception as exc:  # a model that cannot be built fails its requests, not the run
            message = redact(f"{name or 'the model under test'}: {type(exc).__name__}: {exc}", self._secrets)
            answers = {r.key: Response(error=message) for r in requests}
            return self._account(name, requests, answers, total=0, seconds=0.0)
        if self.cache is not None:
            # Redacted on the way out too: a cache written before a secret was named may hold it.
            answers.update((k, self.redact(v)) for k, v in self.cache.get_many(fingerprint, [r.key for r in requests]).items())
        misses = [r for r in requests if r.key not in answers]
        total = len(misses)
        seconds = 0.0
        if misses:
            done = failed = 0
            start = time.perf_counter()
            progress = self.progress if main else None
            retried = _retries(model)
            if progress:
                progress(0, total)
            try:
                for index, response in model.stream(misses):
                    req = misses[index]
                    if not isinstance(response, Response):
                        response = Response(error=f"the backend answered with a {type(response).__name__}, "
                                                  "not a pytest_tom.Response")
                    response = self.redact(response)  # before the cache, the records, the report and the terminal
                    answers[req.key] = response
                    if self.cache is not None:
                        self.cache.store(fingerprint, req.key, response)
                    if response.error is None:
                        done += 1
                    else:
                        failed += 1
                    if main:
                        for k, v in response.usage.items():
                            self.stats.usage[k] = self.stats.usage.get(k, 0) + int(v)
                    if progress:  # as each answer arrives, never a batch late
                        progress(done, total, errors=failed, retries=_retries(model) - retried)
            except Exception as exc:  # a crashing backend must not lose what it answered
                message = redact(f"{type(exc).__name__}: {exc}", self._secrets)
                for r in misses:
                    answers.setdefault(r.key, Response(error=f"backend crashed: {message}"))
            finally:
                if self.cache is not None:
                    self.cache.flush()  # on Ctrl-C too: every answer received is in the cache
                seconds = time.perf_counter() - start
            if progress and done + failed != total:  # a crashed backend: its unanswered requests are errors now
                progress(done, total, errors=total - done, retries=_retries(model) - retried)
        return self._account(name, requests, answers, total=total, seconds=seconds)

    def _account(self, name: str, requests: list[Request], answers: dict[str, Response], *, total: int,
                 seconds: float) -> dict[str, Response]:
        """Fill what the backend did not answer with errors, keep the replay table, count everything."""
        main = name == MODEL_UNDER_TEST
        errors = 0
        for r in requests:
            resp = answers.setdefault(r.key, Response(error="the backend returned no answer"))
            if resp.error is not None:
                errors += 1
            if main:
                self.responses[r.key] = resp
        counts = {"unique_requests": len(requests), "cache_hits": len(requests) - total, "model_requests": total,
                  "model_seconds": seconds, "errors": errors}
        scoring = None if main else self._scoring_stats(name)
        for field_name, n in counts.items():
            if scoring is None:
                setattr(self.stats, field_name, getattr(self.stats, field_name) + n)
            else:
                scoring[field_name] += n
        return answers
