"""SimpleToM data: records to samples, every malformed record named, completeness, download and its manifest."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.file_server import Server

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.simpletom import SimpleToM, release
from pytest_tom.evals.simpletom.data import (
    CONFIGS,
    OFFICIAL_REVISION,
    OFFICIAL_ROWS,
    SimpleToMSample,
    read_release,
    samples,
)
from pytest_tom.evals.simpletom.derived import balance_checks, chains
from pytest_tom.fetch import MANIFEST, sha256_file
from pytest_tom.framework.base import DataSource
from pytest_tom.sample import Choice

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "simpletom"
SMALL_ROWS = dict.fromkeys(CONFIGS, 10)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A writable copy of the fixtures in the release layout, under <root>/simpletom."""
    dest = tmp_path / "root" / "simpletom"
    shutil.copytree(FIXTURES, dest)
    return dest


def load(root: Path, *, partial: bool = True, download: bool = False, cache: Path | None = None,
         **settings: str) -> list[SimpleToMSample]:
    bench = SimpleToM({"partial": "true" if partial else "false", **settings})
    return bench.load(DataSource(root=root, download=download, cache_dir=cache or root / "cache"))


def rewrite(path: Path, line: int, change: dict[str, Any]) -> None:
    lines = path.read_text().splitlines()
    rec = json.loads(lines[line - 1])
    for k, v in change.items():
        if v is ...:
            rec.pop(k)
        else:
            rec[k] = v
    lines[line - 1] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")


# --- samples ---------------------------------------------------------------------------------------------------


def test_the_fixtures_become_one_sample_per_question_joined_by_story() -> None:
    got = samples(read_release(FIXTURES))
    assert len(got) == 30
    first = got[0]
    assert first.id == "jam_jar_sev1-ms" and [s.id for s in got[:3]] == ["jam_jar_sev1-ms", "jam_jar_sev1-behavior",
                                                                         "jam_jar_sev1-judgment"]
    assert first.choices == (Choice("A", "Yes"), Choice("B", "No")) and first.gold == "B"
    assert first.facets == {"question_type": "mental_state", "scenario": "food_item_in_grocery_store",
                            "severity": "sev1", "story": "jam_jar_sev1"}
    assert first.marks == ("simpletom", "mental_state", "food_item_in_grocery_store", "sev1")
    assert first.source == "simpletom/mental-state-qa/test.jsonl line 1"
    judgment = got[2]
    assert judgment.question.endswith("can be best described as: ")  # inserted raw, trailing space kept
    behavior = got[1]
    x = behavior.extra
    assert (x.story_id, x.question_type, x.severity) == ("jam_jar_sev1", "behavior", "1")
    assert (x.ms_question, x.ms_choices, x.ms_gold) == (first.question, first.choices, first.gold)


def test_severity_siblings_share_gold_text_and_stay_distinct() -> None:
    got = {s.id: s for s in samples(read_release(FIXTURES))}
    siblings = [got[f"jam_jar_sev{n}-behavior"] for n in (1, 2, 3)]
    gold_texts = {s.choices["AB".index(str(s.gold))].text for s in siblings}
    assert gold_texts == {"pay for the jam"}
    assert len({s.question for s in siblings}) == 1 and len({s.id for s in siblings}) == 3
    assert [s.facets["severity"] for s in siblings] == ["sev1", "sev2", "sev3"]


def test_chains_and_balance_checks_are_built_from_the_samples() -> None:
    got = samples(read_release(FIXTURES))
    cs = chains(got)
    assert len(cs) == 10 and cs[0].members == ("jam_jar_sev1-ms", "jam_jar_sev1-behavior", "jam_jar_sev1-judgment")
    assert cs[0].marks == ("simpletom", "chain", "food_item_in_grocery_store", "sev1")
    assert [d.id for d in balance_checks(got)] == ["mental_state", "behavior", "judgment"]
    assert balance_checks(got[:9]) == []  # too few questions of a type to judge a constant answerer


# --- malformed records -----------------------------------------------------------------------------------------



def _error_after(copy: Path, config: str, line: int, change: dict[str, Any]) -> tuple[Path, str]:
    """Rewrite one record of a copy of the fixtures and return the file and the load error's text."""
    path = copy / config / "test.jsonl"
    rewrite(path, line, change)
    with pytest.raises(TomDataError) as info:
        load(copy.parent)
    return path, str(info.value)

