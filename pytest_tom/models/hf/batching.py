"""Batches that survive out-of-memory: the batch size halves instead of the run crashing.

`hf:` runs the forward passes itself, so it has to find the largest batch that fits;
starting large and halving on out-of-memory finds it within a few batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


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

    def restart(self, size: int) -> None:
        """A new starting size (the URI's, or --tom-batch-size through the engine)."""
        self.size = self.initial = max(1, int(size))

    def run(self, items: Sequence[T], fn: Callable[[list[T]], list[Any]], force: int | None = None) -> Iterator[tuple[T, Any]]:
        """Yield `(item, result)` for every item; a result is `Failed` when its item could not be answered.

        `force` fixes the batch size. A batch that fails for another reason than memory is
        retried one item at a time, so one poisonous prompt costs one error, not a batch of them.
        """
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
