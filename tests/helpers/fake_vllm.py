"""A stand-in for the slice of vLLM's Python API that `pytest_tom.models.vllm` uses.

vLLM needs Linux and an NVIDIA GPU, so the backend's own logic (URI options,
SamplingParams, token-id prompts, prompt_logprobs bookkeeping, data-parallel
workers) is tested against this module injected as `vllm`. It mirrors vLLM's
shapes: `SamplingParams` rejects unknown fields, `LLM.generate` returns one
`RequestOutput` per prompt in input order, `prompt_logprobs` is a list whose
first entry is None and whose other entries map token ids to `Logprob`s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

__version__ = "0.0.fake"

CONSTRUCTED: list[dict[str, Any]] = []
GENERATE_CALLS: list[int] = []
FAIL_ON_LENGTH: set[int] = set()
"""Prompt lengths whose generate call raises (to test error handling)."""

_FIELDS = {"n", "max_tokens", "temperature", "top_p", "seed", "stop", "skip_special_tokens", "prompt_logprobs", "detokenize",
           "include_stop_str_in_output"}


class SamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - _FIELDS
        if unknown:
            raise TypeError(f"Unexpected keyword argument(s) {sorted(unknown)}")
        self.n = kwargs.get("n", 1)
        self.max_tokens = kwargs.get("max_tokens", 16)
        self.temperature = kwargs.get("temperature", 1.0)
        self.top_p = kwargs.get("top_p", 1.0)
        self.seed = kwargs.get("seed")
        self.stop = kwargs.get("stop")
        self.skip_special_tokens = kwargs.get("skip_special_tokens", True)
        self.prompt_logprobs = kwargs.get("prompt_logprobs")
        self.detokenize = kwargs.get("detokenize", True)


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    finish_reason: str = "length"


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    prompt_logprobs: list[dict[int, Logprob] | None] | None = None
    finished: bool = True
    metrics: Any = field(default=None)


def fake_logprob(position: int, token: int) -> float:
    """The stand-in model's log-probability of `token` at `position` (tests recompute it)."""
    return -0.01 * ((token * 7 + position) % 13 + 1)


class LLM:
    def __init__(self, model: str, **kwargs: Any) -> None:
        if kwargs.get("max_num_seqs", 1) < 1:
            raise ValueError("max_num_seqs must be at least 1")
        self.devices = os.environ.get("CUDA_VISIBLE_DEVICES")
        CONSTRUCTED.append({"model": model, **kwargs})

    def generate(
        self, prompts: list[dict[str, Any]], sampling_params: Any = None, use_tqdm: bool = True, **kw: Any
    ) -> list[RequestOutput]:
        assert not use_tqdm, "the backend must not draw vLLM progress bars inside pytest"
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        GENERATE_CALLS.append(len(prompts))
        outs = []
        for i, (prompt, sp) in enumerate(zip(prompts, params, strict=True)):
            ids = list(prompt["prompt_token_ids"])
            if len(ids) in FAIL_ON_LENGTH:
                raise RuntimeError(f"fake engine failure on a {len(ids)}-token prompt")
            text = f"len={len(ids)} max={sp.max_tokens} t={sp.temperature} seed={sp.seed} dev={self.devices}"
            plp = None
            if sp.prompt_logprobs is not None:
                plp = [None] + [{tok: Logprob(fake_logprob(pos, tok), 1), -1: Logprob(-9.0, 2)}
                                for pos, tok in enumerate(ids) if pos > 0]
            outs.append(RequestOutput(str(i), ids, [CompletionOutput(0, text, [1] * min(3, sp.max_tokens))], plp))
        return outs
