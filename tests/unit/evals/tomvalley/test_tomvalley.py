"""ToMValley: loading both layouts and their irregularities, the official prompt, the JSON reply, statuses, metrics."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import tomvalley_oracle as oracle

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.tomvalley import ToMValley
from pytest_tom.evals.tomvalley import derived as tv_derived
from pytest_tom.evals.tomvalley.data import ToMValleySample, classify, context_samples, questions_per_context
from pytest_tom.evals.tomvalley.prompts import USER, VANILLA, PromptConfig, context_request, question_request
from pytest_tom.evals.tomvalley.release import load_folder, parse_contexts, tree_digest
from pytest_tom.evals.tomvalley.scoring import answer_object, read_single, read_value, score
from pytest_tom.framework.base import DataSource
from pytest_tom.output.render import terminal_lines, to_json
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Response
from pytest_tom.sample import permute_choices, rename

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
TV = FIXTURES / "tomvalley"


@pytest.fixture(scope="module")
def samples() -> list[ToMValleySample]:
    return ToMValley({"contexts": "7001-7002"}).load(DataSource(FIXTURES, False, Path("unused")))


def by_id(samples: list[ToMValleySample]) -> dict[str, ToMValleySample]:
    return {s.id: s for s in samples}


def raw_release() -> dict[str, Any]:
    return json.loads((TV / "DynToM.json").read_text(encoding="utf-8"))


# -- loading -----------------------------------------------------------------------------------------------


def test_both_layouts_load_into_one_item_per_question(samples: list[ToMValleySample]) -> None:
    assert len(samples) == questions_per_context(4) + questions_per_context(5) == 56 + 71
    assert Counter(s.extra.context_id for s in samples) == {"trial7001": 56, "trial7002": 71}
    s = by_id(samples)
    u = s["trial7002-type_a_what_7"]  # emotion block (6-10), scenario 2
    assert (u.extra.subtype, u.extra.item, u.extra.scenario) == ("understanding", "emotion", 2)
    assert u.marks == ("tomvalley", "emotion", "understanding", "scenario2")
    assert u.question == "What is the emotion of Ines Park in scenario 2?"
    inf = s["trial7002-type_c_how_8"]  # belief&emotion -> intention in scenario 3: counted under emotion
    assert (inf.extra.item, inf.extra.relation, inf.facets["scenario"]) == ("emotion", "belief&emotion->intention", "3")
    t1 = s["trial7001-type_d_whether_5"]  # emotion block (4-6) of 3 spans, span 2-3
    assert t1.marks == ("tomvalley", "emotion", "transformation", "transformation1", "span2_3")
    assert t1.facets["question_type"] == "transformation" and t1.facets["span"] == "2-3"
    t3 = s["trial7001-type_d_how_4"]
    assert (t3.extra.item, t3.facets["span"], t3.marks[-1]) == ("action", "1-4", "span1_4")
    assert not any(x.extra.item == "action" and x.extra.subtype == "influence" for x in samples)


def test_irregular_layouts_keep_their_form(samples: list[ToMValleySample]) -> None:
    one = by_id(samples)["trial7001-type_a_what_1"]
    assert [(sc.key, sc.form, sc.groups) for sc in one.extra.scenarios] == [
        ("scenario_1", "list", (1, 2)), ("scenario_2", "dict", (2,)), ("scenario_3", "str", (2,)),
        ("scenario_4", "list", (1, 1))]
    assert one.context.turns[5].speaker == "Mara" and one.context.turns[5].text == "'Orders dropped again this week.'"
    two = by_id(samples)["trial7002-type_d_why_1"]
    assert [sc.key for sc in two.extra.scenarios] == ["1", "2", "3", "4", "5"]
    texts = [c.text for c in two.choices]
    assert len(texts) == 17 and len(set(texts)) == 16  # a duplicated distractor stays, as in the release


def test_the_id_arithmetic_agrees_with_the_question_text(samples: list[ToMValleySample]) -> None:
    for s in samples:
        x = s.extra
        assert f"the {x.item if x.subtype != 'influence' else x.relation.split('->')[0]} of" in s.question
        if x.subtype == "understanding":
            assert s.question.endswith(f"in scenario {x.scenario}?")
        elif x.subtype in ("transformation1", "transformation2"):
            assert f"from scenario {x.scenario} to scenario {x.scenario + 1}" in s.question


@pytest.mark.parametrize(("qid", "n", "expected"), [
    ("type_a_what_20", 5, ("understanding", "action", 5, "")),
    ("type_c_how_11", 5, ("influence", "intention", 1, "intention->action")),
    ("type_d_why_16", 5, ("transformation2", "action", 4, "")),
    ("type_d_whether_18", 7, ("transformation1", "intention", 6, "")),
    ("type_d_how_3", 4, ("transformation3", "intention", 0, "")),
])
def test_classify_follows_the_official_numbering(qid: str, n: int, expected: tuple[Any, ...]) -> None:
    assert classify(qid, n, "f") == expected


def _one_context() -> dict[str, Any]:
    return copy.deepcopy(raw_release()["trial7002"])


@pytest.mark.parametrize(("damage", "message"), [
    (lambda r: r["question"].pop("type_a_what_3"), "has 70 questions; a context of 5 scenarios has 71"),
    (lambda r: r["stage"]["story"].update({"6": r["stage"]["story"].pop("5")}), "numbers its scenarios [1, 2, 3, 4, 6]"),
    (lambda r: r["stage"]["story"].update({"five": r["stage"]["story"].pop("5")}), "scenario key 'five'"),
    (lambda r: r["question"]["type_d_how_1"].update({"true answer": "q"}), "field 'true answer': 'q' is not one of"),
    (lambda r: r["question"]["type_c_how_2"]["options"].__setitem__(1, "B) x"), "field 'options'[1]: 'B) x'"),
    (lambda r: r["stage"]["story"]["2"].update({"dialogue": 42}), "the dialogue is int"),
    (lambda r: r["question"].update({"type_z_1": r["question"].pop("type_a_what_1")}), "question id 'type_z_1'"),
    (lambda r: r["stage"].pop("characters information"), "field 'stage.characters information'"),
])
def test_damaged_records_name_file_context_and_field(damage: Any, message: str) -> None:
    record = _one_context()
    damage(record)
    with pytest.raises(TomDataError) as err:
        context_samples("trial7002", record, "DynToM.json")
    assert "DynToM.json context trial7002" in str(err.value) and message in str(err.value)


def test_a_context_in_both_layouts_is_refused(tmp_path: Path) -> None:
    (tmp_path / "trial7002").mkdir()
    record = raw_release()["trial7002"]
    (tmp_path / "trial7002" / "story.json").write_text(json.dumps(record["stage"]))
    (tmp_path / "trial7002" / "question_new.json").write_text(json.dumps(record["question"]))
    (tmp_path / "DynToM.json").write_text(json.dumps({"trial7002": record}))
    with pytest.raises(TomDataError, match="context trial7002 is in both"):
        load_folder(tmp_path, [7002], "7002")


def test_the_selected_set_must_be_present(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match=r"no ToMValley context of the selected set \(paper\).*2 others "
                                           r"\(trial7001-7002\)") as error:
        load_folder(TV, range(50, 1050), "paper")
    suggested = str(error.value).split("tomvalley.contexts=")[1].split()[0]
    assert parse_contexts(suggested)[1] == (7001, 7002)  # the value the message suggests is one the setting takes


# -- the whole release: every context once, each whole, none missing (issue 20) ------------------------------


def _release(folder: Path, numbers: Any, name: str = "DynToM.json") -> Path:
    """A single-file release of copies of trial7002 (71 questions each) under the given trial numbers."""
    record = raw_release()["trial7002"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps({f"trial{n}": record for n in numbers}), encoding="utf-8")
    return folder


def _load(folder: Path, **settings: str) -> list[ToMValleySample]:
    return ToMValley(settings).load(DataSource(folder, False, folder / "cache"))


def _trial_folder(folder: Path, name: str, files: tuple[str, ...] = ("story.json", "question_new.json")) -> None:
    record = raw_release()["trial7002"]
    (folder / name).mkdir(parents=True)
    for f in files:
        (folder / name / f).write_text(json.dumps(record["stage" if f == "story.json" else "question"]))


def test_a_context_removed_from_a_named_set_is_an_error_naming_it(tmp_path: Path) -> None:
    assert len(_load(_release(tmp_path / "whole", range(50, 55)))) == 5 * 71  # a run of the paper set: fine
    gap = _release(tmp_path / "gap", [50, 51, 53, 54])
    with pytest.raises(TomDataError, match=r"lacks 1 context between trial50 and trial54, a run of the paper set: "
                                           r"trial52 \(removed, renamed or unreadable\?\); pass --tom-set "
                                           r"tomvalley.partial=true"):
        _load(gap)
    assert len(_load(gap, partial="true")) == 4 * 71


def test_a_context_removed_from_the_end_of_a_declared_range_is_an_error(tmp_path: Path) -> None:
    folder = _release(tmp_path, range(51, 55), "DynToM_trials050-054.json")
    with pytest.raises(TomDataError, match=r"DynToM_trials050-054.json: the file's name declares trials 50-54, and the "
                                           r"copy lacks 1 of them: trial50"):
        _load(folder)
    assert len(_load(folder, partial="true")) == 4 * 71


def test_every_context_of_an_explicit_range_must_be_there(tmp_path: Path) -> None:
    folder = _release(tmp_path, range(50, 55))
    with pytest.raises(TomDataError, match=r"lacks 4 contexts selected with --tom-set tomvalley.contexts=48-49,55-56,50: "
                                           r"trial48-49, trial55-56"):
        _load(folder, contexts="48-49,55-56,50")
    assert len(_load(folder, contexts="48-56", partial="true")) == 5 * 71


@pytest.mark.parametrize(("record", "message"), [
    ({"story": {}, "question": {}}, r"record trial55, field 'stage': expected the keys 'stage' \(the story\) and "
                                    r"'question' \(the questions\); 'stage' is missing, found 'story', 'question'"),
    ({"Stage": {}, "Question": {}}, r"record trial55, field 'stage': .*'stage' and 'question' are missing, found "
                                    r"'Stage', 'Question'"),
], ids=["stage renamed", "both capitalised"])
def test_a_second_file_with_renamed_keys_is_an_error_not_skipped(tmp_path: Path, record: Any, message: str) -> None:
    folder = _release(tmp_path, range(50, 55))
    (folder / "more.json").write_text(json.dumps({"trial55": record}))
    with pytest.raises(TomDataError, match=r"more.json, " + message):
        _load(folder)


def test_a_file_with_renamed_context_ids_is_an_error_not_skipped(tmp_path: Path) -> None:
    folder = _release(tmp_path, range(50, 55))
    (folder / "more.json").write_text(json.dumps({"Trial55": raw_release()["trial7002"]}))
    with pytest.raises(TomDataError, match=r"more.json, record Trial55: context id 'Trial55' is not 'trial<N>'"):
        _load(folder)


def test_a_file_that_is_no_release_is_still_passed_over(tmp_path: Path) -> None:
    folder = _release(tmp_path, range(50, 55))
    (folder / "notes.json").write_text(json.dumps({"source": "a mirror", "files": {"a": "b"}}))
    (folder / "list.json").write_text("[1, 2]")
    assert len(_load(folder)) == 5 * 71


def test_a_duplicated_context_key_is_an_error(tmp_path: Path) -> None:
    record = json.dumps(raw_release()["trial7002"])
    (tmp_path / "DynToM.json").write_text(f'{{"trial50": {record}, "trial51": {record}, "trial51": {record}}}')
    with pytest.raises(TomDataError, match=r"DynToM.json, field 'trial51': the key 'trial51' is given twice in one "
                                           r"object; JSON readers keep only the last copy"):
        _load(tmp_path)


def test_a_duplicated_key_inside_a_context_names_the_context_and_the_field(tmp_path: Path) -> None:
    text = json.dumps({"trial50": raw_release()["trial7002"]})
    (tmp_path / "DynToM.json").write_text(text.replace('"true answer": ', '"true answer": "a", "true answer": ', 1))
    with pytest.raises(TomDataError, match=r"record trial50, field 'question.type_d_how_1.true answer': the key "
                                           r"'true answer' is given twice"):
        _load(tmp_path)
    _trial_folder(tmp_path / "f", "trial60")
    story = tmp_path / "f" / "trial60" / "story.json"
    story.write_text(story.read_text().replace('"main character": ', '"main character": "X", "main character": '))
    with pytest.raises(TomDataError, match=r"story.json, record trial60, field 'main character': the key"):
        _load(tmp_path / "f")


@pytest.mark.parametrize("second", ["DynToM.json", "trial77"], ids=["a folder and a file", "two folders"])
def test_one_context_under_two_spellings_is_an_error_naming_both(tmp_path: Path, second: str) -> None:
    _trial_folder(tmp_path, "trial077")
    if second == "DynToM.json":
        _release(tmp_path, [76, 77, 78])
    else:
        _trial_folder(tmp_path, "trial77")
    with pytest.raises(TomDataError, match=r"context trial77 is in both .*trial077 \(as 'trial077'\) and "
                                           rf".*{second} \(as 'trial77'\); it would be counted twice"):
        _load(tmp_path)


def test_a_context_spelled_with_leading_zeros_gets_the_canonical_id(tmp_path: Path) -> None:
    _trial_folder(tmp_path, "trial077")
    assert {s.extra.context_id for s in _load(tmp_path, contexts="77")} == {"trial77"}


@pytest.mark.parametrize("files", [("question_new.json",), ("story.json",), ()], ids=["no story", "no questions", "empty"])
def test_a_context_folder_without_its_story_is_an_error(tmp_path: Path, files: tuple[str, ...]) -> None:
    _trial_folder(tmp_path, "trial50")
    _trial_folder(tmp_path, "trial51", files)
    absent = " and no ".join(f for f in ("story.json", "question_new.json") if f not in files)
    with pytest.raises(TomDataError, match=rf"trial51: context trial51 has no {absent} \(expected story.json, the "
                                           r"story, and question_new.json.*the context would be dropped silently"):
        _load(tmp_path)


def test_the_only_context_without_its_story_is_found_and_named(tmp_path: Path) -> None:
    _trial_folder(tmp_path, "trial50", ("question_new.json",))
    (tmp_path / "trial50" / "Story.json").write_text("{}")
    with pytest.raises(TomDataError, match=r"context trial50 has no story.json .* the folder holds Story.json, "
                                           r"question_new.json"):
        _load(tmp_path)


def test_renamed_keys_say_what_was_expected_and_found(tmp_path: Path) -> None:
    text = json.dumps({"trial50": raw_release()["trial7002"]}).replace('"stage":', '"Stage":')
    (tmp_path / "DynToM.json").write_text(text)
    with pytest.raises(TomDataError, match=r"record trial50, field 'stage': expected the keys 'stage' .*'stage' is "
                                           r"missing, found 'Stage', 'question'"):
        _load(tmp_path)
    (tmp_path / "DynToM.json").unlink()
    (tmp_path / "context50").mkdir()
    (tmp_path / "context50" / "story.json").write_text("{}")
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(TomDataError, match=r"no ToMValley context here: expected trial<N>/ folders holding story.json "
                                           r"\+ question_new.json, or a release file .*; the folder holds context50, x.json"):
        _load(tmp_path)


def test_valid_json_that_looks_odd_is_read(tmp_path: Path) -> None:
    record = raw_release()["trial7002"]
    record["stage"]["characters information"] += "\u2028(a line separator, valid inside a JSON string)"
    text = json.dumps({"trial50": record}, ensure_ascii=False, indent=1)
    (tmp_path / "DynToM.json").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    samples = _load(tmp_path)
    assert len(samples) == 71 and samples[0].extra.characters_information.endswith("\u2028(a line separator, valid "
                                                                                    "inside a JSON string)")


@pytest.mark.realdata
def test_the_real_release_loads_whole_and_a_context_removed_from_it_is_named(real_data_dir: Path, tmp_path: Path) -> None:
    assert len(_load(real_data_dir)) == 7100
    assert len(_load(real_data_dir, contexts="all")) == 7100
    (release_file,) = (real_data_dir / "tomvalley").glob("*.json")
    data = json.loads(release_file.read_text(encoding="utf-8"))
    for gone in ("trial50", "trial99", "trial149"):
        copy_ = dict(data)
        del copy_[gone]
        (tmp_path / gone).mkdir()
        (tmp_path / gone / release_file.name).write_text(json.dumps(copy_))
        with pytest.raises(TomDataError, match=rf"lacks 1 (context|of them).*: {gone} "):
            _load(tmp_path / gone)


def test_contexts_setting() -> None:
    assert parse_contexts("paper") == ("paper", tuple(range(50, 1050)))
    assert parse_contexts("50-52, 60")[1] == (50, 51, 52, 60)
    for bad in ("x", "9-3", ","):
        with pytest.raises(TomConfigError):
            parse_contexts(bad)


def test_tree_digest_depends_on_every_file_and_the_order_of_trials() -> None:
    sums = {"trial9/story.json": "a" * 64, "trial9/question_new.json": "b" * 64, "trial10/story.json": "c" * 64}
    assert tree_digest(sums) == tree_digest(dict(reversed(list(sums.items()))))
    assert tree_digest(sums) != tree_digest({**sums, "trial10/story.json": "d" * 64})


# -- the official prompt -------------------------------------------------------------------------------------


def test_the_context_prompt_is_str_of_the_stored_dicts_without_backgrounds(samples: list[ToMValleySample]) -> None:
    record = raw_release()["trial7002"]
    story = {k: {kk: vv for kk, vv in v.items() if kk != "background"} for k, v in record["stage"]["story"].items()}
    qs = {qid: {"question": q["question"], "options": q["options"]} for qid, q in record["question"].items()}
    instruction = VANILLA.format(n=71)
    expected = "\n".join([instruction, record["stage"]["characters information"], str(story), str(qs), instruction])
    requests = {context_request(s, PromptConfig()) for s in samples if s.extra.context_id == "trial7002"}
    assert len({r.key for r in requests}) == 1  # one request answers the whole context
    (req,) = {r.key: r for r in requests}.values()
    assert req.messages[0].content == expected
    assert req.messages[1].content == USER.format(n=71)
    assert req.messages[1].content.startswith("answer the 71 question, and response in JSON format:{[question_id]:")
    assert req.settings.max_new_tokens == 8192 and req.settings.temperature == 0.0
    with_bg = context_request(samples[-1], PromptConfig(backgrounds=True)).messages[0].content
    assert "Ines works on the fundraiser, part 3." in with_bg and "Ines works on" not in expected


def test_a_rewritten_sample_is_asked_as_rewritten(samples: list[ToMValleySample]) -> None:
    s = by_id(samples)["trial7001-type_a_what_2"]
    renamed = rename(s, {"Mara": "Nora", "Mara Quinn": "Nora Quinn"})
    text = context_request(renamed, PromptConfig()).messages[0].content
    assert "Mara" not in text and "{'Nora': 'Orders dropped" not in text and "Nora: 'Orders dropped" in text
    permuted = permute_choices(s, list(reversed(range(len(s.choices)))))
    single = question_request(permuted, PromptConfig()).messages[0].content
    assert f"'a. {permuted.choices[0].text}'" in single and permuted.gold != s.gold


# -- reading replies -----------------------------------------------------------------------------------------


def test_answer_object_finds_the_answers_not_the_reasoning() -> None:
    qids = ["type_a_what_1", "type_c_how_1"]
    assert answer_object('```json\n{"type_a_what_1": "c"}\n```', qids) == {"type_a_what_1": "c"}
    cot = 'Step 1: consider {the belief}. Then {"x": 1}. Final: {"type_c_how_1": "b", "type_a_what_1": "a"} done'
    assert answer_object(cot, qids) == {"type_c_how_1": "b", "type_a_what_1": "a"}
    assert answer_object("I think the answer is c.", qids) is None
    assert answer_object('{"type_a_what_1": "c"', qids) is None  # cut off: not JSON
    assert answer_object('{＂type_a_what_1＂: "c"}', qids) == {"type_a_what_1": "c"}  # NFKC, as the official scorer


@pytest.mark.parametrize(("value", "n", "expected"), [
    ("c", 8, "c"), ("C", 8, "c"), ("c. Angela feels...", 8, "c"), ("(c)", 8, "c"), (["c"], 8, "c"),
    ("p", 16, "p"), ("p", 8, None), ("zz", 8, None), (3, 8, None), ("", 8, None), ("cd", 8, None),
])
def test_read_value(value: Any, n: int, expected: str | None) -> None:
    assert read_value(value, n) == expected


def test_read_single() -> None:
    assert read_single("c", "q", 5) == ("c", "leading letter")
    assert read_single("(B) because", "q", 5) == ("b", "leading letter")
    assert read_single("Thinking... so the answer is (d).", "q", 5) == ("d", "answer is")
    assert read_single('{"q": "e"}', "q", 5) == ("e", "json")
    assert read_single("no idea", "q", 5) == (None, "none")


def test_one_reply_scores_each_question_on_its_own(samples: list[ToMValleySample]) -> None:
    ctx = [s for s in samples if s.extra.context_id == "trial7002"]
    gold_first = {ctx[0].extra.qid: ctx[0].gold}
    reply = json.dumps({**gold_first, ctx[1].extra.qid: "zz"})
    recs = [score(s, PromptConfig(), Response(text=reply)) for s in ctx]
    assert recs[0].outcome is Outcome.CORRECT
    assert recs[1].outcome is Outcome.UNPARSEABLE and "value 'zz' is not one of the letters a-" in recs[1].details["why"]
    assert recs[2].outcome is Outcome.UNPARSEABLE and "has no key 'type_d_how_3'" in recs[2].details["why"]
    garbage = [score(s, PromptConfig(), Response(text="Sorry, I cannot help.")) for s in ctx]
    assert {r.outcome for r in garbage} == {Outcome.UNPARSEABLE}
    assert all(r.responses == ("Sorry, I cannot help.",) for r in garbage)
    assert "unparseable answer: no JSON object" in garbage[0].message and "response: 'Sorry" in garbage[0].message


# -- compositional statuses and the paper's metrics, by hand ------------------------------------------------


def oracle_records(samples: list[ToMValleySample]) -> list[Record]:
    return [score(s, PromptConfig(), Response(text=oracle.reply(s.extra.context_id))) for s in samples]


def test_statuses_follow_the_dependency_map(samples: list[ToMValleySample]) -> None:
    deps = tv_derived.dependencies((s.id, s.facets) for s in samples)
    assert deps["trial7002-type_c_how_7"] == ("trial7002-type_a_what_2", "trial7002-type_a_what_7",
                                              "trial7002-type_a_what_12")  # belief&emotion->intention, scenario 2
    assert deps["trial7001-type_d_why_2"] == ("trial7001-type_a_what_2", "trial7001-type_a_what_3")
    assert "trial7001-type_d_how_1" not in deps  # transformation-3 has no mapping
    assert len(deps) == (12 + 12 + 12) + (15 + 16 + 16)
    got = tv_derived.statuses(deps, {r.sample_id: r for r in oracle_records(samples)})
    assert Counter(got.values()) == {"fully_correct": 16, "local_error": 28, "restoration_error": 27, "full_error": 12}
    assert tv_derived.status(True, [True, False]) == "restoration_error"


def test_the_composition_items(samples: list[ToMValleySample]) -> None:
    bench = ToMValley({"contexts": "7001-7002"})
    items = {d.id: d for d in bench.derived(samples)}
    records = {r.sample_id: r for r in oracle_records(samples)}
    ok = bench.rule("composition")(items["trial7001"], [records[m] for m in items["trial7001"].members])
    assert ok.passed and ok.details == {"fully_correct": 12, "local_error": 24, "restoration_error": 0, "full_error": 0}
    bad = bench.rule("composition")(items["trial7002"], [records[m] for m in items["trial7002"].members])
    assert not bad.passed and bad.value == pytest.approx(27 / 47) and len(bad.failed_members) == 27
    assert bad.message.startswith("context trial7002: 27 of 47 composite questions answered right although")
    assert "\n  type_d_whether_5 right (" in bad.message and "... and 17 more" in bad.message


def test_metrics_equal_the_hand_computed_ones(samples: list[ToMValleySample]) -> None:
    bench = ToMValley({"contexts": "7001-7002"})
    m = to_json(bench.metrics(oracle_records(samples)))

    def cell(d: dict[str, Any]) -> tuple[int, int, int]:
        return d["n"], d["correct"], d["unparseable"]

    assert (m["contexts"], m["questions"]) == (2, 127)
    assert cell(m["avg"]) == (127, 28 + 36, 20)
    t3 = {k: (v["n"], v["correct"]) for k, v in m["table3"].items()}
    assert t3 == {"belief.understanding": (9, 9), "belief.influence": (9, 9), "belief.transformation": (16, 4),
                  "emotion.understanding": (9, 4), "emotion.influence": (9, 9), "emotion.transformation": (16, 4),
                  "intention.understanding": (9, 4), "intention.influence": (9, 9), "intention.transformation": (16, 4),
                  "action.understanding": (9, 4), "action.transformation": (16, 4)}
    assert {k: (v["n"], v["correct"]) for k, v in m["items"].items()} == {
        "belief": (34, 22), "emotion": (34, 17), "intention": (34, 17), "action": (25, 8)}
    assert {k: (v["n"], v["correct"]) for k, v in m["question_types"].items()} == {
        "understanding": (36, 21), "influence": (27, 27), "transformation": (64, 16)}
    assert {k: cell(v) for k, v in m["subtypes"].items()} == {
        "understanding": (36, 21, 0), "influence": (27, 27, 0), "transformation1": (28, 16, 0),
        "transformation2": (28, 0, 16), "transformation3": (8, 0, 4)}
    assert m["subtypes"]["transformation1"]["chance"] == pytest.approx((12 / 4 + 16 / 5) / 28)  # 4 options at n=4
    assert {k: (v["n"], v["correct"]) for k, v in m["spans"].items()} == {
        "1-2": (16, 4), "2-3": (16, 4), "3-4": (16, 4), "4-5": (8, 4)}
    assert m["composition"]["all"] == {"n": 83, "fully_correct": 16 / 83, "local_error": 28 / 83,
                                       "restoration_error": 27 / 83, "full_error": 12 / 83}
    assert m["composition"]["influence"]["n"] == 27
    lines = "\n".join(terminal_lines(bench.metrics(oracle_records(samples))))
    assert "questions 127" in lines and "contexts 2" in lines and "counted wrong) 50.4 [" in lines
    assert "transformation2 0.0 [" in lines and "transformation2 chance" in lines
    rates = {g.name: g for g in bench.gate_rates(oracle_records(samples))}
    assert rates["restoration_error"].rate() == pytest.approx(27 / 83) and not rates["restoration_error"].higher_is_better
    assert set(rates["restoration_error"].clusters) == {"trial7001", "trial7002"}


# -- download ---------------------------------------------------------------------------------------------------


@pytest.fixture
def mirror() -> Any:
    from helpers.file_server import Server

    server = Server()
    record = raw_release()["trial7002"]
    server.files["data/trial7002/story.json"] = json.dumps(record["stage"]).encode()
    server.files["data/trial7002/question_new.json"] = json.dumps(record["question"]).encode()
    yield server
    server.close()


def test_a_custom_set_is_checked_by_structure_recorded_and_rechecked(mirror: Any, tmp_path: Path) -> None:
    bench = ToMValley({"contexts": "7002", "source_url": mirror.url + "/data"})
    source = DataSource(None, True, tmp_path)
    assert len(bench.load(source)) == 71
    assert len(mirror.requests) == 2
    again = ToMValley({"contexts": "7002", "source_url": mirror.url + "/data"})
    assert len(again.load(DataSource(None, False, tmp_path))) == 71 and len(mirror.requests) == 2  # from the cache
    (story,) = tmp_path.rglob("trial7002/story.json")
    story.write_text(story.read_text().replace("Ines", "Inez"))
    with pytest.raises(TomDataError, match="no longer matches the sha256 recorded when it was verified"):
        again.load(DataSource(None, False, tmp_path))


def test_a_pinned_set_must_reproduce_its_tree_digest(mirror: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_tom.evals.tomvalley import release

    monkeypatch.setattr(release, "SETS", {**release.SETS, "fx": range(7002, 7003)})
    monkeypatch.setattr(release, "TREE_DIGESTS", {**release.TREE_DIGESTS, "fx": "0" * 64})
    bench = ToMValley({"contexts": "fx", "source_url": mirror.url + "/data"})
    with pytest.raises(TomDataError, match="the downloaded fx set's tree digest is [0-9a-f]{64}, not the pinned 0{64}"):
        bench.load(DataSource(None, True, tmp_path))


def test_without_data_or_download_the_error_says_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(TomDataError, match="ToMValley data not found; looked in .*--tom-download to fetch the pinned "
                                           "revision 0d6c91363fdb"):
        ToMValley().load(DataSource(tmp_path, False, tmp_path / "cache"))