@pytest.mark.parametrize(("config", "line", "change", "field", "why"), [
    ("behavior-qa", 3, {"answerKey": "C"}, "answerKey", "gold 'C' is not 'A' or 'B'"),
    ("behavior-qa", 2, {"choices": {"text": ["x"], "label": ["A"]}}, "choices.text", "a list of 2 option texts"),
    ("judgment-qa", 4, {"choices": {"text": ["x", "y"], "label": ["B", "A"]}}, "choices.label", "expected labels"),
    ("mental-state-qa", 5, {"id": "lunchbox_sev3_judge"}, "id", "does not end in '_aware'"),
    ("mental-state-qa", 1, {"question": 7}, "question", "expected text, got int 7"),
    ("judgment-qa", 2, {"story": ...}, "story", "missing"),
    ("behavior-qa", 1, {"scenario_name": "kitchen"}, "scenario_name", "unknown scenario 'kitchen'"),
    ("story-data", 6, {"severity_original": 4}, "severity_original", "severity 4 is not 1, 2 or 3"),
    ("behavior-qa", 7, {"story": "Another story."}, "story", "story text differs from story-data/test.jsonl line 7"),
    ("judgment-qa", 8, {"id": "nobody_sev1_judge"}, "id", "story 'nobody_sev1' is not in story-data"),
    ("behavior-qa", 9, {"id": "used_bike_sev2_action"}, "id", "also on line 7"),
])
def test_every_malformed_record_names_file_line_and_field(copy: Path, config: str, line: int, change: dict[str, Any],
                                                          field: str, why: str) -> None:
    path, text = _error_after(copy, config, line, change)
    assert str(path) in text and f"line {line}" in text and field in text and why in text


def test_a_doubled_key_is_an_error_not_a_flipped_gold(copy: Path) -> None:
    path = copy / "mental-state-qa" / "test.jsonl"
    lines = path.read_text().splitlines()
    assert lines[0].endswith('"answerKey": "B"}')
    lines[0] = lines[0][:-1] + ', "answerKey": "A"}'  # json.loads alone keeps the last copy: gold B becomes A
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TomDataError, match=r"mental-state-qa/test.jsonl, record line 1, field 'answerKey': the key "
                                           r"'answerKey' is given twice"):
        load(copy.parent)


def test_a_raw_line_separator_inside_a_story_is_read_as_text(copy: Path) -> None:
    for config in CONFIGS:  # valid JSON: U+2028 need not be escaped, but str.splitlines splits records at it
        path = copy / config / "test.jsonl"
        path.write_text(path.read_text().replace("Priya puts the jar", "Priya\u2028puts the jar"), encoding="utf-8")
    assert "\u2028" in (copy / "story-data" / "test.jsonl").read_text(encoding="utf-8")
    got = {s.id: s for s in load(copy.parent)}
    assert len(got) == 30 and got["jam_jar_sev1-ms"].context.render().count("Priya\u2028puts the jar") == 1


def test_a_byte_order_mark_and_crlf_line_ends_are_read(copy: Path) -> None:
    for config in CONFIGS:
        path = copy / config / "test.jsonl"
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    plain = {s.id: (s.context.render(), s.gold) for s in load(FIXTURES.parent)}
    assert {s.id: (s.context.render(), s.gold) for s in load(copy.parent)} == plain


@pytest.mark.parametrize(("config", "line", "change", "field", "why"), [
    ("mental-state-qa", 2, {"choices": {"text": ["No", "No"], "label": ["A", "B"]}}, "choices.text[1]",
     "options choices.text[0] and choices.text[1] have the gold's text 'No'"),
    ("story-data", 4, {"questions": [{"question_id": "jam_jar_sev1_aware"}]}, "questions[0].question_id",
     "question id 'jam_jar_sev1_aware' is not a question of story 'lunchbox_sev2'"),
    ("mental-state-qa", 3, {"question": 'Is Priya likely to be aware that "The jar has a small dent."?'}, "question",
     "question differs from the one story-data/test.jsonl line 3 lists for this id"),
    ("behavior-qa", 1, {"answerKey": "B"}, "answerKey",
     "the gold B is 'swap the jar for one with an undamaged lid', but story-data/test.jsonl line 1 gives 'pay for the "
     "jam' as this question's correct answer"),
])
def test_an_id_means_one_story_and_one_gold_in_every_config(copy: Path, config: str, line: int, change: dict[str, Any],
                                                             field: str, why: str) -> None:
    path, text = _error_after(copy, config, line, change)
    assert f"{path}, record line {line}, field {field!r}: {why}" in text


