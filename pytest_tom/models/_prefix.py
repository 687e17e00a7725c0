"""Shared-prefix reuse for `hf:`: each prefix shared by prompts (system prompt, story) is computed once. A batch runs in
up to three levels (shared by all, per group, per row), each on the previous level's cache with position ids counted
from the mask, so greedy outputs equal the plain path's. The planner is pure.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MIN_SHARED = 16  # A prefix shorter than this is not worth an extra forward pass.


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


@dataclass(frozen=True, slots=True)
class Plan:
    """How one batch is computed: a shared base, group prefixes, row suffixes (all lengths in tokens)."""

    base: int  # Tokens every row shares, computed once (0: no base level).
    groups: tuple[tuple[int, tuple[int, ...]], ...]
    """(prefix length, row indices) per group; prefix length >= base and < every member's length."""
    cost: int  # Positions computed (padding included): what the planner minimises.
    plain_cost: int


def sharing_order(seqs: Sequence[Sequence[int]]) -> list[int]:
    """An order putting rows that share long prefixes together: clusters (lexicographic runs sharing half their tokens),
    longest first, so batches have similar lengths and the first is the likeliest to run out of memory.
    """
    lex = sorted(range(len(seqs)), key=lambda i: tuple(seqs[i]))
    clusters: list[list[int]] = []
    for i in lex:
        if clusters:
            prev = clusters[-1][-1]
            shared = common_prefix(seqs[prev], seqs[i])
            if shared >= MIN_SHARED and 2 * shared >= min(len(seqs[prev]), len(seqs[i])):
                clusters[-1].append(i)
                continue
        clusters.append([i])
    clusters.sort(key=lambda c: -max(len(seqs[i]) for i in c))
    return [i for c in clusters for i in c]


def plan(seqs: Sequence[Sequence[int]]) -> Plan | None:
    """The cheapest plan for a batch in `sharing_order` (groups: runs sharing at least a threshold; every threshold is
    tried, fewest padded positions wins), or None when plain is as cheap.
    """
    n = len(seqs)
    width = max((len(s) for s in seqs), default=0)
    plain_cost = n * width
    if n < 2 or width < 2:
        return None
    lens = [len(s) for s in seqs]
    adjacent = [common_prefix(seqs[i], seqs[i + 1]) for i in range(n - 1)]
    base = min(min(adjacent), min(lens) - 1)
    base = base if base >= MIN_SHARED else 0
    best: Plan | None = None
    for threshold in sorted(set(adjacent) | {10**9}):
        groups: list[tuple[int, tuple[int, ...]]] = []
        start = 0
        for i in range(n):
            if i == n - 1 or adjacent[i] < threshold:
                members = tuple(range(start, i + 1))
                shared = min((adjacent[k] for k in range(start, i)), default=lens[i])
                prefix = min(shared, min(lens[k] for k in members) - 1)
                groups.append((max(prefix, base), members))
                start = i + 1
        if base == 0 and any(p == 0 for p, _ in groups):
            continue  # a group with nothing to compute before its suffixes: not a plan
        level2 = max(p for p, _ in groups) - base
        level3 = max(lens[k] - p for p, members in groups for k in members)
        cost = base + (len(groups) * level2 if level2 > 0 else 0) + n * level3
        if best is None or cost < best.cost:
            best = Plan(base, tuple(groups), cost, plain_cost)
    if best is None or best.cost >= plain_cost:
        return None
    return best


def cache_argument(model: Any) -> str:
    """The keyword a model takes a cache by: `cache` (transformers 5.x warns on the old name) or `past_key_values`."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError, AttributeError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def takes_cache_objects(model: Any) -> bool:
    """Whether `model` continues from a reorderable `Cache`, as prefix reuse needs (not GPT-2 in transformers 4.47)."""
    return bool(getattr(model, "_supports_cache_class", True))


def output_cache(out: Any) -> Any:
    """The cache a forward pass returned, as a reorderable `Cache` (4.x may give a tuple: wrapped in `DynamicCache`)."""
    fields = out.keys() if hasattr(out, "keys") else ()
    if "cache" in fields:
        return out["cache"]
    cache = out["past_key_values"] if "past_key_values" in fields else getattr(out, "past_key_values", None)
    if isinstance(cache, tuple):
        import transformers

        dynamic: Any = transformers.DynamicCache  # from_legacy_cache: only reached on 4.x, which has it
        cache = dynamic.from_legacy_cache(cache)
    return cache


def pad_left(torch: Any, seqs: Sequence[Sequence[int]], pad_id: int, device: Any) -> tuple[Any, Any]:
    """Token ids left-padded to one width and their attention mask, on `device`: what batched generation continues."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, s in enumerate(seqs):
        if s:
            ids[row, width - len(s) :] = torch.tensor(list(s), dtype=torch.long)
            mask[row, width - len(s) :] = 1
    return ids.to(device), mask.to(device)


