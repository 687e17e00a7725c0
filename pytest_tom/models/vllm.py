"""`vllm:PATH_OR_ID?options`: an in-process vLLM engine (`vllm.LLM`), with tensor and data parallelism. Prompts are
tokenised by the `TokenizedChat` of `hf:` and sent as ids, so both see byte-identical prompts; `data_parallel_size=M`
spawns M engines on their own GPU slices. Tested with a stand-in `vllm` module only.
"""

from __future__ import annotations

import multiprocessing
import os
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError, TomDependencyError, TomModelError
from pytest_tom.models._chat import TOKENIZED_OPTIONS, TokenizedChat, fingerprint_parts, hub_fingerprint, local_fingerprint
from pytest_tom.models._common import ChoiceScores, Option, Spec, combine, cut_at_stops, parse_spec, require_existing
from pytest_tom.models._prefix import sharing_order
from pytest_tom.models.base import StreamingModel
from pytest_tom.request import GenerationSettings, Request, Response

BACKEND_VERSION = 1

OPTIONS: tuple[Option, ...] = (
    Option("dtype", default="auto", help="auto, float16, bfloat16, float32"),
    Option("tensor_parallel_size", kind="int", default=1, help="GPUs per engine (vLLM tensor parallelism)"),
    Option("data_parallel_size", kind="int", default=1, help="engine processes, each on its own tensor_parallel_size GPUs"),
    Option("gpu_memory_utilization", kind="float", default=None, help="share of each GPU's memory vLLM may use"),
    Option("max_model_len", kind="int", default=None, help="context length to allocate (default: the model's)"),
    Option("max_num_seqs", kind="int", default=None, help="vLLM's concurrent sequence limit"),
    Option("quantization", default=None, help="awq, gptq, fp8... (vLLM's names)"),
    Option("enforce_eager", kind="bool", default=None, help="disable CUDA graphs (slower, less memory)"),
    Option("seed", kind="int", default=0, help="engine seed"),
    Option("tokenizer", default=None, help="tokenizer folder or id when it differs from the model's (e.g. for a .gguf)"),
    Option("prefix_caching", kind="bool", default=True,
           help="vLLM's automatic prefix caching, with requests ordered so shared prefixes run together"),
    Option("batch_size", kind="int", default=256, help="prompts per llm.generate call (the resume granularity)"),
    *TOKENIZED_OPTIONS,
)


def visible_gpus() -> list[str]:
    """The GPU ids this process may use, respecting CUDA_VISIBLE_DEVICES."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except Exception:
        return []


def sampling_kwargs(settings: GenerationSettings) -> dict[str, Any]:
    """`SamplingParams` keyword arguments for a generate request (a per-request seed: independent of batch-mates)."""
    top_p = float(settings.top_p) if settings.temperature > 0 else 1.0
    kw: dict[str, Any] = {"n": 1, "max_tokens": settings.max_new_tokens, "temperature": float(settings.temperature),
                          "top_p": top_p, "skip_special_tokens": True}
    if settings.stop or settings.stop_after:
        kw["stop"] = [*settings.stop, *settings.stop_after]
    if settings.stop_after:
        # Answer-contract stops stay in the answer; `run_items` then cuts the excluded ones itself.
        kw["include_stop_str_in_output"] = True
    if settings.seed is not None:
        kw["seed"] = int(settings.seed)
    return kw


# prompt_logprobs=1: vLLM always includes the actual prompt token besides the top-1.
LOGLIK_KWARGS: dict[str, Any] = {"n": 1, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 1, "detokenize": False}


def run_items(llm: Any, vllm: Any, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Answer work items with one `llm.generate` call; shared by the in-process and worker engines."""
    prompts = [{"prompt_token_ids": list(it["ids"])} for it in items]
    params = [vllm.SamplingParams(**it["params"]) for it in items]
    outputs = llm.generate(prompts, sampling_params=params, use_tqdm=False)
    results: list[dict[str, Any]] = []
    for it, out in zip(items, outputs, strict=False):  # a count mismatch is reported below
        if it["kind"] == "generate":
            comp = out.outputs[0]
            text = cut_at_stops(comp.text, *it["cut"]) if it.get("cut") else comp.text
            results.append({"text": text, "usage": {"prompt_tokens": len(it["ids"]), "completion_tokens": len(comp.token_ids)}})
            continue
        ids, n_ctx = it["ids"], it["n_ctx"]
        plp = out.prompt_logprobs
        if plp is None:
            raise TomModelError("vLLM returned no prompt_logprobs for a log-likelihood request")
        total = 0.0
        for pos in range(n_ctx, len(ids)):
            entry = plp[pos]
            if entry is None or ids[pos] not in entry:
                raise TomModelError(f"vLLM returned no log-probability for prompt token {pos}")
            total += float(entry[ids[pos]].logprob)
        results.append({"logprob": total, "n": len(ids) - n_ctx})
    if len(results) != len(items):
        raise TomModelError(f"vLLM returned {len(results)} outputs for {len(items)} prompts")
    return results


