"""ToMBench: permutations, prompts rendered from samples, loading, scoring into records, the paper's aggregation."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_tom.derived import evaluate
from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.evals.tombench import ToMBench, release
from pytest_tom.evals.tombench.data import (
    LETTERS,
    OFFICIAL_REVISION,
    OFFICIAL_ROWS,
    OFFICIAL_SHA256,
    TASK_FILES,
    ToMBenchSample,
    canonical_ability,
    load_file,
    strip_option_prefix,
)
from pytest_tom.evals.tombench.metrics import aggregate
from pytest_tom.evals.tombench.prompts import SYSTEM_PROMPTS, USER_TEMPLATES, Config, permutation, render_user, tries
from pytest_tom.evals.tombench.scoring import score
from pytest_tom.framework.base import DataSource
from pytest_tom.output.render import terminal_lines, to_json
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Request, Response
from pytest_tom.sample import Choice, Story, permute_choices, rename

DATA = ("tombench", "data")


def _file(fixtures_dir: Path, name: str) -> Path:
    return fixtures_dir.joinpath(*DATA, f"{name}.jsonl")


def _load(fixtures_dir: Path, **settings: Any) -> tuple[ToMBench, list[ToMBenchSample]]:
    bench = ToMBench({"partial": True, **settings})  # the fixtures are a deliberately partial release
    return bench, bench.load(DataSource(fixtures_dir, False, fixtures_dir))


def _sample(samples: list[ToMBenchSample], sid: str) -> ToMBenchSample:
    return next(s for s in samples if s.id == sid)


def _run(bench: ToMBench, sample: ToMBenchSample, answer: Callable[[Request], Response]) -> tuple[list[Request], Record]:
    """Drive one program by hand: the requests it asked for, and the record it returned."""
    program = bench.program(sample)
    requests = list(next(program))
    with pytest.raises(StopIteration) as stop:
        program.send([answer(r) for r in requests])
    record = stop.value.value
    assert isinstance(record, Record)
    return requests, record


def _gold_answer(sample: ToMBenchSample) -> Callable[[Request], Response]:
    """A perfect model: finds the displayed letter of the gold option's text in the user prompt."""
    gold_text = sample.choice(sample.gold_label).text

    def answer(req: Request) -> Response:
        user = req.messages[-1].content
        letter = next(L for L in LETTERS if f"\n{L}. {gold_text}\n" in user + "\n")
        return Response(text=f"[[{letter}]]")

    return answer


class TestPermutations:
    @pytest.mark.parametrize("n", [2, 4])
    @pytest.mark.parametrize("scheme", ["random", "cyclic", "none"])
    def test_every_trial_is_a_bijection(self, n: int, scheme: str) -> None:
        for trial in range(6):
            order = permutation(n, 42, "False Belief Task:7", trial, scheme)
            assert sorted(order) == list(range(n))

    def test_random_orders_depend_only_on_seed_item_and_trial(self) -> None:
        a = [permutation(4, 42, "x:1", t, "random") for t in range(5)]
        b = [permutation(4, 42, "x:1", t, "random") for t in range(5)]
        assert a == b
        assert a != [permutation(4, 43, "x:1", t, "random") for t in range(5)]

    def test_cyclic_puts_every_option_at_every_position(self) -> None:
        orders = [permutation(4, 0, "x", t, "cyclic") for t in range(4)]
        for pos in range(4):
            assert sorted(o[pos] for o in orders) == [0, 1, 2, 3]

    def test_both_languages_of_a_row_see_the_same_orders(self, fixtures_dir: Path) -> None:
        bench, samples = _load(fixtures_dir)
        en, zh = _sample(samples, "en-false_belief_task-0002"), _sample(samples, "zh-false_belief_task-0002")
        assert [t.order for t in tries(en, bench.config)] == [t.order for t in tries(zh, bench.config)]


PROMPTS_SHA256 = "715a74c64586127d6766c25779b610e0b0e8813fc10de2bdd9f7464b0a610bf5"


