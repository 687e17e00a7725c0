"""How requests go on the wire to a serving engine, for its throughput (pure, no SDK import).

* Order: engines with a prefix cache (vLLM's automatic prefix caching, SGLang's radix cache, llama.cpp's `cache_prompt`)
  reuse the computed prompt of a request still in a slot, so prompts that share a prefix (one story, many questions; one
  question, several tries) are sent one after another rather than in the planner's order.
* Answer-contract stops (`GenerationSettings.stop_after`, e.g. ToMBench's `[[A]]`): the OpenAI API cuts a stop string
  from the answer, which would lose the answer itself, so by default they are not sent and the answer is cut here after
  the full token budget. Servers that can give the stop string back are sent them and stop at once (`send_stops=`):
  vLLM keeps it in the text with `include_stop_str_in_output`; llama.cpp's llama-server erases it from the text but
  reports it (`stopping_word`) in its per-request `__verbose` block, which `response_fields` trims to that field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.models.openai.api import Permanent
from pytest_tom.request import Request

SEND_STOPS = ("no", "vllm", "llamacpp")
LLAMACPP_FIELDS = ["stop_type", "stopping_word"]


def prefix_order(requests: Sequence[Request]) -> list[int]:
    """Indices of `requests` in sending order: sorted by their messages, so prompts sharing a prefix are adjacent
    (a sort of strings puts every common prefix in one run); stable, so equal prompts keep the planner's order.
    """
    return sorted(range(len(requests)), key=lambda i: [(m.role, m.content) for m in requests[i].messages])


def stop_params(request: Request, mode: str) -> tuple[list[str], dict[str, Any]]:
    """The `stop` list and the extra body fields for `request` under `send_stops=mode`."""
    s = request.settings
    if mode == "no" or not s.stop_after:
        return list(s.stop), {}
    extra: dict[str, Any] = ({"include_stop_str_in_output": True} if mode == "vllm"
                             else {"verbose": True, "response_fields": LLAMACPP_FIELDS})
    return [*s.stop, *s.stop_after], extra


def restore_stop(text: str | None, extra: Mapping[str, Any] | None, request: Request, mode: str) -> str | None:
    """The answer with the answer-contract stop that ended it put back, for a server (llama.cpp) that erased it."""
    if mode != "llamacpp" or not request.settings.stop_after:
        return text
    verbose = (extra or {}).get("__verbose")
    if not isinstance(verbose, Mapping) or "stop_type" not in verbose:
        raise Permanent("send_stops=llamacpp: the answer has no __verbose.stop_type, so the stop string the server "
                        "erased is unknown (is this llama.cpp's llama-server? else use send_stops=no)")
    word = verbose.get("stopping_word")
    if verbose["stop_type"] == "word" and isinstance(word, str) and word in request.settings.stop_after:
        return (text or "") + word
    return text
