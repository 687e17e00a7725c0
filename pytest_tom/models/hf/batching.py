"""Batches for `hf:`, decoded into answers. A fixed size wastes the GPU (7B on an H100: 64 rows 88.8 s, 128 rows 63.1 s)
or runs out of memory, so with `batch_size=auto` the first batch is measured and the size grows once to the largest
power of two that fits (`CapacityProbe`); out-of-memory halves it (`AdaptiveBatches`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_tom.models._common import MiB, cut_at_stops
from pytest_tom.request import GenerationSettings

T = TypeVar("T")
GPU_START = 64  # The first batch on a GPU, measured to choose the size of the rest.
CPU_BATCH = 16  # on CPU memory is not the limit: larger batches pad more and gain little
MAX_AUTO = 1024
HEADROOM = 0.85  # share of free memory a grown batch may use: fragmentation and longer prompts need the rest


@dataclass(frozen=True, slots=True)
class Failed:
    """The result of an item whose batch function raised: its error message."""

    message: str


def is_oom(exc: BaseException) -> bool:
    """Out-of-memory on any device (CUDA, MPS, CPU allocator), by type or by message."""
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


class AdaptiveBatches:
    """Runs a batch function over items `size` at a time, halving `size` on out-of-memory (and keeping it halved)."""

    def __init__(self, size: int, free_memory: Callable[[], None]) -> None:
        self.size = self.initial = max(1, int(size))
        self.backoffs = 0  # How many times the size was halved.
        self._free_memory = free_memory
        self.grow: Callable[[int], int] | None = None  # called once, after the first good batch: the size to go on with
        self.grown_from: int | None = None

    def run(self, items: Sequence[T], fn: Callable[[list[T]], list[Any]],
            force: int | None = None) -> Iterator[tuple[T, Any]]:
        """Yield `(item, result)` (`Failed`: unanswerable); a non-memory failure is retried item by item."""
        pos = 0
        while pos < len(items):
            size = min(force or self.size, len(items) - pos)
            batch = list(items[pos : pos + size])
            try:
                results = fn(batch)
            except Exception as exc:
                if is_oom(exc):
                    self._free_memory()
                    if size > 1:
                        self.size = max(1, size // 2)
                        self.backoffs += 1
                        continue
                    results = [Failed(f"out of memory even at batch size 1: {exc}")]
                elif size > 1:
                    results = []
                    for item in batch:
                        try:
                            results.extend(fn([item]))
                        except Exception as one:
                            results.append(Failed(f"{type(one).__name__}: {one}"))
                else:
                    results = [Failed(f"{type(exc).__name__}: {exc}")]
            else:
                if self.grow is not None and force is None:
                    grow, self.grow = self.grow, None  # once per session: the size is then kept
                    bigger = grow(self.size)
                    if bigger > self.size:
                        self.grown_from, self.size = self.size, bigger
            yield from zip(batch, results, strict=False)
            pos += size


def fitting_batch(size: int, *, rows: int, peak: int, base: int, width: int, generated: int, max_new: int,
                  available: int, cap: int = MAX_AUTO, headroom: float = HEADROOM) -> int:
    """The size to continue with after a measured batch (never smaller: out-of-memory shrinks); `peak`/`base`: bytes at
    its peak and before, `width` its prompt length, `generated` steps run, `available` bytes still allocatable.
    """
    if rows < 1 or peak <= base or available <= 0:
        return size
    per_row = (peak - base) / rows
    per_row *= (width + max_new) / max(1, width + generated)
    fit = int(available * headroom / per_row)
    best = size
    while best * 2 <= min(fit, cap):
        best *= 2
    return best


class CapacityProbe:
    """Measures one batch on a CUDA device and proposes the session's batch size (`AdaptiveBatches.grow`)."""

    def __init__(self, torch: Any, device: str) -> None:
        self.torch = torch
        self.device = device
        self._batch: tuple[int, int, int, int] | None = None  # rows, width, max_new, base
        self._generated = 0
        self.info: dict[str, Any] = {"start": GPU_START}

    def before(self, rows: int, width: int, max_new: int) -> None:
        cuda = self.torch.cuda
        cuda.reset_peak_memory_stats(self.device)
        self._batch = (rows, width, max_new, int(cuda.memory_allocated(self.device)))

    def after(self, generated: int) -> None:
        self._generated = generated

    def fitting(self, size: int) -> int:
        """Called once, after the first batch that succeeded: the size for the rest of the session."""
        if self._batch is None:
            return size
        cuda = self.torch.cuda
        rows, width, max_new, base = self._batch
        peak = int(cuda.max_memory_allocated(self.device))
        free, _total = cuda.mem_get_info(self.device)
        available = int(free) + int(cuda.memory_reserved(self.device)) - int(cuda.memory_allocated(self.device))
        chosen = fitting_batch(size, rows=rows, peak=peak, base=base, width=width, generated=self._generated,
                               max_new=max_new, available=available)
        self.info.update(measured_rows=rows, measured_width=width, peak_per_row_mib=round((peak - base) / rows / MiB, 1),
                         available_mib=round(available / MiB), chosen=chosen)
        self._batch = None
        return chosen

    def describe(self) -> dict[str, Any]:
        return dict(self.info)


def truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    """Cut at the earliest stop string, excluded (OpenAI semantics)."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return text[: min(cuts)] if cuts else text


def decode_rows(tokenizer: Any, rows: Sequence[Sequence[int]], s: GenerationSettings, *, eos: set[int],
                pad_id: int) -> list[tuple[str, int]]:
    """(answer text, completion tokens) of each row of new tokens: end at EOS (a row a stop string ended is padded with
    the pad id, not part of the answer), then the stop strings.
    """
    out = []
    for tokens in rows:
        cut = next((k for k, t in enumerate(tokens) if t in eos), None)
        kept = list(tokens[:cut] if cut is not None else tokens)
        if cut is None and (s.stop or s.stop_after):
            while kept and kept[-1] == pad_id:
                kept.pop()
        used = cut + 1 if cut is not None else len(kept)
        text = tokenizer.decode(kept, skip_special_tokens=True)
        text = cut_at_stops(text, s.stop, s.stop_after) if s.stop_after else truncate_at_stop(text, s.stop)
        out.append((text, used))
    return out