class TestPrompts:
    """Byte-exact snapshot of the official templates (S5), rendered from the sample's fields."""

    def test_template_lengths_match_the_official_prompts(self) -> None:
        assert [len(SYSTEM_PROMPTS[k]) for k in [("zh", "vanilla"), ("zh", "cot"), ("en", "vanilla"), ("en", "cot")]] == [
            283, 321, 797, 929,
        ]
        assert [len(USER_TEMPLATES[k]) for k in [("zh", 4), ("zh", 2), ("en", 4), ("en", 2)]] == [93, 65, 115, 87]
        assert "serveral" in SYSTEM_PROMPTS[("en", "vanilla")]

    def test_template_hashes_are_pinned(self) -> None:
        texts = [SYSTEM_PROMPTS[k] for k in sorted(SYSTEM_PROMPTS)] + [USER_TEMPLATES[k] for k in sorted(USER_TEMPLATES)]
        assert hashlib.sha256(json.dumps(texts).encode()).hexdigest() == PROMPTS_SHA256

    def test_rendered_user_prompt_for_a_fixture_item(self, fixtures_dir: Path) -> None:
        binary = load_file(_file(fixtures_dir, "Strange Story Task"), ["en"])[0]
        assert render_user(binary, (1, 0)) == (
            "[Story]\n" + binary.context.render()
            + "\n\n[Question]\nIs what the brother says true?\n\n[Candidate Answers]\nA. No\nB. Yes"
        )
        zh = load_file(_file(fixtures_dir, "False Belief Task"), ["zh"])[2]
        assert render_user(zh, (0, 1, 2, 3)).endswith("[答案选项]\nA. 蓝色罐子\nB. 红色盒子\nC. 冰箱\nD. 抽屉")

    def test_requests_carry_the_official_system_prompt_and_budget(self, fixtures_dir: Path) -> None:
        bench, samples = _load(fixtures_dir, prompt="cot", tries=2)
        planned = tries(_sample(samples, "zh-false_belief_task-0001"), bench.config)
        assert len(planned) == 2
        req = planned[0].request
        assert [m.role for m in req.messages] == ["system", "user"]
        assert req.messages[0].content == SYSTEM_PROMPTS[("zh", "cot")]
        assert req.settings.max_new_tokens == 1024 and req.settings.temperature == 0.0
        assert req.answer_labels == ("A", "B", "C", "D") and req.answer_format == "[[{}]]"
        assert Config(max_new_tokens=7).budget == 7 and Config().budget == 64

    def test_a_rewritten_sample_is_asked_as_rewritten(self, fixtures_dir: Path) -> None:
        """Prompts come from the sample at run time, never from text kept at load time."""
        bench, samples = _load(fixtures_dir, languages="en", tries=1, permutations="none")
        original = _sample(samples, "en-false_belief_task-0002")
        swapped = permute_choices(original, (1, 0, 2, 3))
        user = tries(swapped, bench.config)[0].request.messages[1].content
        assert "\nA. Blue jar\nB. Red box\n" in user and swapped.gold == "A"
        _, record = _run(bench, swapped, _gold_answer(swapped))
        assert record.outcome is Outcome.CORRECT and record.parsed == "A"
        renamed = rename(original, {"Xiao Zhou": "Mina"})
        user = tries(renamed, bench.config)[0].request.messages[1].content
        assert "Where will Mina look" in user and "Xiao Zhou" not in user


