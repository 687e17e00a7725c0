"""Whole-cluster sampling: a sample keeps or drops each cluster whole, stratified by what is constant in a cluster."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tom.engine.suites import stratified_sample, whole_cluster_sample

# Hi-ToM's shape: 2 deceptions x 3 lengths x 4 stories, each asked at 5 orders (order varies inside a story)
ENTRIES = [(f"{t}-{n}-{s}-{o}", f"{t}/{n}/{s}", (str(o), t, str(n)))
           for t in ("tell", "no_tell") for n in (1, 2, 3) for s in range(4) for o in range(5)]
CLUSTERS = {e[1]: {x[0] for x in ENTRIES if x[1] == e[1]} for e in ENTRIES}


def test_keeps_whole_clusters_covering_every_stratum_constant_in_a_cluster() -> None:
    kept, used = whole_cluster_sample(ENTRIES, 30, seed=1)
    assert used == [1, 2]  # deception and length; order varies inside each story
    stories = {c for c, ids in CLUSTERS.items() if ids <= kept}
    assert kept == set().union(*(CLUSTERS[c] for c in stories))  # every kept story whole
    assert len(stories) == 6 and {c.rsplit("/", 1)[0] for c in stories} == {f"{t}/{n}" for t in ("tell", "no_tell")
                                                                             for n in (1, 2, 3)}


def test_rounds_up_to_whole_clusters_and_is_seed_stable() -> None:
    assert len(whole_cluster_sample(ENTRIES, 31, seed=0)[0]) == 35  # ceil(31 x 24 / 120) = 7 stories
    assert len(whole_cluster_sample(ENTRIES, 1, seed=0)[0]) == 5
    assert len(whole_cluster_sample(ENTRIES, 500, seed=0)[0]) == 120
    assert whole_cluster_sample(ENTRIES, 40, seed=3) == whole_cluster_sample(list(reversed(ENTRIES)), 40, seed=3)
    assert whole_cluster_sample(ENTRIES, 40, seed=3)[0] != whole_cluster_sample(ENTRIES, 40, seed=4)[0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2)), min_size=1, max_size=60), st.integers(1, 80),
       st.integers(0, 3))
def test_clusters_of_one_draw_what_stratified_sample_draws(rows: list[tuple[int, int]], n: int, seed: int) -> None:
    entries = [(f"q{i}", (f"s{a}", f"t{b}")) for i, (a, b) in enumerate(rows)]
    assert whole_cluster_sample([(q, q, s) for q, s in entries], n, seed) == (stratified_sample(entries, n, seed), [0, 1])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2)), min_size=1, max_size=60), st.integers(1, 80))
def test_a_kept_cluster_is_always_whole(rows: list[tuple[int, int]], n: int) -> None:
    members: dict[str, set[str]] = defaultdict(set)
    entries = []
    for i, (c, o) in enumerate(rows):
        members[f"c{c}"].add(f"q{i}")
        entries.append((f"q{i}", f"c{c}", (f"o{o}",)))
    kept, _ = whole_cluster_sample(entries, n, seed=0)
    assert kept and all(ids <= kept or not ids & kept for ids in members.values())