def test_one_story_text_under_two_ids_is_named(copy: Path) -> None:
    path = copy / "story-data" / "test.jsonl"
    first = json.loads(path.read_text().splitlines()[0])
    rewrite(path, 2, {"story": first["story"], "key_information": first["key_information"]})
    with pytest.raises(TomDataError, match=r"record line 2, field 'story': story 'jam_jar_sev2' has the same text as "
                                           r"story 'jam_jar_sev1' on line 1"):
        load(copy.parent)
    rewrite(path, 2, {"story": "Something else entirely happened."})
    with pytest.raises(TomDataError, match=r"record line 2, field 'story': the story does not contain its "
                                           r"key_information"):
        load(copy.parent)


def test_invalid_json_names_its_line(copy: Path) -> None:
    path = copy / "judgment-qa" / "test.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(TomDataError, match=r"line 11.*invalid JSON"):
        load(copy.parent)


# --- completeness ----------------------------------------------------------------------------------------------


def test_a_partial_copy_must_say_so(copy: Path) -> None:
    with pytest.raises(TomDataError) as info:
        load(copy.parent, partial=False)
    text = str(info.value)
    assert "incomplete" in text and "has 10 rows, not 1147" in text and "--tom-set simpletom.partial=true" in text
    assert len(load(copy.parent)) == 30