class TestLoader:
    def test_fixture_samples_both_languages(self, fixtures_dir: Path) -> None:
        _, samples = _load(fixtures_dir)
        assert len(samples) == 42
        assert Counter(s.facets["language"] for s in samples) == {"en": 21, "zh": 21}
        assert samples[0].id == "en-false_belief_task-0001"
        assert {s.facets["qtype"] for s in samples} == {"two_choice", "four_choice"}
        assert len({s.id for s in samples}) == 42

    def test_a_sample_is_typed_and_its_facets_are_grouping_keys_only(self, fixtures_dir: Path) -> None:
        _, samples = _load(fixtures_dir, languages="en")
        s = _sample(samples, "en-false_belief_task-0002")
        assert s.benchmark == "tombench"
        assert isinstance(s.context, Story) and s.context.text.startswith("Xiao Lin and Xiao Zhou")
        assert s.question == "Where will Xiao Zhou look for the cookies when he returns?"
        assert s.choices == (Choice("A", "Red box"), Choice("B", "Blue jar"), Choice("C", "Fridge"), Choice("D", "Drawer"))
        assert s.gold == "B" and s.characters == () and s.defect == ""
        assert dict(s.facets) == {
            "language": "en", "task": "fbt", "category": "Belief", "ability": "Location false beliefs",
            "sub_label": "Location false beliefs", "qtype": "four_choice", "story": "en-false_belief_task-story001",
        }
        assert s.marks == ("tombench", "en", "fbt", "belief", "location_false_beliefs", "four_choice")
        assert s.source == "tombench/data/False Belief Task.jsonl line 2"
        assert (s.extra.file, s.extra.row, s.extra.index, s.extra.story_id, s.extra.story_size) == (
            "False Belief Task", 2, 2, "story001", 6,
        )
        extra = _sample(samples, "en-hidden_emotions-0001")
        assert extra.facets["task"] == "extra" and extra.facets["story"] == "" and extra.extra.story_size == 0

    def test_nan_options_make_binary_items(self, fixtures_dir: Path) -> None:
        samples = load_file(_file(fixtures_dir, "Faux-pas Recognition Test"), ["en", "zh"])
        assert [len(s.choices) for s in samples if s.extra.language == "en"] == [2, 4, 4, 2]
        assert [c.label for c in samples[0].choices] == ["A", "B"]

    @pytest.mark.parametrize("missing", ["NaN", "null", '""', '"  "'])
    def test_loader_reads_absent_c_and_d_as_a_binary_item(self, tmp_path: Path, fixtures_dir: Path, missing: str) -> None:
        """JSON NaN parses to a float, which upstream's `!= None` misses (spec P5); so do null and blank text."""
        rec = json.loads(_file(fixtures_dir, "False Belief Task").read_text(encoding="utf-8").splitlines()[1])
        line = json.dumps({k: v for k, v in rec.items() if k not in ("OPTION-C", "OPTION-D")}, ensure_ascii=False)
        line = line[:-1] + f', "OPTION-C": {missing}, "OPTION-D": {missing}}}'
        path = tmp_path / "False Belief Task.jsonl"
        path.write_text(line + "\n", encoding="utf-8")
        en, zh = load_file(path, ["en", "zh"])
        assert [c.text for c in en.choices] == ["Red box", "Blue jar"] and en.facets["qtype"] == "two_choice"
        assert len(zh.choices) == 4
        assert "differ in option count" in en.defect  # the two languages now disagree, as SST row 292 does

    def test_a_nan_c_with_a_real_d_is_an_error_not_a_binary_item(self, tmp_path: Path, fixtures_dir: Path) -> None:
        line = _file(fixtures_dir, "False Belief Task").read_text(encoding="utf-8").splitlines()[1]
        path = tmp_path / "False Belief Task.jsonl"
        path.write_text(line.replace('"OPTION-C": "Fridge"', '"OPTION-C": NaN') + "\n", encoding="utf-8")
        with pytest.raises(TomDataError, match="'OPTION-C': a 4-option item needs both C and D"):
            load_file(path, ["en"])

    def test_dirty_gold_and_prefixes_are_normalised(self, fixtures_dir: Path) -> None:
        hidden = load_file(_file(fixtures_dir, "Hidden Emotions"), ["zh"])
        assert hidden[1].gold == "A"  # stored as "A. " in the file (release defect D2)
        assert hidden[0].choices[0].text == "开心"  # "A. 开心" prefix stripped
        fbt = load_file(_file(fixtures_dir, "False Belief Task"), ["zh"])
        assert fbt[2].choices[0].text == "蓝色罐子"  # "A.蓝色罐子" (no space) stripped too

    def test_prefix_is_stripped_only_for_the_options_own_letter(self) -> None:
        assert strip_option_prefix("B. text", "B") == "text"
        assert strip_option_prefix("B. text", "A") == "B. text"
        assert strip_option_prefix("A、文本", "A") == "文本"

    def test_stories_follow_index_restarts_and_become_coherence_results(self, fixtures_dir: Path) -> None:
        bench, samples = _load(fixtures_dir, languages="en")
        derived = bench.derived(samples)
        assert sorted((d.id, len(d.members)) for d in derived) == [
            ("en-false_belief_task-story001", 6),
            ("en-false_belief_task-story002", 6),
            ("en-faux_pas_recognition_test-story001", 4),
            ("en-persuasion_story_task-story001", 1),
            ("en-strange_story_task-story001", 2),
        ]
        first = next(d for d in derived if d.id == "en-false_belief_task-story002")
        assert first.kind == "coherence" and first.marks == ("tombench", "en", "fbt", "coherence")
        assert dict(first.facets) == {"language": "en", "task": "fbt", "story": "en-false_belief_task-story002"}
        assert first.members == tuple(f"en-false_belief_task-{r:04d}" for r in range(7, 13))
        assert {_sample(samples, m).extra.story_size for m in first.members} == {6}

    def test_every_raw_label_of_the_release_maps_to_31_abilities(self) -> None:
        raw = [
            "Belief: Content false beliefs Belief: Second-order beliefs", "Non-literal communication: Humor",
            "Knowledge: Information-knowledge links ", "Desire: Desires influence on emotions (beliefs)",
            "Desire: Desires influence on actions", "Non-Literal Communication: Irony/Sarcasm",
        ]
        assert [canonical_ability(r)[0] for r in raw] == [
            "Second-order beliefs", "Humor", "Information-knowledge links", "Desires influence on actions/emotions",
            "Desires influence on actions/emotions", "Irony/Sarcasm",
        ]
        sub = "Desires influence on emotions (beliefs)"
        assert canonical_ability(f"Desire: {sub}")[2] == sub

    @pytest.mark.parametrize(
        ("mutate", "field", "message"),
        [
            (lambda r: r.update({"答案\nANSWER": "E"}), "答案\nANSWER", "not a letter"),
            (lambda r: r.update({"OPTION-D": float("nan")}), "OPTION-D", "needs both C and D"),
            (lambda r: r.update({"能力\nABILITY": "Belief: Telepathy"}), "能力\nABILITY", "unknown ability"),
            (lambda r: r.pop("STORY"), "STORY", "missing"),
            (lambda r: r.update({"序号\nINDEX": "one"}), "序号\nINDEX", "integer"),
            (lambda r: r.update({"OPTION-B": None}), "OPTION-B", "option missing"),
            (lambda r: r.update({"OPTION-B": 7}), "OPTION-B", "wrong type: expected text, got int 7"),
            (lambda r: r.update({"OPTION-C": 3, "OPTION-D": 4}), "OPTION-C", "wrong type: expected text, got int 3"),
            (lambda r: r.update({"STORY": ["a"]}), "STORY", "wrong type: expected text, got list"),
            (lambda r: r.update({"能力\nABILITY": 3}), "能力\nABILITY", "wrong type: expected text, got int"),
            (lambda r: r.update({"答案\nANSWER": "BC"}), "答案\nANSWER", "gold answer 'BC' is not a letter A-D"),
            (lambda r: r.update({"答案\nANSWER": "B. C"}), "答案\nANSWER", "gold answer 'B. C' is not a letter A-D"),
            (lambda r: r.update({"答案\nANSWER": 2}), "答案\nANSWER", "wrong type: expected a letter A-D as text, got int 2"),
            (lambda r: r.update({"选项C": float("nan"), "选项D": float("nan"), "答案\nANSWER": "C"}), "答案\nANSWER",
             "not among the 2 zh options"),
        ],
    )
    def test_bad_records_name_file_record_and_field(
        self, tmp_path: Path, fixtures_dir: Path, mutate: Callable[[dict[str, Any]], object], field: str, message: str
    ) -> None:
        lines = _file(fixtures_dir, "False Belief Task").read_text(encoding="utf-8").splitlines()
        rec = json.loads(lines[1])
        mutate(rec)
        lines[1] = json.dumps(rec, ensure_ascii=False)
        bad = tmp_path / "False Belief Task.jsonl"
        bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(TomDataError) as err:
            load_file(bad, ["en", "zh"])
        text = str(err.value)
        assert str(bad) in text and "line 2" in text and repr(field) in text and message in text

    def test_a_row_that_is_not_an_object_is_reported(self, tmp_path: Path) -> None:
        bad = tmp_path / "Hidden Emotions.jsonl"
        bad.write_text("[1, 2]\n", encoding="utf-8")
        with pytest.raises(TomDataError, match="record line 1: expected a JSON object"):
            load_file(bad, ["en"])

    def test_invalid_json_line_is_reported_with_its_line(self, tmp_path: Path, fixtures_dir: Path) -> None:
        good = _file(fixtures_dir, "False Belief Task").read_text(encoding="utf-8").splitlines()[:3]
        bad = tmp_path / "False Belief Task.jsonl"
        bad.write_text("\n".join([*good, "", '{"broken', good[0]]) + "\n", encoding="utf-8")
        with pytest.raises(TomDataError) as err:
            load_file(bad, ["en"])
        assert f"file {bad}, record line 5: invalid JSON (Unterminated string" in str(err.value)

    def test_a_doubled_key_is_an_error_not_a_flipped_gold(self, tmp_path: Path, fixtures_dir: Path) -> None:
        lines = _file(fixtures_dir, "False Belief Task").read_text(encoding="utf-8").splitlines()
        assert lines[1].endswith('"答案\\nANSWER": "B"}')
        lines[1] = lines[1][:-1] + ', "答案\\nANSWER": "A"}'  # json.loads alone keeps the last copy: gold B becomes A
        bad = tmp_path / "False Belief Task.jsonl"
        bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(TomDataError) as err:
            load_file(bad, ["en"])
        assert f"file {bad}, record line 2, field '答案\\nANSWER': the key '答案\\nANSWER' is given twice" in str(err.value)

    def test_a_line_separator_in_a_text_a_bom_and_crlf_are_read(self, tmp_path: Path, fixtures_dir: Path) -> None:
        text = _file(fixtures_dir, "False Belief Task").read_text(encoding="utf-8")
        plain = load_file(_file(fixtures_dir, "False Belief Task"), ["en"])
        rec = json.loads(text.split("\n")[0])
        rec["STORY"] = rec["STORY"].replace(" ", "\u2028", 1)  # raw U+2028: valid JSON, a line end to str.splitlines
        odd = "\ufeff" + "\r\n".join([json.dumps(rec, ensure_ascii=False), *text.split("\n")[1:]])
        path = tmp_path / "False Belief Task.jsonl"
        path.write_bytes(odd.encode("utf-8"))
        got = load_file(path, ["en"])
        assert [(s.id, s.gold) for s in got] == [(s.id, s.gold) for s in plain]
        assert "\u2028" in got[0].context.render() and got[1].context == plain[1].context

    @pytest.mark.parametrize(("gold", "ok"), [("A", True), ("B", False), ("C", False), ("D", True)])
    def test_a_doubled_option_text_is_an_error_only_when_it_is_the_gold(self, tmp_path: Path, fixtures_dir: Path,
                                                                       gold: str, ok: bool) -> None:
        rec = json.loads(_file(fixtures_dir, "False Belief Task").read_text(encoding="utf-8").splitlines()[1])
        if rec.get("OPTION-C") is None:
            rec.update({"OPTION-C": "third", "OPTION-D": "fourth", "选项C": "C. 三", "选项D": "D. 四"})
        rec["OPTION-C"], rec["答案\nANSWER"] = rec["OPTION-B"], gold  # as the real release's UOT rows 166 and 168 do
        path = tmp_path / "False Belief Task.jsonl"
        path.write_text(json.dumps(rec, ensure_ascii=False) + "\n", encoding="utf-8")
        if ok:
            assert [s.gold for s in load_file(path, ["en", "zh"])] == [gold, gold]
            return
        with pytest.raises(TomDataError, match=r"record line 1, field 'OPTION-C': options OPTION-B and OPTION-C have the "
                                               r"gold's text"):
            load_file(path, ["en"])

    def test_a_file_edited_in_place_fails_its_pinned_sha256_unless_partial_or_named(self, tmp_path: Path,
                                                                                    fixtures_dir: Path) -> None:
        folder = tmp_path / "data"
        shutil.copytree(fixtures_dir.joinpath(*DATA), folder)
        files = sorted(folder.glob("*.jsonl"))
        pins = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
        rows = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in files}
        pinned = release.Release(pins, rows, "test")
        assert len(release.load(folder, ["en"], pinned, verified=False, partial=False)) == 21
        fbt = folder / "False Belief Task.jsonl"
        fbt.write_text(fbt.read_text(encoding="utf-8").replace('ANSWER": "B"', 'ANSWER": "A"', 1), encoding="utf-8")
        with pytest.raises(TomDataError, match=r"False Belief Task.jsonl: the ToMBench release is incomplete: this file "
                                               r"has sha256 \w+, not the pinned \w+ \(edited or re-serialized\? give its "
                                               r"checksums with --tom-set tombench.sha256\).*tombench.partial=true"):
            release.load(folder, ["en"], pinned, verified=False, partial=False)
        assert len(release.load(folder, ["en"], pinned, verified=False, partial=True)) == 21
        named = release.Release({**pins, fbt.name: hashlib.sha256(fbt.read_bytes()).hexdigest()}, None, "test")
        assert len(release.load(folder, ["en"], named, verified=False, partial=False)) == 21

    def test_missing_data_explains_how_to_get_it(self, tmp_path: Path) -> None:
        with pytest.raises(TomDataError, match="--tom-download"):
            ToMBench().load(DataSource(tmp_path, False, tmp_path / "cache"))

    def test_a_folder_without_release_files_is_reported(self, tmp_path: Path) -> None:
        (tmp_path / "notes.jsonl").write_text("{}\n", encoding="utf-8")
        with pytest.raises(TomDataError, match="no ToMBench release files in this folder .*'notes.jsonl' in this "
                           "folder is not a release file name"):
            ToMBench().load(DataSource(tmp_path, False, tmp_path / "cache"))

    @pytest.mark.parametrize("gold", ["B", " B ", "B.", "B. ", "B、", "B：", "\tB .\n"])
    def test_a_single_gold_letter_with_the_release_s_separator_is_read(self, tmp_path: Path, fixtures_dir: Path, gold: str) -> None:
        rec = json.loads(_file(fixtures_dir, "False Belief Task").read_text(encoding="utf-8").splitlines()[1])
        rec["答案\nANSWER"] = gold
        path = tmp_path / "False Belief Task.jsonl"
        path.write_text(json.dumps(rec, ensure_ascii=False) + "\n", encoding="utf-8")
        assert [s.gold for s in load_file(path, ["en"])] == ["B"]

    def test_the_release_counts_are_the_paper_s(self) -> None:
        assert sum(OFFICIAL_ROWS.values()) == 2860 and set(OFFICIAL_ROWS) == set(OFFICIAL_SHA256)
        tasks = {TASK_FILES[n[:-6]]: c for n, c in OFFICIAL_ROWS.items() if n[:-6] in TASK_FILES}
        assert tasks == {"uot": 300, "sit": 200, "pst": 100, "fbt": 600, "ast": 200, "ht": 103, "sst": 407, "frt": 560}

    def test_a_local_copy_must_be_the_whole_release_unless_partial(self, tmp_path: Path, fixtures_dir: Path) -> None:
        files = sorted(fixtures_dir.joinpath(*DATA).glob("*.jsonl"))
        pins = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
        rows = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in files}
        whole = release.Release(pins, rows, "test")
        folder = fixtures_dir.joinpath(*DATA)
        assert len(release.load(folder, ["en"], whole, verified=False, partial=False)) == 21
        more = release.Release(pins, {**rows, "Hidden Emotions.jsonl": 1}, "test")
        with pytest.raises(TomDataError, match=r"Hidden Emotions.jsonl, record row 2: .* this file has 2 rows, not 1 \(another "
                                               r"revision\? give its checksums with --tom-set tombench.sha256\)"):
            release.load(folder, ["en"], more, verified=False, partial=False)
        assert len(release.load(folder, ["en"], more, verified=True, partial=False)) == 21  # a checksum-verified copy
        assert len(release.load(folder, ["en"], more, verified=False, partial=True)) == 21
        by_sum = release.Release({**pins, "Hidden Emotions.jsonl": "0" * 64}, None, "test")
        with pytest.raises(TomDataError, match=f"Hidden Emotions.jsonl: .* this file has sha256 {pins['Hidden Emotions.jsonl']}, "
                                               f"not the {'0' * 64} given in --tom-set tombench.sha256"):
            release.load(folder, ["en"], by_sum, verified=False, partial=False)

    def test_the_checksum_setting_picks_the_release(self, tmp_path: Path) -> None:
        assert release.release("").pins == OFFICIAL_SHA256 and release.release("").rows == OFFICIAL_ROWS
        assert release.release("").cache_key == OFFICIAL_REVISION
        custom = release.release("False Belief Task.jsonl=" + "a" * 64)
        assert custom.rows is None and custom.cache_key.startswith("sha256-") and list(custom.pins) == ["False Belief Task.jsonl"]
        manifest = tmp_path / "SHA256SUMS"
        manifest.write_text("".join(f"{v}  data/{k}\n" for k, v in OFFICIAL_SHA256.items()))
        same = release.release(str(manifest))  # the pinned checksums, from a file: the row counts still apply
        assert same.rows == OFFICIAL_ROWS and same.cache_key == OFFICIAL_REVISION

    def test_samples_are_ordered_by_language_then_file_then_row(self, fixtures_dir: Path) -> None:
        _, samples = _load(fixtures_dir, languages="zh,en")
        keys = [(s.extra.language, s.extra.file, s.extra.row) for s in samples]
        assert keys[0][0] == "zh" and keys[-1][0] == "en"
        assert keys == sorted(keys, key=lambda k: ({"zh": 0, "en": 1}[k[0]], k[1], k[2]))