def _worker_main(conn: Any, llm_kwargs: dict[str, Any], devices: str) -> None:
    """One data-parallel engine: builds its LLM on its GPU slice and answers chunks until told to stop."""
    os.environ["CUDA_VISIBLE_DEVICES"] = devices
    try:
        import vllm

        llm = vllm.LLM(**llm_kwargs)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None))
    while True:
        msg = conn.recv()
        if msg is None:
            break
        tag, items = msg
        try:
            conn.send((tag, run_items(llm, vllm, items)))
        except Exception as exc:
            conn.send((tag, f"{type(exc).__name__}: {exc}"))


class VLLMModel(StreamingModel):
    def __init__(self, spec: Spec, *, uri: str) -> None:
        self.uri = uri
        self.options = o = dict(spec.options)
        if not spec.target:
            raise TomConfigError("--tom-model vllm:PATH_OR_ID needs a model folder or hub id")
        require_existing(spec.target, uri=uri)  # before the vLLM import: a missing folder is one usage error
        if o["tokenizer"]:
            require_existing(str(o["tokenizer"]), uri=uri)
        try:
            import vllm
        except ImportError as exc:
            raise TomDependencyError(
                f"--tom-model {uri} needs vLLM ({exc}): pip install 'pytest-tom[vllm]' (Linux with an NVIDIA GPU)") from exc
        self._vllm = vllm
        tp, dp = int(o["tensor_parallel_size"]), int(o["data_parallel_size"])
        if tp < 1 or dp < 1:
            raise TomConfigError(f"--tom-model {uri}: tensor_parallel_size and data_parallel_size must be at least 1")
        gpus = visible_gpus()
        if not gpus:
            raise TomDependencyError(f"--tom-model {uri}: vLLM needs a CUDA GPU and none is visible; use hf:{spec.target} on CPU")
        if tp * dp > len(gpus):
            raise TomConfigError(f"--tom-model {uri}: tensor_parallel_size={tp} x data_parallel_size={dp} needs "
                                 f"{tp * dp} GPUs, {len(gpus)} visible")
        self.gpus, self.tp, self.dp = gpus, tp, dp
        path = Path(spec.target).expanduser()
        self.path = str(path) if path.exists() else spec.target
        self.is_local = path.exists()
        self.batch_size = int(o["batch_size"])
        if self.batch_size < 1:
            raise TomConfigError(f"--tom-model {uri}: batch_size must be at least 1")
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise TomDependencyError(f"--tom-model {uri} needs transformers (a vLLM dependency): {exc}") from exc
        tok_kw: dict[str, Any] = {"trust_remote_code": o["trust_remote_code"]}
        if o["revision"] and not o["tokenizer"]:
            tok_kw["revision"] = o["revision"]
        self.tokenizer = AutoTokenizer.from_pretrained(o["tokenizer"] or self.path, **tok_kw)
        self.chat = TokenizedChat(self.tokenizer, chat_template=o["chat_template"], system=o["system"],
                                  generation_prompt=o["generation_prompt"])
        self.formatter = self.chat.formatter
        self._engine: Any = None
        self._fingerprint: str | None = None

    def llm_kwargs(self) -> dict[str, Any]:
        """Arguments for `vllm.LLM`; unset options are left out so each vLLM version uses its defaults."""
        o = self.options
        kw: dict[str, Any] = {"model": self.path, "tensor_parallel_size": self.tp, "dtype": o["dtype"], "seed": o["seed"],
                              "trust_remote_code": o["trust_remote_code"]}
        optional = ("tokenizer", "revision", "quantization", "max_model_len", "gpu_memory_utilization", "enforce_eager",
                    "max_num_seqs")
        kw.update({name: o[name] for name in optional if o[name] is not None})
        if o["prefix_caching"]:
            kw["enable_prefix_caching"] = True
        return kw

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            full = self.options["fingerprint"] == "full"
            if self.is_local:  # a folder, or a .gguf file
                files = local_fingerprint(Path(self.path), full=full)
            else:
                files = hub_fingerprint(self.path, self.options["revision"], None, full=full, download=True)
            parts = fingerprint_parts("vllm", BACKEND_VERSION, files, self.chat,
                                      dtype=self.options["dtype"], quantization=self.options["quantization"])
            self._fingerprint = "vllm:" + combine(parts)
        return self._fingerprint

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "backend": "vllm", "path": self.path, "llm_kwargs": self.llm_kwargs(), "batch_size": self.batch_size,
            "data_parallel_size": self.dp, "gpus": self.gpus[: self.tp * self.dp],
            "chat_template": self.formatter.describe(), "vllm_version": getattr(self._vllm, "__version__", "?"),
        }

    def context_limit(self) -> int | None:
        """`max_model_len` when given, else the tokenizer's model length: vLLM would reject or cut longer requests."""
        given = self.llm_kwargs().get("max_model_len")
        return given if isinstance(given, int) and given > 0 else self.chat.model_max_length

    def work_items(self, requests: Sequence[Request]) -> tuple[list[tuple[int, int, dict[str, Any]]], list[tuple[int, Response]]]:
        """Flatten requests into (request index, choice index, item); failures come back as responses."""
        items: list[tuple[int, int, dict[str, Any]]] = []
        failed: list[tuple[int, Response]] = []
        for i, ids, conts, error in self.chat.encode_requests(requests, self.context_limit()):
            settings = requests[i].settings
            if error:
                failed.append((i, Response(error=error)))
            elif conts is None:
                item: dict[str, Any] = {"kind": "generate", "ids": list(ids), "params": sampling_kwargs(settings)}
                if settings.stop_after:
                    item["cut"] = (list(settings.stop), list(settings.stop_after))
                items.append((i, -1, item))
            else:
                items.extend((i, k, {"kind": "loglikelihood", "ids": [*ids, *cont], "n_ctx": len(ids),
                                     "params": dict(LOGLIK_KWARGS)}) for k, cont in enumerate(conts))
        return items, failed

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        items, failed = self.work_items(requests)
        yield from failed
        if not items:
            return
        scores = ChoiceScores(requests)
        if self.options["prefix_caching"]:
            # Prompts that share a prefix go out together, so the cached blocks are hit before eviction.
            order = sharing_order([it["ids"] for _, _, it in items])
            items = [items[k] for k in order]
        else:
            # Longest first, so a too-small KV cache shows up at once; vLLM batches inside each call.
            items = sorted(items, key=lambda x: -len(x[2]["ids"]))
        size = max(1, self.batch_size)
        for chunk, results in self._get_engine().run([items[s : s + size] for s in range(0, len(items), size)]):
            for (i, k, item), result in zip(chunk, results, strict=False):
                if k < 0:
                    yield i, Response(error=result) if isinstance(result, str) else Response(**result)
                    continue
                score = result if isinstance(result, str) else (float(result["logprob"]), int(result["n"]))
                if (done := scores.add(i, k, score, item["n_ctx"])) is not None:
                    yield i, done

    def _get_engine(self) -> Any:
        if self._engine is None:
            if self.dp == 1:
                self._engine = _LocalEngine(self._vllm, self.llm_kwargs())
            else:
                slices = [",".join(self.gpus[r * self.tp : (r + 1) * self.tp]) for r in range(self.dp)]
                self._engine = _DataParallelEngine(self.llm_kwargs(), slices)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None