def test_the_whole_release_by_its_row_counts(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(release, "OFFICIAL_ROWS", SMALL_ROWS)
    assert len(load(copy.parent, partial=False)) == 30
    (copy / "judgment-qa" / "test.jsonl").unlink()
    with pytest.raises(TomDataError, match="this file is missing") as info:
        load(copy.parent, partial=False)
    assert "judgment-qa/test.jsonl" in str(info.value)


def test_a_story_without_one_of_its_questions_is_named(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(release, "OFFICIAL_ROWS", {**SMALL_ROWS, "behavior-qa": 9})
    path = copy / "behavior-qa" / "test.jsonl"
    path.write_text("".join(line + "\n" for line in path.read_text().splitlines()[1:]))
    with pytest.raises(TomDataError, match=r"lacks the behavior question of 1 stories \('jam_jar_sev1'\)"):
        load(copy.parent, partial=False)
    got = load(copy.parent)  # partial: the story keeps its other questions, and loses its chain
    assert len(got) == 29 and len(chains(got)) == 9


def test_story_data_is_needed_even_for_a_partial_copy(copy: Path) -> None:
    shutil.rmtree(copy / "story-data")
    with pytest.raises(TomDataError, match="story-data/test.jsonl is missing"):
        load(copy.parent)


def test_no_data_names_where_it_looked_and_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match=r"SimpleToM data not found; looked in .*--tom-download.*cccd8ae9a4ef"):
        load(tmp_path)


def test_custom_checksums_check_a_local_copy(copy: Path) -> None:
    sums = {c: sha256_file(copy / c / "test.jsonl") for c in CONFIGS}
    pins = ",".join(f"{c}={v}" for c, v in sums.items())
    assert len(load(copy.parent, partial=False, sha256=pins)) == 30
    manifest = copy.parent / "SHA256SUMS"
    manifest.write_text("".join(f"{v}  simpletom/{c}/test.jsonl\n" for c, v in sums.items()))
    assert len(load(copy.parent, partial=False, sha256=str(manifest))) == 30
    rewrite(copy / "judgment-qa" / "test.jsonl", 1, {"question": "Was that fine?"})
    with pytest.raises(TomDataError, match=r"not the one given in --tom-set simpletom.sha256"):
        load(copy.parent, partial=False, sha256=pins)


@pytest.mark.parametrize(("value", "message"), [
    ("mental-state-qa=" + "0" * 64, "no sha256 for behavior-qa"),
    ("other=" + "0" * 64, "'other' is not a SimpleToM config"),
    ("behavior-qa=xyz", "64 hex digits"),
])
def test_bad_checksum_settings_are_refused(value: str, message: str, tmp_path: Path) -> None:
    with pytest.raises((TomConfigError, TomDataError), match=message):
        load(tmp_path, sha256=value)


# --- download (a local HTTP server; never the network) ---------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    monkeypatch.setattr(release, "OFFICIAL_ROWS", SMALL_ROWS)  # the fixtures stand in for the pinned release
    s = Server()
    s.files.update({f"rev/{c}/test.jsonl": (FIXTURES / c / "test.jsonl").read_bytes() for c in CONFIGS})
    s.url += "/rev/"
    yield s
    s.close()


def test_a_download_is_checked_recorded_and_reused_offline(server: Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    got = load(tmp_path / "empty", partial=False, download=True, cache=cache, source_url=server.url)
    assert len(got) == 30 and len(server.requests) == 4
    folder = cache / "simpletom" / OFFICIAL_REVISION
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["files"] == {f"{c}/test.jsonl": sha256_file(FIXTURES / c / "test.jsonl") for c in CONFIGS}
    assert "structure" in manifest["checked"]
    # later runs, online or not, reuse the verified copy without asking the server again
    assert len(load(tmp_path / "empty", partial=False, download=True, cache=cache, source_url=server.url)) == 30
    assert len(load(tmp_path / "empty", partial=False, cache=cache)) == 30
    assert len(server.requests) == 4
    # a copy damaged after the download is refused offline, and fetched again online
    rewrite(folder / "judgment-qa" / "test.jsonl", 1, {"answerKey": "B"})
    with pytest.raises(TomDataError, match=r"no longer matches the sha256 recorded when it was verified") as info:
        load(tmp_path / "empty", cache=cache)
    assert "judgment-qa" in str(info.value)
    assert len(load(tmp_path / "empty", download=True, cache=cache, source_url=server.url)) == 30
    assert len(server.requests) == 8


def test_a_download_that_is_not_the_release_is_refused_and_not_recorded(server: Server, tmp_path: Path) -> None:
    body = server.files["rev/behavior-qa/test.jsonl"]
    server.files["rev/behavior-qa/test.jsonl"] = b"".join(body.splitlines(keepends=True)[:5])
    cache = tmp_path / "cache"
    with pytest.raises(TomDataError, match=r"not the pinned SimpleToM release .*has 5 rows, not 10"):
        load(tmp_path / "empty", download=True, cache=cache, source_url=server.url)
    folder = cache / "simpletom" / OFFICIAL_REVISION
    assert not (folder / MANIFEST).exists()
    with pytest.raises(TomDataError, match="no readable record of a verified download"):
        load(tmp_path / "empty", cache=cache)


def test_a_download_is_checked_against_given_checksums(server: Server, tmp_path: Path) -> None:
    sums = {c: sha256_file(FIXTURES / c / "test.jsonl") for c in CONFIGS}
    wrong = {**sums, "story-data": "0" * 64}
    with pytest.raises(TomDataError, match="checksum mismatch"):
        load(tmp_path / "empty", download=True, cache=tmp_path / "c", source_url=server.url,
             sha256=",".join(f"{c}={v}" for c, v in wrong.items()))
    got = load(tmp_path / "empty", partial=False, download=True, cache=tmp_path / "c", source_url=server.url,
               sha256=",".join(f"{c}={v}" for c, v in sums.items()))
    assert len(got) == 30


def test_a_missing_file_on_the_server_is_a_clear_error(server: Server, tmp_path: Path) -> None:
    del server.files["rev/story-data/test.jsonl"]
    with pytest.raises(TomDataError, match=r"download of .*story-data/test.jsonl failed"):
        load(tmp_path / "empty", download=True, cache=tmp_path / "c", source_url=server.url)


def test_the_pinned_row_counts_are_the_papers() -> None:
    assert OFFICIAL_ROWS == dict.fromkeys(CONFIGS, 1147)


@pytest.mark.realdata
def test_the_real_release_is_whole(real_data_dir: Path) -> None:
    got = load(real_data_dir, partial=False)
    assert len(got) == 3441 and len(chains(got)) == 1147
