"""A clustered rate metric: the point, an interval that widens when items share a cluster, and no metric for no items."""

from __future__ import annotations

import pytest

from pytest_tom.framework.metric import clustered_rate


def test_a_rate_of_items_carries_its_interval_n_and_cluster_name() -> None:
    (m,) = clustered_rate(("acc",), "accuracy", "T", [1.0, 0.0, 1.0, 1.0], ["a", "b", "c", "d"], "story")
    assert (m.key, m.value, m.label, m.unit, m.table, m.n, m.cluster) == (("acc",), 0.75, "accuracy", "rate", "T", 4, "story")
    assert m.interval is not None and m.interval[0] < 0.75 < m.interval[1]


def test_items_sharing_clusters_give_a_wider_interval_than_independent_items() -> None:
    values = [1.0] * 10 + [0.0] * 10
    (alone,) = clustered_rate(("a",), "", "", values, [str(i) for i in range(20)], "item")
    (shared,) = clustered_rate(("a",), "", "", values, ["x"] * 10 + ["y"] * 10, "story")
    assert alone.value == shared.value == pytest.approx(0.5)
    assert alone.interval is not None and shared.interval is not None
    assert shared.interval[1] - shared.interval[0] > alone.interval[1] - alone.interval[0]


def test_no_items_is_no_metric() -> None:
    assert clustered_rate(("a",), "accuracy", "", [], [], "story") == []
