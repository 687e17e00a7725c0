"""The two-group gap interval: Newcombe's with one cluster, never narrower than it with several."""

from __future__ import annotations

import pytest

from pytest_tom.framework.gaps import gap_interval
from pytest_tom.stats import wilson


def test_one_cluster_gives_newcombes_interval_and_more_clusters_only_widen_it() -> None:
    (la, _), (_, ub) = wilson(1.0, 2), wilson(0.0, 2)
    one = gap_interval([1.0, 1.0], ["s", "s"], [0.0, 0.0], ["s", "s"])
    assert (one.point, one.high, one.clusters) == (1.0, 1.0, 1)
    assert one.low == pytest.approx(1 - ((1 - la) ** 2 + ub ** 2) ** 0.5)
    a, b = [1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0]
    newcombe = gap_interval(a, list("abcd"), b, list("abcd"), resamples=0)
    boot = gap_interval(a, list("abcd"), b, list("abcd"))
    assert boot.low <= newcombe.low and boot.high >= newcombe.high and boot.to_dict()["clusters"] == 4
    assert boot == gap_interval(a, list("abcd"), b, list("abcd"))  # deterministic for a seed