def _rec(
    lang: str, task: str, ability: str, outcome: str, story: str = "", size: int = 0, sub: str | None = None,
    category: str = "Belief", defect: str = "",
) -> Record:
    facets = {
        "language": lang, "task": task, "ability": ability, "category": category, "sub_label": sub or ability, "story": story,
    }
    details: dict[str, Any] = {}
    if story:
        details["story_size"] = size
    if defect:
        details["defect"] = defect
    return Record(benchmark="tombench", sample_id=f"{story}-{outcome}", outcome=Outcome(outcome), facets=facets, parsed="A",
                  details=details)


class TestAggregation:
    def test_task_avg_is_macro_and_abilities_pool_across_files(self) -> None:
        cfb, sfb = "Content false beliefs", "Sequence false beliefs"
        recs = [_rec("en", "fbt", cfb, "correct")] * 3 + [_rec("en", "fbt", cfb, "incorrect")]
        recs += [_rec("en", "uot", sfb, "correct")] * 1 + [_rec("en", "uot", sfb, "incorrect")] * 1
        m = aggregate(recs)["languages"]["en"]
        assert m["tasks"]["fbt"]["accuracy"] == 0.75 and m["tasks"]["uot"]["accuracy"] == 0.5
        assert m["task_avg"] == pytest.approx(0.625)  # macro, not 4/6 micro
        assert m["micro_accuracy"] == pytest.approx(4 / 6)
        assert m["categories"]["belief"] == pytest.approx((0.75 + 0.5) / 2)

    def test_paper_mode_averages_desire_sub_labels_clean_mode_pools_them(self) -> None:
        di = "Desires influence on actions/emotions"
        recs = [_rec("zh", "pst", di, "correct", sub="Desires influence on actions", category="Desire")] * 3
        recs += [_rec("zh", "pst", di, "incorrect", sub="Desires influence on actions", category="Desire")]
        recs += [_rec("zh", "pst", di, "incorrect", sub="Desires influence on emotions (beliefs)", category="Desire")]
        paper = aggregate(recs, "paper")["languages"]["zh"]
        clean = aggregate(recs, "clean")["languages"]["zh"]
        assert paper["abilities"][di] == pytest.approx((0.75 + 0.0) / 2)
        assert clean["abilities"][di] == pytest.approx(3 / 5)
        assert paper["categories"]["desire"] == pytest.approx((0.75 + 0.0) / 2)
        assert paper["tasks"]["pst"]["accuracy"] == pytest.approx(3 / 5)  # the task view is always micro

    def test_coherent_counts_only_complete_stories_and_never_errors(self) -> None:
        ik = "Information-knowledge links"
        recs = [
            _rec("en", "sit", ik, "correct", "s1", 2, category="Knowledge"),
            _rec("en", "sit", ik, "correct", "s1", 2, category="Knowledge"),
            _rec("en", "sit", ik, "correct", "s2", 2, category="Knowledge"),
            _rec("en", "sit", ik, "incorrect", "s2", 2, category="Knowledge"),
            _rec("en", "sit", ik, "correct", "s3", 2, category="Knowledge"),  # partial story
            _rec("en", "sit", ik, "error", "s4", 1, category="Knowledge"),
        ]
        m = aggregate(recs)["languages"]["en"]
        assert m["coherent"]["sit"] == {"stories": 2, "passed": 1, "accuracy": 0.5, "drop": pytest.approx(4 / 5 - 0.5)}
        assert m["tasks"]["sit"]["n"] == 5 and m["tasks"]["sit"]["errors"] == 0  # errors are not answers
        assert m["n"] == 5

    def test_clean_mode_drops_defective_stories_from_the_coherent_test(self) -> None:
        recs = [_rec("en", "frt", "Faux pas", "correct", "s1", 1, category="Non-Literal Communication"),
                _rec("en", "frt", "Faux pas", "correct", "s2", 1, category="Non-Literal Communication", defect="broken block")]
        assert aggregate(recs, "paper")["languages"]["en"]["coherent"]["frt"]["stories"] == 2
        assert aggregate(recs, "clean")["languages"]["en"]["coherent"]["frt"]["stories"] == 1

    def test_unparseable_counts_as_not_correct_and_is_reported(self) -> None:
        recs = [_rec("en", "fbt", "Content false beliefs", "unparseable"), _rec("en", "fbt", "Content false beliefs", "correct")]
        m = aggregate(recs)["languages"]["en"]
        assert m["tasks"]["fbt"]["unparseable"] == 1 and m["tasks"]["fbt"]["accuracy"] == 0.5

    def test_the_printed_metrics_summarise_each_language(self, fixtures_dir: Path) -> None:
        bench, samples = _load(fixtures_dir, languages="en", tries=1)
        records = [_run(bench, s, _gold_answer(s))[1] for s in samples]
        text = "\n".join(terminal_lines(bench.metrics(records)))
        assert "tombench en (paper aggregation): task AVG 100.0 | ability AVG 100.0 | coherent AVG 100.0" in text
        assert "(unweighted means of the task, category and coherent rates below) every task present False" in text
        for task in ("pst", "fbt", "sst", "frt"):
            assert f"{task} 100.0 [" in text.split("tombench en tasks")[1].split("\n  tombench")[0], task
        assert "tombench en coherent stories (Table 22: % of stories with every question right): pst 100.0" in text
        assert terminal_lines(bench.metrics([])) == []


