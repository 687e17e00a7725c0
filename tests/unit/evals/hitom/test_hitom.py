"""Hi-ToM: the loader and its release checks, the official prompts, the answer rule and the gold setting.

Everything runs on the project's own fixture (fixtures/hitom/: two invented stories in the
release's layout, see its make_fixture.py), read back with plain file reads where a loader bug
could hide.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.hitom import HiToM, data, extract, request, score
from pytest_tom.evals.hitom.data import LAYOUT, chain, rel, render
from pytest_tom.framework.base import DataSource
from pytest_tom.framework.release import tree_digest
from pytest_tom.record import Outcome

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
ROOT = FIXTURES / "hitom"


def load(root: Path = FIXTURES, **settings: object) -> list:
    return HiToM({"partial": True, **settings}).load(DataSource(root, False, root / ".cache"))


def test_the_fixture_loads_as_20_items_with_ids_facets_marks_and_characters() -> None:
    items = load()
    assert len(items) == 20 and len({s.id for s in items}) == 20
    s = next(s for s in items if s.id == "Tell-MC-length_1-sample_1-order_2")
    assert s.facets == {"order": "2", "length": "1", "deception": "tell", "style": "vanilla",
                        "story": "Tell/length_1/sample_1", "chain": "vanilla/Tell/length_1/sample_1"}
    assert s.marks == ("hitom", "order2", "length1", "vanilla", "deception")
    assert s.characters == ("Ivy", "Max", "Eli", "Noa", "Sam")
    assert s.question == "Where does Ivy think Max thinks the fig is?"
    assert [c.text for c in s.choices][:3] == ["green_basket", "red_drawer", "blue_pail"] and len(s.choices) == 15
    assert s.gold == "B" and s.source == "Hi-ToM_prompts/Tell/MC/length_1/sample_1/order_2.txt"
    assert "deception" not in next(s for s in items if s.facets["deception"] == "no_tell").marks
    assert [s.extra.style for s in load(prompt="cot")] == ["CoT"] * 10
    assert [s.extra.style for s in load(prompt="vanilla")] == ["MC"] * 10


def test_every_prompt_is_the_release_prompt_file_byte_for_byte() -> None:
    for s in load():
        sent = request(s, 0).messages
        assert len(sent) == 1 and sent[0].role == "user"
        assert sent[0].content == render(s) == (ROOT / s.source).read_bytes().decode()
    assert request(s, 0).settings.max_new_tokens == 2000 and request(s, 64).settings.max_new_tokens == 64
    assert request(s, 0).settings.temperature == 0.0


@pytest.mark.parametrize(("gold", "vanilla", "cot"), [("cot", "red_box", "red_box"), ("mc", "blue_crate", "blue_crate"),
                                                       ("own", "blue_crate", "red_box")])
def test_the_gold_setting_picks_the_answer_key_where_the_folders_disagree(gold: str, vanilla: str, cot: str) -> None:
    items = {s.id: s for s in load(gold=gold)}
    v, c = items["No_Tell-MC-length_1-sample_1-order_4"], items["No_Tell-CoT-length_1-sample_1-order_4"]
    assert (v.choice(v.gold_label).text, c.choice(c.gold_label).text) == (vanilla, cot)
    assert (v.extra.gold_mc, v.extra.gold_cot) == ("blue_crate", "red_box")
    record = score(v, "C. green_tub", gold)
    assert record.outcome is Outcome.INCORRECT and record.gold == vanilla
    assert f"the MC and CoT data files disagree (MC blue_crate, CoT red_box), gold={gold}" in record.message


CHOICES = {"A": "red_box", "B": "blue_crate", "L": "green_pot"}


@pytest.mark.parametrize(("answer", "container"), [
    ("B. blue_crate", "blue_crate"),
    ("Answer: B. blue_crate", "blue_crate"),  # the official rule drops the token 'Answer:'
    ("\n\n  A. red_box\nBecause Mia left before Leo moved it to B. blue_crate", "red_box"),  # first non-blank line
    ("B. blue_crate. Leo moved it there.", "blue_crate"),  # text may follow the container
    ("L. Green_Pot", "green_pot"),  # the name is lower-cased
    ("C. red_box", "red_box"),  # the container decides, not the letter (as upstream)
    ("B", "blue_crate"), ("(B)", "blue_crate"), ("B.", "blue_crate"), ("L)", "green_pot"),  # a bare letter
    ("Let's think step by step.\nB. blue_crate", None),  # reasoning first: the first line is no answer
    ("The answer is B. blue_crate", None), ("blue_crate", None), ("", None), (None, None),
])
def test_the_first_line_rule(answer: str | None, container: str | None) -> None:
    assert extract(answer, CHOICES) == container


def test_score_outcomes_and_the_random_models_answer_format() -> None:
    s = next(s for s in load() if s.id == "No_Tell-CoT-length_1-sample_1-order_0")
    assert score(s, "C. green_tub", "cot").outcome is Outcome.CORRECT
    bad = score(s, "I think it is in the tub.", "cot")
    assert bad.outcome is Outcome.UNPARSEABLE and bad.parse_rate == 0.0 and "-> unparseable" in bad.message
    labels = request(s, 0).answer_labels
    assert labels[0] == "A. red_box" and len(labels) == 15 and all(extract(x, {}) for x in labels)


def test_question_chains_follow_the_templates() -> None:
    assert chain("Where is the plum really?") == ("plum", ())
    assert chain("Where does Leo really think the plum is?") == ("plum", ("Leo",))
    assert chain("Where does Ada think Finn thinks Mia thinks Leo thinks the plum is?") == (
        "plum", ("Ada", "Finn", "Mia", "Leo"))
    assert chain("Where does Leo think the plum is?") is None


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT, tmp_path / "hitom", ignore=shutil.ignore_patterns("*.py"))
    return tmp_path / "hitom"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(("tree", "old", "new", "message"), [
    ("Hi-ToM_data", "Answer: green_tub\n", "", "record line 17: expected Question:, Answer:, Choices:"),
    ("Hi-ToM_data", "Answer: green_tub", "Answer: purple_tub", "field 'Answer': the gold 'purple_tub' is not among"),
    ("Hi-ToM_data", "\n3 Mia made", "\n4 Mia made", "record line 5: expected story line '3 ...'"),
    ("Hi-ToM_data", "B. blue_crate", "B. red_box", "expected 15 distinct options"),
    ("Hi-ToM_data", "Story:", "Story", "record line 1: expected the MC instruction line"),
    ("Hi-ToM_data", "Note: You", "Note: you", "Choices:, a blank line and the release's Note line"),
    ("Hi-ToM_data", "the plum really", "the pear really", "the MC and CoT data files differ"),
    ("Hi-ToM_prompts", "11 Finn exited", "11 Finn left", "differs from its data file No_Tell/MC/length_1/sample_1/"),
])
def test_data_errors_name_the_file_line_and_field(tmp_path: Path, tree: str, old: str, new: str, message: str) -> None:
    _edit(_copy(tmp_path) / tree / "No_Tell/MC/length_1/sample_1/order_0.txt", old, new)
    with pytest.raises(TomDataError, match=f"^file {tmp_path}/hitom/{tree}/") as err:
        load(tmp_path)
    assert message in str(err.value)


@pytest.mark.parametrize(("order", "old", "new", "message"), [
    (1, "really think", "thinks", "order_1.txt, field 'Question': not the order-1 question template"),
    (2, "Mia think", "Zoe think", "order_3.txt, field 'Question': not the order-2 question with one agent prepended"),
    (1, "the plum is", "the fig is", "order_1.txt, field 'Question': not the order-0 question with one agent"),
])
def test_question_templates_and_nested_chains_are_checked(tmp_path: Path, order: int, old: str, new: str,
                                                          message: str) -> None:
    copy = _copy(tmp_path)
    for tree in ("Hi-ToM_data", "Hi-ToM_prompts"):
        for style in ("MC", "CoT"):
            _edit(copy / tree / f"No_Tell/{style}/length_1/sample_1/order_{order}.txt", old, new)
    with pytest.raises(TomDataError, match=f"^file {tmp_path}/hitom/Hi-ToM_prompts/No_Tell/") as err:
        load(tmp_path)
    assert message in str(err.value)


def test_a_missing_gold_file_is_named_and_a_missing_prompt_file_is_no_item(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / "Hi-ToM_data/Tell/CoT/length_1/sample_1/order_3.txt").unlink()
    for gold in ("cot", "own"):  # the CoT prompt needs it with either key
        with pytest.raises(TomDataError, match=rf"no data file Tell/CoT/length_1/sample_1/order_3.txt .*gold={gold}"):
            load(tmp_path, gold=gold)
    assert len(load(tmp_path, gold="mc")) == 20
    (copy / "Hi-ToM_prompts/Tell/CoT/length_1/sample_1/order_3.txt").unlink()
    assert len(load(tmp_path, gold="own")) == 19


def test_a_whole_copy_is_checked_by_count_and_digest_and_the_sha256_setting_pins_another(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match="1180 of 1200 files are missing.*partial=true"):
        HiToM().load(DataSource(FIXTURES, False, tmp_path))
    for key in LAYOUT:  # a full layout built from the fixture's No_Tell story: counts right, digests not the pinned
        for tree in ("Hi-ToM_data", "Hi-ToM_prompts"):
            target = tmp_path / "hitom" / tree / f"{rel(*key)}.txt"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / tree / f"{rel('No_Tell', key[1], 1, 1, key[4])}.txt", target)
    with pytest.raises(TomDataError, match="Hi-ToM_data: the files' digest is [0-9a-f]{64}, not the pinned 26b3f3d1"):
        HiToM().load(DataSource(tmp_path, False, tmp_path))
    pins = {t: tree_digest({f"{rel(*k)}.txt": tmp_path / "hitom" / t / f"{rel(*k)}.txt" for k in LAYOUT})
            for t in ("Hi-ToM_data", "Hi-ToM_prompts")}
    given = ",".join(f"{t}={d}" for t, d in pins.items())
    assert len(HiToM({"sha256": given}).load(DataSource(tmp_path, False, tmp_path))) == 1200


def test_settings_are_checked() -> None:
    with pytest.raises(TomConfigError, match="expected Hi-ToM_data=... and/or Hi-ToM_prompts="):
        HiToM({"sha256": "data.json=" + "0" * 64})
    with pytest.raises(TomConfigError, match="max_gap"):
        HiToM({"max_gap": "1.5"})
    with pytest.raises(TomConfigError, match="gold='paper': 'paper' is not one of cot, mc, own"):
        HiToM({"gold": "paper"})
    with pytest.raises(TomDataError, match="Hi-ToM data not found.*hitom/ from github.com/ying-hui-he"):
        HiToM().load(DataSource(FIXTURES / "tomato", False, FIXTURES))
    assert HiToM({"partial": "yes"}).describe()["settings"]["partial"] == "true"


def test_the_facet_table_declares_marks_strata_tables_gates_and_the_cluster() -> None:
    marks = HiToM.mark_docs
    assert {"hitom", "order0", "order4", "deception", "length1", "length3", "vanilla", "cot", "joint_invariants",
            "order_decline", "deception_gap"} <= set(marks)
    assert HiToM.strata == ("order", "deception", "length") and HiToM.cluster_facet == "story"
    assert HiToM.gate_facets == ("order", "deception", "length", "style")
    assert HiToM().cluster({"story": "Tell/length_1/sample_1"}, "x") == "Tell/length_1/sample_1"


def test_download_fetches_both_trees_checks_their_digests_and_reuses_the_checked_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    for key in LAYOUT:  # a whole layout built from the fixture's No_Tell story, served from a file:// mirror
        for tree in ("Hi-ToM_data", "Hi-ToM_prompts"):
            (mirror / tree / rel(*key)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / tree / f"{rel('No_Tell', key[1], 1, 1, key[4])}.txt", mirror / tree / f"{rel(*key)}.txt")
    monkeypatch.setattr(data, "PINS", replace(data.PINS, url=mirror.as_uri()))
    with pytest.raises(TomDataError, match="Hi-ToM_data: the files' digest .*the download is not the pinned release"):
        HiToM().load(DataSource(None, True, tmp_path / "cache"))
    pins = ",".join(f"{t}={tree_digest({f'{rel(*k)}.txt': mirror / t / f'{rel(*k)}.txt' for k in LAYOUT})}"
                    for t in ("Hi-ToM_data", "Hi-ToM_prompts"))
    assert len(HiToM({"sha256": pins}).load(DataSource(None, True, tmp_path / "cache"))) == 1200
    shutil.rmtree(mirror)  # the verified cache is used from now on, without a download
    assert len(HiToM({"sha256": pins}).load(DataSource(None, False, tmp_path / "cache"))) == 1200
    cached = next((tmp_path / "cache" / "hitom").glob("sha256-*/Hi-ToM_prompts/Tell/MC/length_2/sample_3/order_1.txt"))
    cached.write_text(cached.read_text().replace("Story:", "Story"))
    with pytest.raises(TomDataError, match="Hi-ToM_prompts: the files' digest .*pass --tom-download to fetch"):
        HiToM({"sha256": pins}).load(DataSource(None, False, tmp_path / "cache"))
