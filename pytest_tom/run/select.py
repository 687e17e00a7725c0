"""Addressing --tom-benchmark items by node id on the command line. Such items have no file, so pytest would reject
`pytest "tombench[en-false_belief_task-0001]"` as a path. Before collection these arguments (also
`tombench::tombench[...]`, `tombench_coherence[...]` or a bare benchmark name) leave `config.args` and become a
selection of the benchmark's items; an argument naming an existing path stays pytest's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path


def take_node_id_args(args: list[str], names: Sequence[str], invocation_dir: Path) -> dict[str, frozenset[str] | None]:
    """Remove the arguments that address benchmark items from `args`; return what they select, by benchmark."""
    if not names:
        return {}
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?:(?P<root>{alt})::)?(?P<name>(?P<bench>{alt})(?:_\w+)?\[[^\[\]]*\])|(?P<bare>{alt})")
    selected: dict[str, set[str] | None] = {}
    kept: list[str] = []
    for arg in args:
        m = pattern.fullmatch(arg)
        if m is None or (invocation_dir / arg).exists() or (m.group("root") and m.group("root") != m.group("bench")):
            kept.append(arg)
            continue
        if m.group("bare"):
            selected[m.group("bare")] = None
            continue
        bench = m.group("bench")
        current = selected.setdefault(bench, set())
        if current is not None:
            current.add(m.group("name"))
    args[:] = kept
    return {b: (frozenset(v) if v is not None else None) for b, v in selected.items()}
