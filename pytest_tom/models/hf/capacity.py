"""How large a batch fills the GPU: measure the first batch, then grow to what the free memory holds.

A fixed size wastes the accelerator (64 rows of a 7B model on an H100: 88.8 s; 128 rows: 63.1 s) or runs out of
memory. With `batch_size=auto` on a GPU the first (most demanding) batch is measured and the size grows once to the
largest power of two whose estimated peak fits; out-of-memory still halves it (`AdaptiveBatches`).
"""

from __future__ import annotations

from typing import Any

GPU_START = 64  # The first batch on a GPU, measured to choose the size of the rest.
CPU_BATCH = 16  # on CPU memory is not the limit: larger batches pad more and gain little
MAX_AUTO = 1024
HEADROOM = 0.85  # share of free memory a grown batch may use: fragmentation and longer prompts need the rest
MiB = 1 << 20


def fitting_batch(size: int, *, rows: int, peak: int, base: int, width: int, generated: int, max_new: int,
                  available: int, cap: int = MAX_AUTO, headroom: float = HEADROOM) -> int:
    """The batch size to continue with after a measured batch (never smaller than `size`: out-of-memory shrinks).

    `peak` and `base` are bytes allocated at the batch's peak and before it;
    `width` its padded prompt length, `generated` the steps it ran, `max_new`
    the token budget; `available` bytes the process may still allocate.
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
