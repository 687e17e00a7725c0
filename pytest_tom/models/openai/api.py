"""What an OpenAI-compatible API's answers mean: retry timing, whether a 200 holds an answer (pure, no SDK import).
`BadAnswer` (not a completion) is retried, counted as malformed; `Permanent`, `Withheld`, `Empty` are not retried.
"""

from __future__ import annotations

import contextlib
import email.utils
import time
from collections.abc import Mapping, Sequence
from typing import Any


class BadAnswer(Exception):
    """A 200 response that holds no usable answer (no choices, no text, no logprobs)."""


class Permanent(Exception):
    """A request that can never succeed against this server; not retried."""


class Withheld(Permanent):
    """The provider's content filter withheld the answer (finish_reason="content_filter")."""


class Empty(Permanent):
    """A completion with no visible text; the model (or its token budget) ended it."""


EXPECTED = {"chat": "choices[0].message.content", "completions": "choices[0].text"}


def snippet(text: str, limit: int = 160) -> str:
    """The start of an unexpected body on one line, enough to recognise a login page or an error page."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


def answer_text(parsed: Any, *, endpoint: str, content_type: str, max_tokens: int, source: str) -> str:
    """The text of the first choice of a 200 response from `source`; raises `BadAnswer` (retried) when the body is no
    completion, `Withheld` or `Empty` (not retried) when it is one without visible text.
    """
    want = f"expected JSON with {EXPECTED[endpoint]}"
    got = content_type.split(";")[0].strip() or "no Content-Type"
    if isinstance(parsed, (str, bytes)):  # the client hands back the body of a non-JSON response as text
        body = parsed.decode(errors="replace") if isinstance(parsed, bytes) else parsed
        raise BadAnswer(f"{want}, got {got}: {snippet(body)}")
    choices = getattr(parsed, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise BadAnswer(f"{want}, got {got} without choices")
    choice = choices[0]
    reason = getattr(choice, "finish_reason", None)
    if endpoint == "chat":
        message = getattr(choice, "message", None)
        if message is None:
            raise BadAnswer(f"{want}, got a choice without message (finish_reason={reason!r})")
        text = getattr(message, "content", None)
        refusal = getattr(message, "refusal", None)
        if text is None and isinstance(refusal, str) and refusal.strip():
            text = refusal  # the model's own refusal (structured outputs): its answer, scored like any other
    else:
        text = getattr(choice, "text", None)
    if text is not None and not isinstance(text, str):
        raise BadAnswer(f"{want}, got {type(text).__name__} content (finish_reason={reason!r})")
    if reason == "content_filter":
        kept = f"after {len(text)} characters" if text else "no text"
        raise Withheld(f"content filter: {source} withheld the answer (finish_reason='content_filter', {kept}); "
                       "the prompt was refused, not answered: an error, not retried, not cached")
    if not text or not text.strip():
        why = {"length": f"the token budget (max_tokens={max_tokens}) ran out before any visible text; "
                         "a reasoning model may need a larger one",
               "stop": "the model ended its answer at once"}.get(str(reason), "no text came back")
        raise Empty(f"empty completion from {source} (finish_reason={reason!r}): {why}; "
                    "an error, not retried (it would repeat), not cached")
    return text


def retry_after_seconds(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a server asked for: `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date."""
    ms = headers.get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return max(0.0, float(ms) / 1000.0)
    value = headers.get("retry-after")
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_delay(attempt: int, *, first: float, cap: float, jitter: float) -> float:
    """Capped exponential wait after failed attempt `attempt` (0-based), scaled 50-100% by `jitter` (clients spread)."""
    return min(cap, first * float(2**attempt)) * (0.5 + jitter / 2)


def echoed_logprobs(choices: Sequence[Any], prompts: Sequence[str], ctx: str, labels: Sequence[str], *,
                    source: str) -> tuple[list[float], list[int], int]:
    """(log-probability sums, token counts) per choice, and the context's tokens, from echoed prompt logprobs of
    `prompts` (`ctx` + each label); a token belongs to a choice when its character span reaches past `ctx`.
    """
    by_index = {int(c.index): c for c in choices}
    if len(by_index) != len(prompts):
        raise BadAnswer(f"{len(by_index)} scored prompts for {len(prompts)} choices")
    sums: list[float] = []
    counts: list[int] = []
    prompt_tokens = 0
    for i, full in enumerate(prompts):
        lp = by_index[i].logprobs
        if lp is None or not lp.token_logprobs or not lp.text_offset:
            raise Permanent(f"{source} returned no prompt logprobs; it cannot score log-likelihood requests")
        offsets = list(lp.text_offset)
        total, n = 0.0, 0
        for j, value in enumerate(lp.token_logprobs):
            start = offsets[j]
            end = offsets[j + 1] if j + 1 < len(offsets) else start + len(lp.tokens[j] or "")
            if start >= len(full):
                break  # the generated token after the echoed prompt
            if end > len(ctx):
                if value is None:
                    raise BadAnswer(f"no log-probability for choice {i}'s token at offset {start}")
                total += float(value)
                n += 1
            elif i == 0:
                prompt_tokens += 1
        if n == 0:
            raise Permanent(f"choice {i} ({labels[i]!r}) covers no token")
        sums.append(total)
        counts.append(n)
    return sums, counts, prompt_tokens
