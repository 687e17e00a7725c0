"""MMToM-QA's loader: samples from the release format, each data error named by file, line and field, the whole-release
checks, and the pinned download with its manifest.

Everything runs on the project's own fixture (fixtures/mmtomqa/: 14 invented records in the release's format, see
its make_fixture.py), read back with plain `json` where a loader bug could hide.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.mmtomqa import MMToMQA
from pytest_tom.evals.mmtomqa.data import FILE, render
from pytest_tom.framework.base import DataSource

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
RAW = FIXTURES / "mmtomqa" / FILE
RECORDS = [json.loads(line) for line in RAW.read_text().splitlines()]


def load(root: Path = FIXTURES, **settings: object) -> list:
    return MMToMQA({"partial": True, **settings}).load(DataSource(root, False, root / ".cache"))


def copy_with(tmp_path: Path, line: int, change: Any) -> Path:
    """A copy of the fixture under tmp_path/mmtomqa with record `line` (1-based) changed in place by `change(rec)`."""
    recs = [dict(r) for r in RECORDS]
    change(recs[line - 1])
    (tmp_path / "mmtomqa" / "Benchmark").mkdir(parents=True, exist_ok=True)
    (tmp_path / "mmtomqa" / FILE).write_text("".join(json.dumps(r) + "\n" for r in recs))
    return tmp_path


def test_the_fixture_loads_as_14_items_with_ids_facets_marks_and_the_release_text() -> None:
    items = load()
    assert [s.id for s in items][:3] == ["1.3-e7-t4", "1.1-e7-t4", "1.2-e7-t9"] and len({s.id for s in items}) == 14
    s = items[2]
    assert s.facets == {"type": "1.2", "family": "belief", "episode": "7", "line": "3"}
    assert s.marks == ("mmtomqa", "belief", "false_belief", "short_term") and s.characters == ("Ann",)
    assert s.question == "If Ann has been trying to get a cupcake, which one of the following statements is more likely to be true?"
    assert [c.label for c in s.choices] == ["a", "b"] and s.gold == "b" and s.source == f"{FILE} line 3"
    assert items[13].marks == ("mmtomqa", "goal", "goal_future_actions") and items[3].marks[-1] == "long_term"
    assert [render(s) for s in items] == [r["question"] for r in RECORDS]


def _set(key: str, value: Any) -> Any:
    return lambda r: r.__setitem__(key, value)


def _edit(old: str, new: str) -> Any:
    return lambda r: r.__setitem__("question", r["question"].replace(old, new))


@pytest.mark.parametrize(("line", "change", "field", "why"), [
    (2, _set("answer", "c"), "answer", "expected 'a' or 'b', got 'c'"),
    (2, _set("question_type", 1.5), "question_type", "expected one of 1.1, .*got 1.5"),
    (2, _set("question_type", "1.1"), "question_type", "got '1.1'"),
    (2, _set("question_type", 1.15), "question_type", "got 1.15"),
    (3, _set("test", ["graph", "actions"]), "test", r"expected \['init_graph', 'actions'\]"),
    (3, _set("answer_list", ["b", "a"]), "answer_list", "expected"),
    (4, _set("episode", "8"), "episode", "expected an integer, got '8'"),
    (4, _set("start_time", 9), "end_time", "start_time <= end_time, got 9 and 5"),
    (5, lambda r: r.pop("answer_list"), "", "expected exactly the keys"),
    (5, _set("video", 1), "", "expected exactly the keys"),
    (5, _edit("What's inside", "Inside"), "question", "not the release's text shape"),
    (5, _edit(" Please respond with either a or b.", ""), "question", "not the release's text shape"),
    (5, _edit("\nQuestion: ", "\nQuestion: \nQuestion: "), "question", "not the release's text shape"),
    (1, _set("answer", "b"), "question", "type 1.3's gold must be the 'is not inside' option"),
    (2, _set("answer", "b"), "question", "type 1.1's gold must be the 'is inside' option"),
    (2, _edit("is not inside the microwave", "is not inside the stove"), "question", "differing only in 'not'"),
    (7, _set("answer", "a"), "question", "type 2.1's gold must be the option whose object is not the premise's"),
    (9, _edit("(b) Eve has", "(b) Ann has"), "question", "with different objects"),
    (9, _edit("Which one", "If Eve think there isn't a plate inside the fridge, which one"), "question", "only type 2.1"),
    (6, _set("question", RECORDS[5]["question"] + " "), "question", "not the release's text shape"),
])
def test_each_bad_record_is_named_by_file_line_and_field(tmp_path: Path, line: int, change: Any, field: str,
                                                         why: str) -> None:
    root = copy_with(tmp_path, line, change)
    where = f"file {root / 'mmtomqa' / FILE}, record line {line}" + (f", field '{field}'" if field else "")
    with pytest.raises(TomDataError, match=why) as err:
        load(root)
    assert str(err.value).startswith(where + ":")


def test_a_doubled_id_text_or_json_key_is_named(tmp_path: Path) -> None:
    root = copy_with(tmp_path, 1, lambda r: None)
    second = json.dumps(RECORDS[1])
    for again in (second, second.replace('"end_time": 4', '"end_time": 5')):
        (root / "mmtomqa" / FILE).write_text(RAW.read_text() + again + "\n")
        with pytest.raises(TomDataError, match="record line 15, field 'question': the same .* as line 2"):
            load(root)
    (root / "mmtomqa" / FILE).write_text(RAW.read_text().replace('"answer": "a"', '"answer": "a", "answer": "b"', 1))
    with pytest.raises(TomDataError, match="record line 1, field 'answer': the key 'answer' is given twice"):
        load(root)


def test_a_whole_copy_is_checked_by_counts_and_checksum_and_the_sha256_setting_pins_another(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match=r"not the whole MMToM-QA release \(14 records; type 1.1: 2 of 100.*"
                                           r"line 7 is type 2.1; 7 episodes, not 134\): restore it.*partial=true"):
        MMToMQA().load(DataSource(FIXTURES, False, tmp_path))
    digest = hashlib.sha256(RAW.read_bytes()).hexdigest()
    assert len(MMToMQA({"sha256": digest}).load(DataSource(FIXTURES, False, tmp_path))) == 14
    with pytest.raises(TomDataError, match=f"this file has sha256 {digest}, not the {'0' * 64} given"):
        MMToMQA({"sha256": "0" * 64}).load(DataSource(FIXTURES, False, tmp_path))
    with pytest.raises(TomConfigError, match="expected a sha256 of 64 hex digits"):
        MMToMQA({"sha256": "abc"}).load(DataSource(FIXTURES, False, tmp_path))


def test_download_checks_the_pin_writes_a_manifest_and_rechecks_the_cache(tmp_path: Path) -> None:
    mirror, cache = tmp_path / "mirror", tmp_path / "cache"
    (mirror / "Benchmark").mkdir(parents=True)
    shutil.copyfile(RAW, mirror / FILE)
    url = mirror.as_uri() + "/"
    with pytest.raises(TomDataError, match="54a6b908f793"):  # the pinned release's sha256: the fixture is not it
        MMToMQA({"source_url": url}).load(DataSource(None, True, cache))
    assert not list(cache.glob("mmtomqa/*/Benchmark/questions.json"))
    digest = hashlib.sha256(RAW.read_bytes()).hexdigest()
    assert len(MMToMQA({"source_url": url, "sha256": digest}).load(DataSource(None, True, cache))) == 14
    manifest = json.loads(next(cache.glob("mmtomqa/*/.pytest-tom-manifest.json")).read_text())
    assert manifest == {"source": url, "files": {FILE: digest}}
    shutil.rmtree(mirror)  # from now on the verified cache is used, without a download
    assert len(MMToMQA({"sha256": digest}).load(DataSource(None, False, cache))) == 14
    cached = next(cache.glob("mmtomqa/*/Benchmark/questions.json"))
    cached.write_text(cached.read_text().replace("Ann", "Ada"))
    with pytest.raises(TomDataError, match="no longer matches the sha256 recorded.*--tom-download"):
        MMToMQA({"sha256": digest}).load(DataSource(None, False, cache))
    with pytest.raises(TomDataError, match="MMToM-QA data not found.*mmtomqa/Benchmark/questions.json"):
        MMToMQA().load(DataSource(FIXTURES / "hitom", False, tmp_path / "none"))
