"""OpenToM's loader on the fixture: ids, facets, gold labels, releases, long narratives, the whole-release check and the
official 5 x 50 sample.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from helpers.opentom_sample import as_drops, official_sample

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals import opentom
from pytest_tom.evals.opentom import OpenToM
from pytest_tom.framework.base import DataSource

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"


def load(tmp_path: Path, **settings: str) -> list:
    return OpenToM({"partial": "true", **settings}).load(DataSource(FIXTURES, False, tmp_path))


def test_every_question_is_a_sample_with_its_facets(tmp_path: Path) -> None:
    items = load(tmp_path)
    assert len(items) == 46 and items[0].id == "11111111-location_cg_fo-0"
    assert Counter(s.facets["cell"] for s in items) == {"loc_coarse/fo": 4, "loc_coarse/so": 4, "loc_fine/fo": 8,
                                                        "loc_fine/so": 4, "multihop/fo": 12, "multihop/so": 12,
                                                        "attitude": 2}
    s = next(x for x in items if x.id == "22222222-location_fg_fo-3")
    assert (s.facets["perspective"], s.facets["observed"], s.facets["personality"]) == ("observer", "unwitnessed",
                                                                                        "negativistic")
    assert {"opentom", "location", "location_fine", "first_order", "physical"} <= set(s.marks)
    assert opentom.gold(s.extra, str(s.gold)) == 1  # unobserved: the observer believes the original place (release 2025)


def test_the_paper_era_release_flips_the_observer(tmp_path: Path) -> None:
    s = next(x for x in load(tmp_path, release="2024") if x.id == "22222222-location_fg_fo-3")
    assert opentom.gold(s.extra, str(s.gold)) == 2


def test_long_narratives_and_granularity(tmp_path: Path) -> None:
    items = load(tmp_path, narratives="long", granularity="coarse")
    assert len(items) == 23 - 6 and items[0].id.startswith("long-11111111-") and "long_narrative" in items[0].marks
    assert items[0].context.render().count("Lena and Omar") == 3


def test_a_copy_not_declared_partial_must_be_the_whole_release(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match="not the release's"):
        OpenToM().load(DataSource(FIXTURES, False, tmp_path))


def test_the_old_file_names_are_found(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "opentom", tmp_path / "opentom")
    d = tmp_path / "opentom" / opentom.DIR
    for name in ("location_fg_fo", "location_fg_so"):
        (d / f"{name}_new.json").rename(d / f"{name}.json")
    assert len(OpenToM({"partial": "true"}).load(DataSource(tmp_path, False, tmp_path / "c"))) == 46


def test_the_paper_protocol_on_a_copy_too_small_for_one_batch_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TomConfigError, match="protocol=paper draws batches of 50 narratives; the copy in .* has 2"):
        load(tmp_path, protocol="paper")


def test_the_official_sample_cycles_shuffles_when_keys_run_out() -> None:
    batches = opentom.sample_official([str(i) for i in range(100)])
    assert [len(b) for b in batches] == [50] * 5 and len({k for b in batches[:2] for k in b}) == 100
    drops = [fo for b in batches for d in b.values() for fo in d.values()]
    assert all(len(fo) == 2 and fo == sorted(fo) and set(fo) <= {0, 1, 2, 3} for fo in drops) and len(drops) == 500


@pytest.mark.parametrize("n", [596, 100, 120])
def test_the_official_sample_is_run_baselines(n: int) -> None:
    """Each pass shuffles a fresh list (100 keys: not the previous pass's order) and keeps its short last chunk (120)."""
    keys = [f"{i:08d}" for i in range(n)]
    assert opentom.sample_official(keys) == as_drops(official_sample(keys))