class TestScoring:
    def _sample(
        self, fixtures_dir: Path, sid: str = "en-false_belief_task-0002", **settings: Any
    ) -> tuple[ToMBench, ToMBenchSample]:
        bench, samples = _load(fixtures_dir, languages="en", **settings)
        return bench, _sample(samples, sid)

    def test_votes_are_mapped_back_to_original_letters(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir)
        requests, record = _run(bench, s, _gold_answer(s))  # always the displayed letter showing "Blue jar" (B)
        assert len(requests) == 5 and len({r.key for r in requests}) > 1
        assert record.outcome is Outcome.CORRECT and record.parsed == "B" and record.gold == "B" and record.parse_rate == 1.0
        assert record.details["votes"] == ["B"] * 5 and record.details["first_try"] == "B"
        assert record.details["story_size"] == 6 and "defect" not in record.details
        assert [t["original"] for t in record.details["trials"]] == ["B"] * 5
        assert [f"[[{t['shown']}]]" for t in record.details["trials"]] == list(record.responses)
        assert record.message == "" and dict(record.facets) == dict(s.facets)

    def test_all_unreadable_tries_make_the_item_unparseable_not_wrong(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir)
        _, record = _run(bench, s, lambda r: Response(text="hmm"))
        assert record.outcome is Outcome.UNPARSEABLE and record.parse_rate == 0.0 and record.parsed is None
        assert "unparseable" in record.message and "Blue jar" in record.message
        assert "(False Belief Task.jsonl line 2): unparseable" in record.message

    def test_official_extraction_reproduces_upstream_default(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir, extraction="official", tries=1, permutations="none")
        _, record = _run(bench, s, lambda r: Response(text="hmm"))
        assert record.outcome is Outcome.INCORRECT and record.parsed == "A"

    def test_strict_extraction_needs_double_brackets(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir, extraction="strict", tries=1, permutations="none")
        assert _run(bench, s, lambda r: Response(text="The answer is B"))[1].outcome is Outcome.UNPARSEABLE
        assert _run(bench, s, lambda r: Response(text="[[A]] no, [[B]]"))[1].parsed == "B"

    def test_c_or_d_on_a_binary_item_is_an_always_wrong_vote(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir, "en-strange_story_task-0001", tries=1, permutations="none")
        record = score(s, bench.config, [(0, 1)], ["[[D]]"])
        assert record.outcome is Outcome.INCORRECT and record.parsed == ""
        assert "-> D -> invalid" in record.message

    def test_failure_message_shows_the_tries_and_a_known_defect(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir, tries=2, permutations="cyclic")
        s = dataclasses.replace(s, defect="known problem")
        record = score(s, bench.config, [(0, 1, 2, 3), (1, 2, 3, 0)], ["[[A]]", "[[A]]"])
        assert record.outcome is Outcome.INCORRECT and record.details["defect"] == "known problem"
        assert record.message.splitlines() == [
            "ToMBench en False Belief Task / Location false beliefs (False Belief Task.jsonl line 2): incorrect",
            f"story: {s.context.render()}",
            "question: Where will Xiao Zhou look for the cookies when he returns?",
            "options (original order):",
            "  A. Red box", "  B. Blue jar", "  C. Fridge", "  D. Drawer",
            "gold: B. Blue jar",
            "final answer (majority of 2 tries, lenient extraction): A",
            "  try 1 [shown A=A B=B C=C D=D]: '[[A]]' -> A -> A",
            "  try 2 [shown A=B B=C C=D D=A]: '[[A]]' -> A -> B",
            "note: known release defect: known problem",
        ]

    def test_loglikelihood_requests_pick_the_highest_scoring_option(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir, scoring="loglikelihood", tries=2)
        orders = [t.order for t in tries(s, bench.config, "loglikelihood")]
        program = bench.program(s)
        reqs = list(next(program))
        assert all(r.kind == "loglikelihood" and r.choices[0] == "[[A]]" and r.settings.max_new_tokens == 0 for r in reqs)
        responses = [Response(logprobs=tuple(0.0 if o[pos] == 1 else -5.0 for pos in range(4))) for o in orders]
        with pytest.raises(StopIteration) as stop:
            program.send(responses)
        record = stop.value.value
        assert record.outcome is Outcome.CORRECT and record.responses == (None, None)

    def test_loglikelihood_of_the_option_text_normalised_by_bytes(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir, scoring="loglikelihood", tries=1, permutations="none", ll_target="text",
                                ll_normalise="bytes")
        # Summed: "Red box" (A) wins; per byte: "Blue jar" (B, gold) wins.
        _, record = _run(bench, s, lambda r: Response(logprobs=(-7.0, -7.9, -60.0, -60.0)))
        assert record.parsed == "B" and record.outcome is Outcome.CORRECT
        requests, _ = _run(bench, s, lambda r: Response(logprobs=(-7.0, -7.9, -60.0, -60.0)))
        assert requests[0].choices == ("Red box", "Blue jar", "Fridge", "Drawer")

    def test_a_malformed_loglikelihood_response_is_an_unreadable_try(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir, scoring="loglikelihood", tries=1)
        _, record = _run(bench, s, lambda r: Response(logprobs=(0.0, -1.0)))
        assert record.outcome is Outcome.UNPARSEABLE

    def test_both_scores_by_generation_and_records_the_loglikelihood_pick(self, fixtures_dir: Path) -> None:
        bench, s = self._sample(fixtures_dir, scoring="both", tries=1, permutations="none")

        def answer(r: Request) -> Response:
            return Response(text="[[B]]") if r.kind == "generate" else Response(logprobs=(0.0, -1.0, -2.0, -3.0))

        requests, record = _run(bench, s, answer)
        assert [r.kind for r in requests] == ["generate", "loglikelihood"]
        assert record.outcome is Outcome.CORRECT and record.parsed == "B"
        assert record.details["loglikelihood_answer"] == "A" and record.details["loglikelihood_correct"] is False
        m = to_json(bench.metrics([record]))["languages"]["en"]
        assert m["generate_vs_loglikelihood_disagreement"] == 1.0 and m["loglikelihood_accuracy"] == 0.0

    def test_a_story_passes_coherence_only_if_every_question_passes(self, fixtures_dir: Path) -> None:
        bench, samples = _load(fixtures_dir, languages="en", tries=1)
        story = next(d for d in bench.derived(samples) if d.id == "en-strange_story_task-story001")
        members = [_sample(samples, m) for m in story.members]
        good = {m.id: _run(bench, m, _gold_answer(m))[1] for m in members}
        assert evaluate(story, good, bench.rule(story.kind)).passed
        bad = dict(good, **{members[1].id: _run(bench, members[1], lambda r: Response(text="[[A]]"))[1]})
        verdict = evaluate(story, bad, bench.rule(story.kind))
        assert not verdict.passed and verdict.failed_members == (members[1].id,)

    def test_settings_are_validated(self) -> None:
        with pytest.raises(TomConfigError):
            ToMBench({"tries": 0})
        with pytest.raises(TomConfigError, match="not one of"):
            ToMBench({"prompt": "fancy"})
        with pytest.raises(TomConfigError, match="no setting"):
            ToMBench({"temperature": 1})
        assert ToMBench({"languages": "zh,en,zh"}).settings["languages"] == "zh,en"

    def test_partial_and_checksum_settings(self) -> None:
        assert ToMBench().describe()["settings"]["partial"] == "false" and ToMBench().settings["partial"] is False
        assert ToMBench({"partial": True}).describe()["settings"]["partial"] == "true"
        assert ToMBench({"partial": "yes"}).settings["partial"] is True
        with pytest.raises(TomConfigError, match="partial='maybe': expected true or false"):
            ToMBench({"partial": "maybe"})
        with pytest.raises(TomConfigError, match="expected a sha256 of 64 hex digits"):
            ToMBench({"sha256": "False Belief Task.jsonl=abc"})
        assert ToMBench({"sha256": "/some/SHA256SUMS"}).settings["sha256"] == "/some/SHA256SUMS"  # read by load()

    def test_the_constructor_reads_nothing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The xdist controller rebuilds a benchmark just to call `metrics`: no data may be needed for that."""

        def no_io(*args: object, **kwargs: object) -> None:
            raise AssertionError("the constructor touched the filesystem")

        monkeypatch.setattr(Path, "glob", no_io)
        monkeypatch.setattr(Path, "read_text", no_io)
        monkeypatch.setattr(Path, "is_dir", no_io)
        bench = ToMBench({"languages": "en"})
        assert to_json(bench.metrics([])) == {"aggregation": "paper", "languages": {}}
