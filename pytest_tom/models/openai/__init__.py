"""`openai:MODEL?options`: any OpenAI-compatible API (OpenAI, vLLM, TGI, SGLang, llama.cpp, Ollama, transformers serve).
Requests run on an asyncio loop in a helper thread, each answer cached as it arrives; concurrency adapts to the server
(`pressure.py`), requests sharing a prompt prefix are sent together and answer-contract stops reach servers that can give
them back (`sending.py`). Retries are ours, not the client's: what is retried, the wait and the counters depend on classifying
each failure (`api.py`). The API key comes from the environment, never the URI, and is scrubbed from every error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import random
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.models._chat import GENERATION_PROMPT, ChatFormatter, choose_template, fold_system, jinja_renderer
from pytest_tom.models._common import Option, Spec, cut_at_stops, loglikelihood_response, parse_spec
from pytest_tom.models.base import StreamingModel, redact
from pytest_tom.models.openai.api import (
    BadAnswer,
    Empty,
    Permanent,
    Withheld,
    answer_text,
    backoff_delay,
    echoed_logprobs,
    retry_after_seconds,
    snippet,
)
from pytest_tom.models.openai.pressure import OVERLOAD_STATUS, Pressure, Slots
from pytest_tom.models.openai.sending import SEND_STOPS, prefix_order, restore_stop, stop_params
from pytest_tom.request import Request, Response

BACKEND_VERSION = 1
DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
MAX_TIMEOUT_FACTOR = 4  # a timed-out request is retried with its timeout doubled, up to this times `timeout=`
CONNECT_TIMEOUT = 10.0  # seconds to connect: a server that is down fails fast, however long answers take

OPTIONS: tuple[Option, ...] = (
    Option("base_url", default=None, help="server root, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL or OpenAI)"),
    Option("endpoint", default="chat", help="chat (/chat/completions) or completions (/completions)",
           choices=("chat", "completions")),
    Option("concurrency", kind="int", default=32,
           help="most requests in flight at once, the ceiling adaptive concurrency grows to (the model's batch_size; "
                "--tom-batch-size overrides it)"),
    Option("concurrency_start", kind="int", default=4,
           help="requests in flight at first; halved on timeouts and 429/503, grown while answers come fast"),
    Option("timeout", kind="float", default=600.0,
           help=f"seconds for an answer to a first attempt; doubled on a retry after a timeout (at most x{MAX_TIMEOUT_FACTOR})"),
    Option("max_retries", kind="int", default=6, help="retries after the first attempt"),
    Option("backoff", kind="float", default=1.0, help="first back-off in seconds; doubles per retry (with jitter)"),
    Option("max_backoff", kind="float", default=60.0, help="cap of the exponential back-off"),
    Option("max_retry_after", kind="float", default=300.0, help="cap on the wait a Retry-After header may ask for"),
    Option("api_key_env", default=None, help="environment variable holding the key (default OPENAI_API_KEY)"),
    Option("secret_env", default=None,
           help="more environment variables whose values are secrets (comma-separated): redacted from every answer, "
                "error and artifact, like the key"),
    Option("system", default="keep", help="keep: send system messages; fold: merge them into the first user turn",
           choices=("keep", "fold", "auto")),
    Option("chat_template", default="none",
           help="completions endpoint: a Jinja file that renders the chat into the prompt (none: plain concatenation)"),
    Option("bos_token", default="", help="bos_token seen by a chat_template file"),
    Option("eos_token", default="", help="eos_token seen by a chat_template file"),
    GENERATION_PROMPT,
    Option("send_stops", default="no", choices=SEND_STOPS,
           help="answer-contract stops (e.g. [[A]]) sent so the server stops there: no (cut here after the full budget), "
                "vllm (include_stop_str_in_output), llamacpp (llama-server reports the stop it erased)"),
    Option("max_tokens_param", default="max_tokens", help="max_tokens, or max_completion_tokens for newer OpenAI models",
           choices=("max_tokens", "max_completion_tokens")),
)
FORBIDDEN = {"api_key": "never put an API key in the URI (the URI is written to the report and logs); "
                        "export it and name the variable with api_key_env=NAME"}


class OpenAIModel(StreamingModel):
    def __init__(self, spec: Spec, *, uri: str) -> None:
        try:
            import openai
        except ImportError as exc:
            raise TomDependencyError(
                f"--tom-model {uri} needs the openai client ({exc}): pip install 'pytest-tom[openai]'") from exc
        self._openai = openai
        self.uri = uri
        self.model_name = spec.target
        if not self.model_name:
            raise TomConfigError("--tom-model openai:MODEL needs a model name, e.g. openai:gpt-4o-mini")
        self.options = o = dict(spec.options)
        self.endpoint: str = o["endpoint"]
        if int(o["concurrency"]) < 1 or int(o["concurrency_start"]) < 1:
            raise TomConfigError(f"--tom-model {uri}: concurrency and concurrency_start must be at least 1")
        if o["max_retries"] < 0 or o["timeout"] <= 0:
            raise TomConfigError(f"--tom-model {uri}: max_retries must be >= 0 and timeout > 0")
        self.batch_size = int(o["concurrency"])
        self.base_url = str(o["base_url"] or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = key_var = o["api_key_env"] or "OPENAI_API_KEY"
        key = os.environ.get(key_var)
        if not key:
            if o["api_key_env"] or self.base_url == DEFAULT_BASE_URL:
                raise TomConfigError(f"--tom-model {uri}: the API key variable ${key_var} is not set")
            key = "EMPTY"  # local servers (vLLM, llama.cpp...) accept any key
        self._key = key
        self.secret_env = tuple(v.strip() for v in str(o["secret_env"] or "").split(",") if v.strip())
        if unset := [v for v in self.secret_env if not os.environ.get(v)]:
            raise TomConfigError(f"--tom-model {uri}: secret_env= names {', '.join('$' + v for v in unset)}, which "
                                 "is not set: a secret that is not set cannot be redacted")
        self._secrets = tuple(os.environ[v] for v in self.secret_env)
        self.formatter: ChatFormatter | None = None
        if self.endpoint == "completions":
            template, source = choose_template(o["chat_template"], None)
            renderer = jinja_renderer(template, {"bos_token": o["bos_token"], "eos_token": o["eos_token"]}) if template else None
            system = "auto" if o["system"] == "keep" else o["system"]
            self.formatter = ChatFormatter(template=template, source=source, renderer=renderer, system=system,
                                           generation_prompt=o["generation_prompt"])
        elif o["chat_template"] not in (None, "none"):
            raise TomConfigError(
                f"--tom-model {uri}: chat_template= applies to endpoint=completions; the chat endpoint uses the server's")
        if not o["generation_prompt"] and self.formatter is None:
            raise TomConfigError(f"--tom-model {uri}: generation_prompt=false applies to endpoint=completions with a "
                                 "chat_template= file; the chat endpoint renders with the server's template")
        self.stats = dict.fromkeys(("requests", "attempts", "retries", "errors", "http_429", "http_5xx", "timeouts",
                                    "connection_errors", "malformed", "content_filter", "empty", "slowdowns"), 0)
        self.pressure: Pressure | None = None  # the in-flight limit of the last `stream` (reported)
        self.usage: dict[str, int] = {}
        self.system_fingerprints: set[str] = set()
        self.waits: list[float] = []  # Every back-off this model waited, in seconds, in the order asked.
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # how a back-off waits (tests replace it)
        self.random: Callable[[], float] = random.random  # The jitter source, uniform in [0, 1).
        self.now: Callable[[], float] = time.time  # The wall clock, for a Retry-After given as an HTTP date.
        self._lock = threading.Lock()

    def fingerprint(self) -> str:
        # Server + model + endpoint + client-side formatting; never the key.
        fmt = ("tmpl-" + self.formatter.hash()[:16] if self.formatter is not None
               else "fold" if self.options["system"] == "fold" else "native")
        return f"openai:v{BACKEND_VERSION}:{self.endpoint}:{self.base_url}:{self.model_name}:{fmt}"

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            **super().describe(),
            "backend": "openai", "model": self.model_name, "base_url": self.base_url, "endpoint": self.endpoint,
            "batch_size": self.batch_size, "concurrency": self.batch_size,  # the ceiling of the adaptive limit
            "concurrency_start": self.options["concurrency_start"],
            "concurrency_reached": self.pressure.limit if self.pressure is not None else None,
            "timeout": self.options["timeout"], "max_retries": self.options["max_retries"],
            "api_key_env": self.api_key_env, "secret_env": list(self.secret_env), "stats": dict(self.stats),
            "usage": dict(self.usage), "system_fingerprints": sorted(self.system_fingerprints),
            "client_version": getattr(self._openai, "__version__", "?"),
        }
        if self.formatter is not None:
            info["chat_template"] = self.formatter.describe()
        return info

    def secrets(self) -> tuple[str, ...]:
        """The key (unless the placeholder sent to a local server) and the values of the `secret_env=` variables."""
        key = () if self._key == "EMPTY" else (self._key,)
        return (*key, *self._secrets)

    def scrub(self, text: str) -> str:
        """Remove every secret from anything we report; servers and proxies sometimes echo the key."""
        return redact(text, self.secrets())

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        """Yield answers in completion order from an event loop running in a helper thread."""
        if not requests:
            return
        inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        loop = asyncio.new_event_loop()
        main = loop.create_task(self._run_all(list(requests), inbox))

        def runner() -> None:
            try:
                loop.run_until_complete(main)
            except BaseException as exc:  # noqa: BLE001 - reported to the consuming thread
                inbox.put(("crash", exc))
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()
                inbox.put(("done", None))

        thread = threading.Thread(target=runner, name="pytest-tom-openai", daemon=True)
        thread.start()
        try:
            while True:
                kind, payload = inbox.get()
                if kind == "item":
                    yield payload
                elif kind == "crash":
                    if isinstance(payload, asyncio.CancelledError):
                        continue
                    raise RuntimeError(self.scrub(f"openai backend failed: {type(payload).__name__}: {payload}"))
                else:
                    break
        finally:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(main.cancel)
            thread.join(timeout=30)

    async def _run_all(self, requests: list[Request], inbox: queue.Queue[tuple[str, Any]]) -> None:
        client = self._openai.AsyncOpenAI(api_key=self._key, base_url=self.base_url, max_retries=0,
                                          timeout=self._http_timeout(float(self.options["timeout"])))
        ceiling = max(1, self.batch_size)
        self.pressure = Pressure(start=min(int(self.options["concurrency_start"]), ceiling), ceiling=ceiling)
        slots = Slots(self.pressure)

        async def one(index: int, request: Request) -> None:
            response = await self._answer(client, request, slots)
            inbox.put(("item", (index, response)))

        tasks = [asyncio.ensure_future(one(i, requests[i])) for i in prefix_order(requests)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()

    def _bump(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] = self.stats.get(key, 0) + n

    def _http_timeout(self, seconds: float) -> Any:
        return self._openai.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT))

    async def _attempt(self, client: Any, request: Request, slots: Slots, timeout: float, *, retry: bool) -> Response:
        """One attempt in a slot of its own; its outcome tells the pressure controller how the server copes."""
        ticket = await slots.acquire(first=retry)
        start = time.monotonic()
        try:
            response = await self._call(client, request, timeout)
        except Exception as exc:
            oa = self._openai
            if isinstance(exc, oa.APITimeoutError) or (
                    isinstance(exc, oa.APIStatusError) and int(exc.status_code) in OVERLOAD_STATUS):
                if slots.pressure.overloaded(ticket):
                    self._bump("slowdowns")
            raise
        else:
            before = slots.pressure.decreases
            end = time.monotonic()
            slots.pressure.answered(ticket, end - start, timeout, now=end,
                                    work=1 + response.usage.get("completion_tokens", 0))
            if slots.pressure.decreases != before:
                self._bump("slowdowns")  # an answer near its timeout
            return response
        finally:
            slots.release()

    async def _answer(self, client: Any, request: Request, slots: Slots) -> Response:
        self._bump("requests")
        retries = int(self.options["max_retries"])
        message = "no attempt made"
        timeout = first_timeout = float(self.options["timeout"])
        for attempt in range(retries + 1):
            self._bump("attempts")
            try:
                response = await self._attempt(client, request, slots, timeout, retry=attempt > 0)
            except Permanent as exc:
                if isinstance(exc, Withheld):
                    self._bump("content_filter")
                elif isinstance(exc, Empty):
                    self._bump("empty")
                message = str(exc)
                break
            except Exception as exc:
                retryable, wait, message = self._classify(exc, timeout)
                if isinstance(exc, self._openai.APITimeoutError):
                    timeout = min(2 * timeout, MAX_TIMEOUT_FACTOR * first_timeout)
                if not retryable or attempt == retries:
                    if retryable:
                        message += f" (gave up after {attempt + 1} attempts)"
                    break
                if wait is None:
                    wait = backoff_delay(attempt, first=float(self.options["backoff"]), cap=float(self.options["max_backoff"]),
                                         jitter=self.random())
                else:
                    wait = min(wait, float(self.options["max_retry_after"]))
                self._bump("retries")
                with self._lock:
                    self.waits.append(wait)
                await self.sleep(wait)
                continue
            with self._lock:
                for k, v in response.usage.items():
                    self.usage[k] = self.usage.get(k, 0) + int(v)
            return response
        self._bump("errors")
        return Response(error=self.scrub(message))

    def _classify(self, exc: Exception, timeout: float) -> tuple[bool, float | None, str]:
        """(retry?, server-requested wait, message) for one failed attempt."""
        oa = self._openai
        if isinstance(exc, oa.APIStatusError):
            code = int(exc.status_code)
            if code == 429:
                self._bump("http_429")
            elif code >= 500:
                self._bump("http_5xx")
            headers = {k.lower(): v for k, v in exc.response.headers.items()}
            wait = retry_after_seconds(headers, now=self.now())
            detail = getattr(exc, "message", "") or str(exc)
            return code in RETRYABLE_STATUS or code >= 500, wait, f"HTTP {code} from {self.base_url}: {detail}"
        if isinstance(exc, oa.APITimeoutError):
            self._bump("timeouts")
            return True, None, f"timed out after {timeout:g}s waiting for {self.base_url}"
        if isinstance(exc, oa.APIConnectionError):
            self._bump("connection_errors")
            cause = exc.__cause__ or exc
            return True, None, f"connection to {self.base_url} failed: {type(cause).__name__}: {cause}"
        if isinstance(exc, (json.JSONDecodeError, BadAnswer, oa.APIResponseValidationError)):
            self._bump("malformed")
            return True, None, f"malformed response from {self.base_url}: {exc}"
        return False, None, f"{type(exc).__name__}: {exc}"

    def prompt(self, request: Request) -> str:
        assert self.formatter is not None
        return self.formatter.render(request.messages)

    def sampling_kwargs(self, request: Request) -> dict[str, Any]:
        """Decoding settings as API parameters: seed and temperature always passed through."""
        s = request.settings
        param = self.options["max_tokens_param"] if self.endpoint == "chat" else "max_tokens"
        kw: dict[str, Any] = {"model": self.model_name, "temperature": s.temperature, "top_p": s.top_p,
                              param: s.max_new_tokens}
        if s.seed is not None:
            kw["seed"] = s.seed
        stop, extra = stop_params(request, self.options["send_stops"])
        if stop:
            kw["stop"] = stop
        if extra:
            kw["extra_body"] = extra
        return kw

    async def _call(self, client: Any, request: Request, timeout: float) -> Response:
        if request.kind == "loglikelihood":
            return await self._loglikelihood(client, request, timeout)
        if request.kind != "generate":
            raise Permanent(f"unknown request kind {request.kind!r}")
        kw = {**self.sampling_kwargs(request), "timeout": self._http_timeout(timeout)}
        if self.endpoint == "chat":
            fold = self.options["system"] == "fold"
            messages = fold_system(request.messages) if fold else [m.to_dict() for m in request.messages]
            raw = await client.chat.completions.with_raw_response.create(messages=messages, **kw)
        else:
            raw = await client.completions.with_raw_response.create(prompt=self.prompt(request), **kw)
        resp = raw.parse()
        if not isinstance(resp, (str, bytes)):
            resp = _restored(resp, self.endpoint, request, self.options["send_stops"])
        text = answer_text(resp, endpoint=self.endpoint, content_type=raw.headers.get("content-type", ""),
                           max_tokens=request.settings.max_new_tokens, source=self.base_url)
        if request.settings.stop_after and text is not None:
            # The answer as the other backends return it: unless sent (send_stops=), answer-contract stops are
            # found here, after the full budget; vLLM's include_stop_str_in_output keeps plain stops too.
            sent = self.options["send_stops"] == "vllm"
            text = cut_at_stops(text, request.settings.stop if sent else (), request.settings.stop_after)
        fp = getattr(resp, "system_fingerprint", None)
        if fp:
            with self._lock:
                self.system_fingerprints.add(str(fp))
        return Response(text=text, usage=_usage(resp))

    async def _loglikelihood(self, client: Any, request: Request, timeout: float) -> Response:
        """Score choices by echoed prompt logprobs, one call a request (endpoint=completions: vLLM, llama.cpp, TGI)."""
        if self.endpoint != "completions":
            raise Permanent(
                "loglikelihood requests need endpoint=completions on a server that echoes prompt logprobs (vLLM, llama.cpp...)")
        if not request.choices:
            raise Permanent("a loglikelihood request needs at least one choice")
        ctx = self.prompt(request)
        prompts = [ctx + c for c in request.choices]
        raw = await client.completions.with_raw_response.create(
            model=self.model_name, prompt=prompts, max_tokens=1, temperature=0.0, echo=True, logprobs=1,
            timeout=self._http_timeout(timeout),
        )
        resp = raw.parse()
        if isinstance(resp, (str, bytes)) or not isinstance(getattr(resp, "choices", None), list):
            got = raw.headers.get("content-type", "").split(";")[0] or "no Content-Type"
            raise BadAnswer(f"expected JSON with choices[i].logprobs, got {got}"
                             + (f": {snippet(str(resp))}" if isinstance(resp, str) else ""))
        sums, counts, prompt_tokens = echoed_logprobs(resp.choices, prompts, ctx, request.choices, source=self.base_url)
        spend = {k: v for k, v in _usage(resp).items() if k != "prompt_tokens"}
        return loglikelihood_response(request.choices, sums, counts, prompt_tokens=prompt_tokens, usage=spend)


def _restored(resp: Any, endpoint: str, request: Request, mode: str) -> Any:
    """`resp` with the stop string a llama.cpp server erased put back into its first choice's text (`sending.py`)."""
    choices = getattr(resp, "choices", None)
    if mode != "llamacpp" or not request.settings.stop_after or not isinstance(choices, list) or not choices:
        return resp
    holder = getattr(choices[0], "message", None) if endpoint == "chat" else choices[0]
    if holder is None:
        return resp
    field = "content" if endpoint == "chat" else "text"
    text = restore_stop(getattr(holder, field, None), getattr(resp, "model_extra", None), request, mode)
    setattr(holder, field, text)
    return resp


def _usage(resp: Any) -> dict[str, int]:
    u = getattr(resp, "usage", None)
    names = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {name: value for name in names if isinstance(value := getattr(u, name, None), int)}


def make(spec: str) -> OpenAIModel:
    return OpenAIModel(parse_spec("openai", spec, OPTIONS, forbidden=FORBIDDEN), uri=f"openai:{spec}")
