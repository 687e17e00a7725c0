"""ToMATO loader: the fixture in the official layout, record errors that name file/record/field, completeness, download."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.file_server import Server

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals import Registry
from pytest_tom.evals.tomato import ToMATO
from pytest_tom.evals.tomato import release as rel
from pytest_tom.evals.tomato.data import TABLE8, parse_big_five, pattern, read_file
from pytest_tom.fetch import sha256_file
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.pinned import git_blob

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
DATASET = FIXTURES / "tomato" / "dataset"


def load(subset: str = "all", root: Path = FIXTURES, partial: bool = True, **kw: Any) -> list[Any]:
    b = ToMATO({"subset": subset, "partial": partial, **kw})
    return b.load(DataSource(root, False, root / "no-cache"))


def records() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((DATASET / "tomato.json").read_text())
    return data


def write(tmp_path: Path, recs: Any, name: str = "tomato.json") -> Path:
    folder = tmp_path / "tomato" / "dataset"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(recs))
    return tmp_path


def test_registered_and_every_subset_loads() -> None:
    assert Registry().get("tomato") is ToMATO
    sizes = {s: len(load(s)) for s in ("all", "first", "second", "fb")}
    assert sizes == {"all": 20, "first": 10, "second": 10, "fb": 6}


def test_fixture_covers_states_orders_false_beliefs_and_both_levels_of_every_factor() -> None:
    samples = load()
    cells = Counter((s.extra.mental_state, s.extra.order, s.extra.false_belief) for s in samples)
    for state in ("belief", "intention", "desire", "emotion", "knowledge"):
        assert cells[(state, 1, False)] == 2
        assert cells[(state, 2, True)] >= 1
    for order in ("first", "second"):
        for factor in ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism"):
            assert {s.facets[factor] for s in samples if s.facets["order"] == order} == {"high", "low"}


def test_sample_fields_facets_and_marks() -> None:
    s = next(x for x in load() if x.id == "2nd-order-belief-about-belief_K3Q7A_1")
    assert s.gold == "C" and [c.label for c in s.choices] == ["A", "B", "C", "D"]
    assert s.choice("C").text == "He thinks that she thinks the greenhouse is the best place for them"
    assert s.context.render() == records()[1]["conversation"]  # byte for byte
    assert s.facets == {
        "mental_state": "belief", "order": "second", "false_belief": "true", "openness": "low",
        "conscientiousness": "low", "extraversion": "high", "agreeableness": "high", "neuroticism": "high",
        "big_five": "O-C-E+A+N+", "conversation": s.extra.conversation_id,
    }
    assert s.marks == ("tomato", "belief", "second_order", "false_belief", "openness_low", "conscientiousness_low",
                       "extraversion_high", "agreeableness_high", "neuroticism_high")
    assert set(s.marks) <= set(ToMATO.mark_docs)
    assert s.characters == ("Maya Patel", "Omar Ruiz", "Maya", "Omar")
    assert s.source == "tomato/dataset/tomato.json record 1 (q_id 2nd-order-belief-about-belief_K3Q7A_1)"
    # one conversation per (environment, agent pair, mental state): its four questions share a cluster
    same = [x for x in load() if x.facets["conversation"] == s.facets["conversation"]]
    assert len(same) == 4 and {x.extra.mental_state for x in same} == {"belief"}
    assert ToMATO().cluster(s.facets, s.id) == s.facets["conversation"]


def test_big_five_parsing() -> None:
    text = ("Openness to Experience - High; Conscientiousness - Low; Extraversion - High; Agreeableness - Low; "
            "Neuroticism - Low")
    levels = parse_big_five(text)
    assert levels == {"openness": "high", "conscientiousness": "low", "extraversion": "high", "agreeableness": "low",
                      "neuroticism": "low"}
    assert pattern(levels) == "O+C-E+A-N-"
    with pytest.raises(ValueError, match="no level for Neuroticism"):
        parse_big_five(text.rsplit(";", 1)[0])
    with pytest.raises(ValueError, match="'Openness - High'"):
        parse_big_five(text.replace("Openness to Experience", "Openness"))


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"a_idx": 4}, "a_idx", "expected one of 0, 1, 2, 3, got 4"),
    ({"a_idx": True}, "a_idx", "got True"),
    ({"a_str": "something else"}, "a_str", "a_str is not option a0"),
    ({"mental_state": "percept"}, "mental_state", "unknown mental state 'percept'"),
    ({"order": "1"}, "order", "expected one of 1, 2"),
    ({"false_belief": "yes"}, "false_belief", "expected true or false"),
    ({"false_belief": True}, "order", "must be second-order"),
    ({"big_five": "Openness to Experience - Medium"}, "big_five", "High|Low"),
    ({"a2": ""}, "a2", "empty text"),
    ({"q": None}, "q", "missing"),
    ({"conversation": 7}, "conversation", "expected text, got int"),
    ({"sotopia_agents": ["only-one"]}, "sotopia_agents", "two agent ids"),
])
def test_bad_record_names_file_record_and_field(tmp_path: Path, change: dict[str, Any], field: str,
                                                 message: str) -> None:
    recs = records()
    recs[0] = {**recs[0], **change}
    root = write(tmp_path, recs)
    with pytest.raises(TomDataError) as exc:
        load(root=root)
    text = str(exc.value)
    assert "tomato.json" in text and "record 0 (q_id '1st-order-belief_K3Q7A_0')" in text
    assert f"field {field!r}" in text and message in text


def test_file_level_errors(tmp_path: Path) -> None:
    recs = records()
    with pytest.raises(TomDataError, match="already used by record 0"):
        load(root=write(tmp_path / "dup", [recs[0], recs[0]]))
    with pytest.raises(TomDataError, match="expected a JSON list"):
        load(root=write(tmp_path / "obj", {"a": 1}))
    broken = tmp_path / "broken"
    write(broken, [])
    (broken / "tomato" / "dataset" / "tomato.json").write_text("[{")
    with pytest.raises(TomDataError, match="invalid JSON"):
        load(root=broken)
    # a first-order record in the false-belief file
    with pytest.raises(TomDataError, match="tomato_fb.json holds false-belief questions only") as exc:
        load("fb", root=write(tmp_path / "fb", [recs[0]], "tomato_fb.json"))
    assert "field 'false_belief'" in str(exc.value)


def test_local_copy_must_be_whole_unless_partial(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match="not the whole pinned ToMATO file") as exc:
        load("fb", partial=False)
    assert "first belief: 2 of 551" not in str(exc.value)  # the fb file holds no first-order questions
    assert "second belief: 2 of 237" in str(exc.value) and "--tom-set tomato.partial=true" in str(exc.value)
    assert len(load("fb", partial=True)) == 6


def test_custom_sha256_checks_a_local_copy_instead_of_counts(tmp_path: Path) -> None:
    got = sha256_file(DATASET / "tomato_first.json")
    assert len(load("first", partial=False, sha256=f"tomato_first.json={got}")) == 10
    with pytest.raises(TomDataError, match="not the 0000"):
        load("first", partial=False, sha256=f"tomato_first.json={'0' * 64}")
    with pytest.raises(TomConfigError):
        ToMATO({"sha256": "tomato.json=abc"})


def test_a_doubled_key_two_equal_options_and_a_conversation_without_speakers_are_errors(tmp_path: Path) -> None:
    recs = records()
    text = json.dumps(recs)
    doubled = text.replace('"a_idx": ', '"a_idx": 3, "a_idx": ', 1)  # json.loads keeps the last copy: gold moves
    assert json.loads(doubled)[0]["a_idx"] != 3
    root = write(tmp_path / "dup", [])
    (root / "tomato" / "dataset" / "tomato.json").write_text(doubled)
    with pytest.raises(TomDataError, match=r"tomato.json, record #0 \(q_id '1st-order-belief_K3Q7A_0'\), field "
                                           r"'a_idx': the key 'a_idx' is given twice"):
        load(root=root)
    gold = recs[0]["a_idx"]
    i, j = [k for k in range(4) if k != gold][:2]
    for n, (change, same) in enumerate([({f"a{i}": recs[0][f"a{gold}"]}, "the gold's"),  # the gold is ambiguous
                                        ({f"a{j}": recs[0][f"a{i}"]}, "the same")]):  # a 4-option item with 3
        with pytest.raises(TomDataError, match=rf"record 0 \(q_id '1st-order-belief_K3Q7A_0'\), field 'a\d': options "
                                               rf"a\d and a\d have {same} text"):
            load(root=write(tmp_path / f"opt{n}", [{**recs[0], **change}]))
    for i, (conv, found) in enumerate([("Hi.\nHow are you?", "no line is a 'Name: utterance' turn"),
                                       ('Maya: "Hi."\nMaya: "Me again."', "only 'Maya' speaks")]):
        with pytest.raises(TomDataError, match=rf"field 'conversation': a ToMATO conversation is between two agents, "
                                               rf"but {found}"):
            load(root=write(tmp_path / f"conv{i}", [{**recs[0], "conversation": conv}]))


def _as_pinned(monkeypatch: pytest.MonkeyPatch, subset: str) -> None:
    """The fixture's file of `subset` stands in for the pinned release: its counts (and checksums) are Table 8's."""
    from pytest_tom.evals.tomato import data
    found = data.counts(load(subset))
    monkeypatch.setattr(rel, "expected_counts", lambda _subset: found)


def test_a_local_file_edited_in_place_fails_its_pinned_checksum_unless_partial_or_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write(tmp_path, [], "tomato_fb.json")
    path = root / "tomato" / "dataset" / "tomato_fb.json"
    path.write_bytes((DATASET / "tomato_fb.json").read_bytes())
    _as_pinned(monkeypatch, "fb")
    monkeypatch.setitem(rel.OFFICIAL_SHA256, "tomato_fb.json", sha256_file(path))  # type: ignore[index]
    assert len(load("fb", root=root, partial=False)) == 6
    recs = json.loads(path.read_text())
    recs[0]["a_idx"], recs[0]["a_str"] = (recs[0]["a_idx"] + 1) % 4, recs[0][f"a{(recs[0]['a_idx'] + 1) % 4}"]
    path.write_text(json.dumps(recs))  # the gold moved: same counts, other scores
    with pytest.raises(TomDataError, match=r"tomato_fb.json: this file has sha256 \w+, not the \w+ of the pinned "
                                           r"tomato release.*--tom-set tomato.partial=true"):
        load("fb", root=root, partial=False)
    assert len(load("fb", root=root, partial=True)) == 6
    assert len(load("fb", root=root, partial=False, sha256=f"tomato_fb.json={sha256_file(path)}")) == 6


def test_a_local_file_without_a_sha256_pin_is_checked_by_its_git_blob_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _as_pinned(monkeypatch, "first")
    monkeypatch.setitem(rel.OFFICIAL_GIT_BLOBS, "tomato_first.json", "0" * 40)  # type: ignore[index]
    with pytest.raises(TomDataError, match=r"tomato_first.json: this file's git blob id is \w+, not the 0{40}"):
        load("first", partial=False)
    monkeypatch.setitem(rel.OFFICIAL_GIT_BLOBS, "tomato_first.json",  # type: ignore[index]
                        git_blob(DATASET / "tomato_first.json"))
    assert len(load("first", partial=False)) == 10


def test_missing_file_says_which_subsets_are_there(tmp_path: Path) -> None:
    root = write(tmp_path, [], "tomato_fb.json")
    with pytest.raises(TomDataError) as exc:
        load("all", root=root)
    text = str(exc.value)
    assert "no tomato.json (subset 'all')" in text and "choose it with --tom-set tomato.subset=fb" in text
    assert "--tom-download" in text


@pytest.fixture
def server() -> Iterator[tuple[Server, str]]:
    srv = Server()
    try:
        yield srv, f"{srv.url}/dataset/"
    finally:
        srv.close()


def test_download_checks_the_git_blob_id_and_rechecks_the_cache(tmp_path: Path, server: tuple[Server, str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    srv, url = server
    body = (DATASET / "tomato_first.json").read_bytes()
    srv.files["dataset/tomato_first.json"] = body
    blob = git_blob(DATASET / "tomato_first.json")
    monkeypatch.setitem(rel.OFFICIAL_GIT_BLOBS, "tomato_first.json", blob)  # type: ignore[index]
    source = DataSource(None, True, tmp_path / "cache")
    path, verified = rel.locate(source, "first", url, {})
    assert verified and path.read_bytes() == body and len(srv.requests) == 1
    # the cache is reused (after its manifest check), without another request
    assert rel.locate(DataSource(None, False, tmp_path / "cache"), "first", url, {}) == (path, True)
    assert len(srv.requests) == 1
    path.write_bytes(body.replace(b"Maya", b"Mara"))
    with pytest.raises(TomDataError, match="no longer matches the sha256 recorded"):
        rel.locate(DataSource(None, False, tmp_path / "cache"), "first", url, {})
    # a server with other bytes is refused: its blob id is not the pinned one
    srv.files["dataset/tomato_first.json"] = body + b"\n"
    with pytest.raises(TomDataError, match="git blob id is"):
        rel.locate(DataSource(None, True, tmp_path / "cache2"), "first", url, {})
    assert not (tmp_path / "cache2" / "tomato" / rel.OFFICIAL_REVISION / "tomato_first.json").exists()


@pytest.mark.realdata
def test_real_false_belief_file(real_data_dir: Path) -> None:
    """The released tomato_fb.json: 806 second-order false-belief questions with Table 8's counts and 15 patterns."""
    samples = load("fb", root=real_data_dir, partial=False)
    assert len(samples) == 806 == len({s.id for s in samples})
    marks = Counter(m for s in samples for m in s.marks)
    assert marks["tomato"] == marks["second_order"] == marks["false_belief"] == 806
    assert marks["first_order"] == 0
    assert {st: marks[st] for st in TABLE8["fb"]} == TABLE8["fb"]
    for factor in ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism"):
        assert marks[f"{factor}_high"] + marks[f"{factor}_low"] == 806
    assert marks["neuroticism_high"] == 204 and marks["openness_high"] == 470
    assert len({s.facets["big_five"] for s in samples}) == 15
    assert len({s.facets["conversation"] for s in samples}) == 422
    assert Counter(s.gold for s in samples) == {"A": 195, "B": 203, "C": 201, "D": 207}
    assert all(s.context.render().count("\n") == 15 for s in samples)
    assert read_file(real_data_dir / "tomato" / "dataset" / "tomato_fb.json")[0].id == samples[0].id
