"""OpenToM's metrics: scikit-learn's macro-F1 by hand, the official pooling of multihop and the batch means."""

from __future__ import annotations

import pytest

from pytest_tom.evals.opentom.scoring import aggregate
from pytest_tom.record import Outcome, Record
from pytest_tom.stats import macro_f1


def rec(cell: str, genre: str, gold: int | None, parsed: int | None, batch: str = "1") -> Record:
    outcome = Outcome.UNPARSEABLE if parsed is None else Outcome.CORRECT if parsed == gold else Outcome.INCORRECT
    return Record("opentom", f"{cell}{gold}{parsed}", outcome, {"cell": cell, "genre": genre, "order": cell[-2:],
                  "perspective": "mover", "narrative": "1", "batch": batch}, parsed=parsed, gold=gold)


def test_macro_f1_is_the_mean_over_gold_and_predicted_labels() -> None:
    # label 1: tp 1, fp 1, fn 1 -> 0.5; label 2: tp 1, fp 0, fn 1 -> 2/3; label 3 (predicted only): 0
    assert macro_f1([1, 1, 2, 2], [1, 3, 2, 1]) == pytest.approx((0.5 + 2 / 3 + 0) / 3)
    assert macro_f1([0, 1], [0, 1]) == 1.0


def test_multihop_pools_shared_labels_and_drops_unparseable() -> None:
    recs = [rec("multihop/fo", "fullness", 1, 1), rec("multihop/fo", "fullness", 2, None),
            rec("multihop/fo", "accessibility", 1, 1), rec("multihop/fo", "accessibility", 3, 2)]
    m = {x.name: x.value for x in aggregate(recs, batched=False)}
    assert m["multihop.fo.accuracy"] == 2 / 3 and m["multihop.fo.macro_f1"] == pytest.approx((1 + 0) / 3 + 0 / 3)
    assert m["multihop.fo.unparseable"] == 1 and m["multihop.fo.accuracy_strict"] == 2 / 4
    assert m["multihop.fo.corrupted_rate"] == (0.5 + 0) / 2 and m["fullness.fo.corrupted_rate"] == 0.5
    assert m["accessibility.fo.accuracy"] == 0.5


def test_paper_protocol_reports_mean_and_population_std_over_batches() -> None:
    recs = [rec("attitude", "attitude", 1, 1, "1"), rec("attitude", "attitude", 1, 2, "2"),
            rec("attitude", "attitude", 2, 2, "2")]
    m = {x.name: x for x in aggregate(recs, batched=True)}
    assert m["attitude.accuracy.per_batch"].value == (1.0, 0.5)
    assert m["attitude.accuracy.mean"].value == 0.75 and m["attitude.accuracy.std"].value == 0.25
