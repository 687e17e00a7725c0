"""pytest-xdist: contiguous scheduling of question blocks, and the controller's share of the run. So a distributed run
answers each request once and judges aggregates as one process would: with `--dist load`, `TomScheduling` (xdist's
`pytest_xdist_make_scheduler` hook) gives each worker one contiguous block, the same `engine.planning.blocks()` the
worker computes from its identical collection; workers do not run aggregate assertions (their members may run elsewhere)
but hand their definitions over `workeroutput`, and the controller judges them on the merged records. pytest-xdist is
imported only inside the functions that need it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pytest_tom.engine.planning import blocks, question_pattern

OUTPUT_KEY = "pytest_tom"
"""Key of pytest-tom's share of a worker's `workeroutput`."""


def worker_rank(workerid: str) -> int | None:
    """The rank of an xdist worker id ("gw3" -> 3), None for an id of another shape."""
    m = re.fullmatch(r"gw(\d+)", workerid)
    return int(m.group(1)) if m else None


def worker_of(config: Any) -> tuple[int, int] | None:
    """(rank, worker count) when `config` is an xdist worker's, else None."""
    info = getattr(config, "workerinput", None)
    if not info:
        return None
    rank = worker_rank(str(info.get("workerid", "")))
    count = int(info.get("workercount", 1))
    return (rank if rank is not None and rank < count else -1, count)


def make_scheduler(config: Any, log: Any, names: Sequence[str]) -> Any:
    """A `LoadScheduling` that hands out question blocks whole when the collection holds pytest-tom questions."""
    from xdist.scheduler import LoadScheduling

    pattern = question_pattern(names)

    class TomScheduling(LoadScheduling):  # type: ignore[misc]
        """Contiguous blocks for pytest-tom runs; xdist's own load scheduling otherwise."""

        def schedule(self) -> None:
            if self.collection is not None:  # type: ignore[has-type]  # a node joined later: xdist's own handling
                return super().schedule()  # type: ignore[no-any-return]
            collections = list(self.node2collection.values())
            collection = collections[0] if collections else []
            flags = [bool(pattern.search(nid)) for nid in collection]
            ranked = [(worker_rank(n.gateway.id), n) for n in self.nodes]
            ranks = sorted(((r, n) for r, n in ranked if r is not None), key=lambda pair: pair[0])
            same = all(c == collection for c in collections)
            if not same or not any(flags) or [r for r, _ in ranks] != list(range(len(self.nodes))):
                return super().schedule()  # type: ignore[no-any-return]
            self.collection = collection
            block = blocks(flags, len(self.nodes))
            for rank, node in ranks:
                mine = [i for i, b in enumerate(block) if b == rank]
                if mine:
                    self.node2pending[node].extend(mine)
                    node.send_runtest_some(mine)
            self.pending[:] = []
            for _, node in ranks:
                node.shutdown()
            return None

    return TomScheduling(config, log)