class _LocalEngine:
    def __init__(self, vllm: Any, llm_kwargs: dict[str, Any]) -> None:
        self.vllm = vllm
        self.llm = vllm.LLM(**llm_kwargs)

    def run(self, chunks: list[list[Any]]) -> Iterator[tuple[list[Any], list[Any]]]:
        """Answer `chunks` of (request, choice, item) in order, one `llm.generate` call each."""
        for chunk in chunks:
            try:
                results: list[Any] = run_items(self.llm, self.vllm, [it for _, _, it in chunk])
            except Exception as exc:
                results = [f"{type(exc).__name__}: {exc}"] * len(chunk)
            yield chunk, results

    def close(self) -> None:
        self.llm = None


class _DataParallelEngine:
    """M spawned engine processes; chunks are dealt to whichever worker is free."""

    def __init__(self, llm_kwargs: dict[str, Any], slices: list[str]) -> None:
        ctx = multiprocessing.get_context("spawn")  # CUDA cannot be forked
        self.workers: list[tuple[Any, Any]] = []
        for devices in slices:
            parent, child = ctx.Pipe()
            # Not a daemon: vLLM starts its own engine-core process, which a daemonic process may not do.
            proc = ctx.Process(target=_worker_main, args=(child, llm_kwargs, devices), daemon=False)
            proc.start()
            child.close()
            self.workers.append((proc, parent))
        self._finalizer = weakref.finalize(self, _DataParallelEngine._shutdown, list(self.workers))
        for proc, conn in self.workers:
            try:
                status, detail = conn.recv()
            except EOFError:
                status, detail = "error", f"exit code {proc.exitcode}"
            if status != "ready":
                self.close()
                raise TomModelError(f"a vLLM data-parallel worker failed to start: {detail}")

    def run(self, chunks: list[list[Any]]) -> Iterator[tuple[list[Any], list[Any]]]:
        from multiprocessing.connection import wait

        pending = list(reversed(chunks))
        busy: dict[Any, list[Any]] = {}
        idle = [conn for _, conn in self.workers]
        while pending or busy:
            while pending and idle:
                conn = idle.pop()
                chunk = pending.pop()
                conn.send((len(busy), [it for _, _, it in chunk]))
                busy[conn] = chunk
            ready: list[Any] = wait(list(busy))
            for conn in ready:
                chunk = busy.pop(conn)
                try:
                    _, results = conn.recv()
                except EOFError:
                    raise TomModelError("a vLLM data-parallel worker died") from None
                if isinstance(results, str):
                    results = [results] * len(chunk)
                idle.append(conn)
                yield chunk, results

    def close(self) -> None:
        self._finalizer()
        self.workers = []

    @staticmethod
    def _shutdown(workers: list[tuple[Any, Any]]) -> None:
        """Ask each worker to stop, then terminate stragglers (also runs at interpreter exit)."""
        for _, conn in workers:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        for proc, conn in workers:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
            conn.close()


def make(spec: str) -> VLLMModel:
    return VLLMModel(parse_spec("vllm", spec, OPTIONS), uri=f"vllm:{spec}")