def generate_shared(torch: Any, model: Any, pad_id: int, seqs: Sequence[Sequence[int]], p: Plan,
                    **generate_kwargs: Any) -> tuple[Any, int]:
    """`model.generate` over the rows of `seqs` following `p`: the prefix levels by forward passes, each on the cache of
    the one before, the last by `model.generate`; returns (output ids, prompt width).
    """
    device = model.get_input_embeddings().weight.device
    cache_kw = cache_argument(model)

    def extend(cache: Any, ids: Any, full_mask: Any) -> Any:
        """Run one prefix level on `cache` (None for the first) and return the cache that includes it."""
        positions = (full_mask.cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1] :]
        kw: dict[str, Any] = {"input_ids": ids, "attention_mask": full_mask, "position_ids": positions,
                              "use_cache": True}
        if cache is not None:
            kw[cache_kw] = cache
        with torch.inference_mode():
            try:
                out = model(**kw, logits_to_keep=1)
            except TypeError:  # models without logits_to_keep
                out = model(**kw)
        return output_cache(out)

    def select(cache: Any, rows: Sequence[int]) -> Any:
        """The cache expanded or reordered to `rows` (indices into its batch)."""
        if not hasattr(cache, "reorder_cache"):
            raise TypeError(f"cannot reuse a prefix with a {type(cache).__name__} cache")
        cache.reorder_cache(torch.tensor(list(rows), dtype=torch.long, device=device))
        return cache

    group_of = {k: g for g, (_, members) in enumerate(p.groups) for k in members}
    cols_ids: list[Any] = []
    cols_mask: list[Any] = []
    cache = None
    if p.base:
        ids = torch.tensor([list(seqs[0][: p.base])], dtype=torch.long, device=device)
        mask = torch.ones_like(ids)
        cache = extend(None, ids, mask)
        cols_ids.append(ids)
        cols_mask.append(mask)
    level2 = [seqs[members[0]][p.base : prefix] for prefix, members in p.groups]
    if any(level2):
        ids, mask = pad_left(torch, level2, pad_id, device)
        if cache is not None:
            cache = select(cache, [0] * len(p.groups))
            cols_ids = [c.expand(len(p.groups), -1) for c in cols_ids]
            cols_mask = [c.expand(len(p.groups), -1) for c in cols_mask]
        full_mask = torch.cat([*cols_mask, mask], dim=1)
        cache = extend(cache, ids, full_mask)
        cols_ids.append(ids)
        cols_mask.append(mask)
        rows = [group_of[k] for k in range(len(seqs))]
    else:  # only the base level is shared
        rows = [0] * len(seqs)
    assert cache is not None, "a plan shares at least one level"
    cache = select(cache, rows)
    index = torch.tensor(rows, dtype=torch.long, device=device)
    cols_ids = [c.index_select(0, index) for c in cols_ids]
    cols_mask = [c.index_select(0, index) for c in cols_mask]
    suffixes = [seqs[k][p.groups[group_of[k]][0] :] for k in range(len(seqs))]
    ids, mask = pad_left(torch, suffixes, pad_id, device)
    full_ids = torch.cat([*cols_ids, ids], dim=1)
    full_mask = torch.cat([*cols_mask, mask], dim=1)
    with torch.inference_mode():
        out = model.generate(input_ids=full_ids, attention_mask=full_mask, **{cache_kw: cache}, **generate_kwargs)
    return out, full_ids.shape[1]
