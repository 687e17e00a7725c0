"""OpenToM against the real release in $TOM_DATA_DIR/opentom (skipped when it is unset).

All 13,708 questions load through the whole-release checks, the official sample is Appendix A's (its sha256), a pinned
download is accepted from a mirror, and whole runs with a random and a python model give the metrics a hand
computation gives: written here from the raw files and the answers, with the official rules spelt out again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers.opentom_sample import as_drops, official_sample

from pytest_tom.engine import Engine
from pytest_tom.errors import TomDataError
from pytest_tom.evals import opentom
from pytest_tom.evals.opentom import OpenToM
from pytest_tom.framework.base import DataSource
from pytest_tom.gates.metrics import gate_metrics
from pytest_tom.models.base import CallableModel
from pytest_tom.models.random import RandomModel
from pytest_tom.record import Outcome

pytestmark = pytest.mark.realdata
DIR = Path("opentom/data/opentom_data")
STEMS = ("location_cg_fo", "location_cg_so", "location_fg_fo", "location_fg_so", "multihop_fo", "multihop_so", "attitude")


@pytest.fixture(scope="module")
def root() -> Path:
    d = os.environ.get("TOM_DATA_DIR")
    if not d or not (Path(d) / DIR / "meta_data.json").is_file():
        pytest.skip("TOM_DATA_DIR does not hold the real OpenToM release (opentom/data/opentom_data/)")
    return Path(d)


def raw(root: Path, stem: str) -> dict:
    name = f"{stem}_new.json" if stem.startswith("location_fg") else f"{stem}.json"
    return json.loads((root / DIR / name).read_text())


def test_the_whole_release_loads_with_the_official_sample(root: Path, tmp_path: Path) -> None:
    items = OpenToM().load(DataSource(root, False, tmp_path))
    assert len(items) == 13_708 and len({s.id for s in items}) == 13_708
    meta = json.loads((root / DIR / "meta_data.json").read_text())
    batches = [[(k, d["multihop_fo"], d["multihop_so"]) for k, d in b.items()] for b in opentom.sample_official(list(meta))]
    assert hashlib.sha256(json.dumps(batches).encode()).hexdigest() == (
        "ccb74be8337c341aee3605777ac5e771fb1501b005e76babbb87844af44c6215")
    paper = OpenToM({"protocol": "paper"}).load(DataSource(root, False, tmp_path))
    assert len(paper) == 4_750 and Counter(s.facets["batch"] for s in paper) == {str(b): 950 for b in range(1, 6)}
    assert len(OpenToM({"narratives": "long"}).load(DataSource(root, False, tmp_path))) == 2_300
    assert len(OpenToM({"release": "2024"}).load(DataSource(root, False, tmp_path))) == 13_708


def test_a_download_is_checked_against_the_pinned_sha256s(root: Path, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    shutil.copytree(root / "opentom" / "data", mirror / opentom.REVISION / "data")
    shutil.copytree(root / "opentom" / "paper_era" / "data", mirror / opentom.PAPER_REVISION / "data")
    bench = OpenToM({"source_url": mirror.as_uri(), "release": "2024"})
    assert len(bench.load(DataSource(None, True, tmp_path / "cache"))) == 13_708
    assert len(OpenToM().load(DataSource(None, False, tmp_path / "cache"))) == 13_708  # the cache, re-checked


ANSWERS = {"coarse": ("No", "Yes.", "I don't know", "Yes, I know."),
           "fine": ("The basket.", "in the box", "", "somewhere else", "a drawer in the kitchen"),
           "fullness": ("less full", "It is fuller.", "equally full.", "unclear"),
           "accessibility": ("more accessible", "Less accessible.", "equally accessible", "inaccessible"),
           "attitude": ("Positive.", "Answer: B", "negative", "positive and negative")}


def pick(text: str, options: tuple[str, ...]) -> str:
    return options[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(options)]


def answers(batch: list, settings: dict) -> list[str]:
    """A fixed answer per prompt (hashed), from each genre's list, with places read off the question's plot."""
    out = []
    for c in batch:
        p = c[-1]["content"]
        kind = ("coarse" if '"Yes" or "No"' in p else "fullness" if "full\"" in p else "accessibility"
                if "accessible\"" in p else "attitude" if "attitude" in p else "fine")
        out.append(pick(p, ANSWERS[kind]))
    return out


def strip_det(s: str) -> str:
    return (s[1:].strip() if s.startswith("a") else s[3:].strip() if s.startswith("the") else s).lower()


def fine_overlaps(t: str, p1: str, p2: str) -> list[float]:
    words = set(t.replace("_", " ").replace("'s", "").replace(".", "").split())
    return [len(words & set(w)) / len(w) for w in (strip_det(p).replace("_", " ").replace("'s", "").split() for p in (p1, p2))]


def hand_label(kind: str, text: str, p1: str, p2: str) -> int:
    t = text.strip().lower()
    if kind == "coarse":
        return 0 if "no" in t and "yes" not in t else 1 if "yes" in t and "no" not in t else -1
    if kind == "fine":
        s = fine_overlaps(t, p1, p2)
        return 1 if s[0] > s[1] else 2 if s[1] > s[0] else 3
    if kind == "fullness":
        t = t.replace(".", "")
        return 1 if "less full" in t else 2 if "fuller" in t or "more full" in t else 3 if "equally full" in t else -1
    if kind == "accessibility":
        t = t.replace(".", "")
        return 1 if "more accessible" in t else 2 if "less accessible" in t else 3 if "equally accessible" in t else -1
    t = t.split(":")[-1].split(".")[0].strip()
    hits = [v for v, w in ((1, "positive"), (2, "negative"), (3, "neutral")) if w in t]
    return {"b": 3}.get(t, hits[0] if len(hits) == 1 else -1)


def hand_gold(kind: str, answer: str, p1: str, p2: str) -> int | None:
    a = answer.lower()
    if kind == "fine":
        g = strip_det(answer)
        return 1 if g == strip_det(p1) else 2 if g == strip_det(p2) else None
    return {"coarse": lambda: 0 if "no" in a else 1, "fullness": lambda: {"less full": 1, "more full": 2}.get(a, 3),
            "accessibility": lambda: {"more accessible": 1, "less accessible": 2}.get(a, 3),
            "attitude": lambda: {"positive": 1, "negative": 2}.get(a, 3)}[kind]()


def f1(pairs: list[tuple[int, int]]) -> float:
    labels = {x for pair in pairs for x in pair}
    per = []
    for lab in labels:
        tp = sum(g == p == lab for g, p in pairs)
        fp, fn = sum(p == lab != g for g, p in pairs), sum(g == lab != p for g, p in pairs)
        per.append(2 * tp / (2 * tp + fp + fn))
    return sum(per) / len(per)


def hand(root: Path, said: dict[str, str], keep: Callable[[str, str, int], bool] = lambda *_: True,
         items: dict[str, tuple[int | None, int]] | None = None, prefix: str = "") -> dict[str, float]:
    """Each cell's official numbers from the raw files; `items` (when given) receives each id's (gold, label)."""
    meta = json.loads((root / DIR / "meta_data.json").read_text())
    cells: dict[str, list[tuple[int | None, int]]] = {}
    neither: dict[str, int] = {}
    said_labels: dict[tuple[str, str, int], int] = {}
    for stem in STEMS:
        for key, qs in raw(root, stem).items():
            plot = meta[key]["plot_info"]
            for i, q in enumerate(qs):
                if not keep(key, stem, i):
                    continue
                kind = {"location_cg": "coarse", "location_fg": "fine"}.get(stem[:11], "attitude")
                if stem.startswith("multihop"):
                    kind = "fullness" if i < 4 else "accessibility"
                args = (plot["original_place"], plot["move_to_place"])
                pair = (hand_gold(kind, q["answer"], *args), hand_label(kind, said[f"{prefix}{key}-{stem}-{i}"], *args))
                said_labels[key, stem, i] = pair[1]
                if items is not None:
                    items[f"{key}-{stem}-{i}"] = pair
                order = stem[-2:]
                if kind == "fine" and pair[0] is not None:  # answers naming neither place: the official tie, counted apart
                    zero = not any(fine_overlaps(said[f"{prefix}{key}-{stem}-{i}"].strip().lower(), *args))
                    neither[f"names_neither.{order}"] = neither.get(f"names_neither.{order}", 0) + zero
                names = {"coarse": f"loc_coarse.{order}", "fine": f"loc_fine.{order}", "attitude": "attitude"}
                for cell in ([names[kind]] if kind in names else [f"{kind}.{order}", f"multihop.{order}"]):
                    cells.setdefault(cell, []).append(pair)
    out = {}
    for cell, pairs in cells.items():
        ok = [(g, p) for g, p in pairs if g is not None and p != -1]
        out |= {f"{cell}.accuracy": sum(g == p for g, p in ok) / len(ok), f"{cell}.macro_f1": f1(ok),
                f"{cell}.unparseable": sum(p == -1 for _, p in pairs)}
    for order, offset in (("fo", 2), ("so", 0)):  # spec §6.2: coarse 0/1 with fine 2/3 (first order), 0/1 (second)
        both = [(said_labels[key, f"location_cg_{order}", i], said_labels[key, f"location_fg_{order}", i + offset])
                for key in meta for i in (0, 1) if (key, f"location_cg_{order}", i) in said_labels]
        agree = [(c == 1) == (f == 1) for c, f in both if c != -1 and f in (1, 2)]
        out |= {f"coarse_fine_agreement.{order}": sum(agree) / len(agree),
                f"coarse_fine_agreement.{order}_unreadable": len(both) - len(agree),
                f"gate.coarse_fine_agreement.{order}": sum(agree) / len(both)}  # unreadable pairs: not agreeing
    return out | neither


@pytest.mark.slow
@pytest.mark.parametrize("which", ["random", "python"])
def test_every_question_runs_and_the_metrics_equal_a_hand_computation(root: Path, tmp_path: Path, which: str) -> None:
    bench = OpenToM()
    items = bench.load(DataSource(root, False, tmp_path))
    model = RandomModel(0) if which == "random" else CallableModel(answers)
    records = list(Engine(model).run({s.id: (s, bench.program(s)) for s in items}).values())
    got = {m.name: m.value for m in bench.metrics(records)}
    per_item: dict[str, tuple[int | None, int]] = {}
    want = hand(root, {r.sample_id: r.responses[0] or "" for r in records}, items=per_item)
    got |= {f"gate.{g.name}": g.rate() for g in bench.gate_rates(records) if g.name.startswith("coarse_fine")}
    assert {k: pytest.approx(got[k]) for k in want} == want
    assert {r.sample_id: (r.gold, -1 if r.parsed is None else r.parsed) for r in records} == per_item  # item by item
    if which == "python":
        assert got["loc_coarse.fo.unparseable"] > 0 and got["loc_fine.fo.no_gold"] == 1
    for genre in ("loc_coarse", "loc_fine", "multihop"):  # the order gap (§6.3), from the hand-computed cells
        assert got[f"order_gap.{genre}"] == pytest.approx(want[f"{genre}.fo.macro_f1"] - want[f"{genre}.so.macro_f1"])
    side = {r.sample_id: r.facets["perspective"] for r in records}  # the perspective gap (§6.5) on two cells
    for stem, cell in (("location_cg_fo", "loc_coarse.fo"), ("location_fg_so", "loc_fine.so")):
        read = [[pair for k, pair in per_item.items() if f"-{stem}-" in k and side[k] == who and None not in pair
                 and pair[1] != -1] for who in ("mover", "observer")]
        assert got[f"perspective_gap.{cell}"] == pytest.approx(f1(read[0]) - f1(read[1]))
    # the one question without a gold is unscored, and in no metric of the framework either (spec §3.5)
    assert [r.sample_id for r in records if r.outcome is Outcome.UNSCORED] == [k for k, (g, _) in per_item.items() if g is None]
    gates = gate_metrics(records, facets=bench.gate_facets, cluster=bench.cluster)
    assert len(gates["accuracy"].ids) == 13_707 and gates["perspective.narrator"].rate() == got["narrator_control"]
    rates = {g.name: g.rate() for g in bench.gate_rates(records)}  # the per-cell gate of what the official F1 drops (§6.11)
    assert rates["unparseable.loc_coarse_fo"] == want["loc_coarse.fo.unparseable"] / 1_192
    assert rates["unparseable.attitude"] == want["attitude.unparseable"] / 596


@pytest.mark.parametrize(("narratives", "keys_sha256"), [
    ("normal", "c9d785d42ba128ac6738bac4e058113cf3be453ba86a6ee19b8702b2c871887c"),
    ("long", "d43b8467ac360866ffcd0395b39afd784ed0c91e64dfc7b916aebe4704e2f790"),  # the spec's, both (§3.7)
])
def test_the_paper_protocol_is_mean_and_population_std_of_per_batch_hand_values(root: Path, tmp_path: Path,
                                                                                 narratives: str, keys_sha256: str) -> None:
    bench = OpenToM({"protocol": "paper", "narratives": narratives})
    items = bench.load(DataSource(root, False, tmp_path))
    records = list(Engine(CallableModel(answers)).run({s.id: (s, bench.program(s)) for s in items}).values())
    got = {m.name: m.value for m in bench.metrics(records)}
    meta = json.loads((root / DIR / ("meta_data_long.json" if narratives == "long" else "meta_data.json")).read_text())
    sample = official_sample(list(meta))
    assert opentom.sample_official(list(meta)) == as_drops(sample)
    assert hashlib.sha256(json.dumps([[k for k, _, _ in b] for b in sample]).encode()).hexdigest() == keys_sha256
    stories = Counter(Counter(k for b in sample for k, _, _ in b).values())  # how many batches a story sits in
    assert stories == ({2: 50, 3: 50} if narratives == "long" else {1: 250})
    # each question is asked once and counted in every batch that keeps it: 19 per story and batch (spec §3.7)
    assert Counter(b for s in items for b in s.facets["batch"].split()) == {str(b): 950 for b in range(1, 6)}
    assert len({s.id for s in items}) == len(items)
    assert (narratives == "long") == any(" " in s.facets["batch"] for s in items)  # long stories recur across shuffles
    said = {r.sample_id: r.responses[0] or "" for r in records}
    per_batch = []
    for chunk in sample:
        keys = {k for k, _, _ in chunk}
        drop = {(k, "multihop_fo", i) for k, fo, _ in chunk for i in fo} | {(k, "multihop_so", i) for k, _, so in chunk
                                                                            for i in so}
        per_batch.append(hand(root, said, lambda key, stem, i, keys=keys, drop=drop: key in keys
                              and (key, stem, i) not in drop, prefix="long-" if narratives == "long" else ""))
    for name in ("attitude.macro_f1", "multihop.fo.macro_f1", "loc_fine.so.accuracy", "loc_coarse.fo.macro_f1"):
        vals = [b[name] for b in per_batch]
        assert got[f"{name}.per_batch"] == pytest.approx(tuple(vals))
        # as the official evaluator computes them (np.mean, np.std), to the last bit
        assert (got[f"{name}.mean"], got[f"{name}.std"]) == (np.mean(got[f"{name}.per_batch"]), np.std(got[f"{name}.per_batch"]))
        assert got[f"{name}.mean"] == pytest.approx(np.mean(vals)) and got[f"{name}.std"] == pytest.approx(np.std(vals))


@pytest.mark.slow
def test_pytest_runs_the_whole_release_with_the_random_model(pytester: pytest.Pytester, root: Path) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--tom-benchmark=opentom", f"--tom-data-dir={root}",
                                "--tom-model=random:0", "--tom-no-cache", "-q", "--tb=no")
    outcomes = result.parseoutcomes()
    # the one question without a scorable gold is asked, skipped and unscored (a known release defect)
    assert outcomes["passed"] + outcomes["failed"] == 13_707 and outcomes["skipped"] == 1 and "error" not in outcomes


def test_the_release_under_its_old_file_names_is_checked_by_the_pins(root: Path, tmp_path: Path) -> None:
    shutil.copytree(root / "opentom" / "data", tmp_path / "opentom" / "data")
    d = tmp_path / "opentom" / "data" / "opentom_data"
    for name in ("location_fg_fo", "location_fg_so"):
        (d / f"{name}_new.json").rename(d / f"{name}.json")
    (d / "meta_data_long.json").rename(d / "metadata_long.json")
    assert len(OpenToM({"narratives": "long"}).load(DataSource(tmp_path, False, tmp_path / "c"))) == 2_300
    (d / "location_fg_fo.json").write_bytes((root / "opentom/paper_era/data/opentom_data/location_fg_fo.json").read_bytes())
    with pytest.raises(TomDataError, match="sha256"):
        OpenToM().load(DataSource(tmp_path, False, tmp_path / "c"))
