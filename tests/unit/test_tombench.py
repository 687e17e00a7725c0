"""ToMBench: extraction, permutations, prompts, loading and the paper's aggregation."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from pytest_tom.benchmarks.base import DataSource
from pytest_tom.benchmarks.tombench import (
    LETTERS,
    SYSTEM_PROMPTS,
    USER_TEMPLATES,
    ToMBench,
    aggregate,
    canonical_ability,
    extract_answer,
    extract_official,
    load_file,
    majority,
    permutation,
    render_user,
    strip_option_prefix,
)
from pytest_tom.errors import TomDataError
from pytest_tom.types import Outcome


class TestExtraction:
    """Golden tests from the spec (S4)."""

    def test_official_defaults_to_a_when_nothing_matches(self) -> None:
        assert extract_official("") == ("A", False)
        assert extract_answer("", "official", 4) == "A"

    def test_official_priority_is_by_letter_not_position(self) -> None:
        assert extract_answer("[[B]] on reflection [[A]]", "official", 4) == "A"
        assert extract_answer("[[B]]", "official", 4) == "B"

    def test_official_falls_back_to_last_capital_letter(self) -> None:
        assert extract_answer("I would ask my Dad", "official", 4) == "D"
        assert extract_answer("answer: [C]", "official", 4) == "C"

    def test_lenient_reports_unreadable_answers_instead_of_guessing_a(self) -> None:
        assert extract_answer("", "lenient", 4) is None
        assert extract_answer("no idea, sorry", "lenient", 4) is None
        assert extract_answer("[[B]]", "lenient", 4) == "B"

    def test_strict_takes_last_double_bracket_and_validates_letter(self) -> None:
        assert extract_answer("[[A]] ... actually [[B]]", "strict", 4) == "B"
        assert extract_answer("[[C]]", "strict", 2) is None
        assert extract_answer("The answer is B", "strict", 4) is None
        assert extract_answer(None, "strict", 4) is None


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


def test_majority_breaks_ties_by_first_recorded_vote() -> None:
    assert majority(["B", "A", "A", "B", "C"]) == "B"
    assert majority(["C", "A", "A"]) == "A"


class TestPrompts:
    """Byte-exact snapshot of the official templates (S5)."""

    def test_template_lengths_match_the_official_prompts(self) -> None:
        assert [len(SYSTEM_PROMPTS[k]) for k in [("zh", "vanilla"), ("zh", "cot"), ("en", "vanilla"), ("en", "cot")]] == [283, 321, 797, 929]
        assert [len(USER_TEMPLATES[k]) for k in [("zh", 4), ("zh", 2), ("en", 4), ("en", 2)]] == [93, 65, 115, 87]
        assert "serveral" in SYSTEM_PROMPTS[("en", "vanilla")]

    def test_template_hashes_are_pinned(self) -> None:
        digest = hashlib.sha256(
            json.dumps([SYSTEM_PROMPTS[k] for k in sorted(SYSTEM_PROMPTS)] + [USER_TEMPLATES[k] for k in sorted(USER_TEMPLATES)]).encode()
        ).hexdigest()
        assert digest == PROMPTS_SHA256

    def test_rendered_user_prompt_for_a_fixture_item(self, fixtures_dir: Path) -> None:
        items = load_file(fixtures_dir / "tombench" / "data" / "Strange Story Task.jsonl", ["en"])
        binary = items[0]
        assert render_user(binary, (1, 0)) == (
            "[Story]\n" + binary.story + "\n\n[Question]\nIs what the brother says true?\n\n[Candidate Answers]\nA. No\nB. Yes"
        )
        zh = load_file(fixtures_dir / "tombench" / "data" / "False Belief Task.jsonl", ["zh"])[2]
        text = render_user(zh, (0, 1, 2, 3))
        assert text.endswith("[答案选项]\nA. 蓝色罐子\nB. 红色盒子\nC. 冰箱\nD. 抽屉")


PROMPTS_SHA256 = "715a74c64586127d6766c25779b610e0b0e8813fc10de2bdd9f7464b0a610bf5"


class TestLoader:
    def test_fixture_items_both_languages(self, fixtures_dir: Path) -> None:
        bench = ToMBench()
        qs = bench.load(DataSource(fixtures_dir, False, fixtures_dir))
        assert len(qs) == 42
        assert Counter(q.facets["language"] for q in qs) == {"en": 21, "zh": 21}
        assert qs[0].qid == "en-false_belief_task-0001"
        assert {q.facets["qtype"] for q in qs} == {"two_choice", "four_choice"}

    def test_nan_options_make_binary_items(self, fixtures_dir: Path) -> None:
        items = load_file(fixtures_dir / "tombench" / "data" / "Faux-pas Recognition Test.jsonl", ["en", "zh"])
        assert [len(i.options) for i in items if i.language == "en"] == [2, 4, 4, 2]

    def test_dirty_gold_and_prefixes_are_normalised(self, fixtures_dir: Path) -> None:
        hidden = load_file(fixtures_dir / "tombench" / "data" / "Hidden Emotions.jsonl", ["zh"])
        assert hidden[1].answer == "A"  # stored as "A. " in the file (release defect D2)
        assert hidden[0].options[0] == "开心"  # "A. 开心" prefix stripped
        fbt = load_file(fixtures_dir / "tombench" / "data" / "False Belief Task.jsonl", ["zh"])
        assert fbt[2].options[0] == "蓝色罐子"  # "A.蓝色罐子" (no space) stripped too

    def test_prefix_is_stripped_only_for_the_options_own_letter(self) -> None:
        assert strip_option_prefix("B. text", "B") == "text"
        assert strip_option_prefix("B. text", "A") == "B. text"
        assert strip_option_prefix("A、文本", "A") == "文本"

    def test_stories_follow_index_restarts(self, fixtures_dir: Path) -> None:
        bench = ToMBench({"languages": "en"})
        qs = bench.load(DataSource(fixtures_dir, False, fixtures_dir))
        groups = bench.groups(qs)
        sizes = sorted((g.gid, len(g.members)) for g in groups)
        assert sizes == [
            ("en-false_belief_task-story001", 6),
            ("en-false_belief_task-story002", 6),
            ("en-faux_pas_recognition_test-story001", 4),
            ("en-persuasion_story_task-story001", 1),
            ("en-strange_story_task-story001", 2),
        ]

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
        assert canonical_ability("Desire: Desires influence on emotions (beliefs)")[2] == "Desires influence on emotions (beliefs)"

    @pytest.mark.parametrize(
        ("mutate", "field", "message"),
        [
            (lambda r: r.update({"答案\nANSWER": "E"}), "答案\nANSWER", "not a letter"),
            (lambda r: r.update({"OPTION-D": float("nan")}), "OPTION-D", "needs both C and D"),
            (lambda r: r.update({"能力\nABILITY": "Belief: Telepathy"}), "能力\nABILITY", "unknown ability"),
            (lambda r: r.pop("STORY"), "STORY", "missing"),
            (lambda r: r.update({"序号\nINDEX": "one"}), "序号\nINDEX", "integer"),
        ],
    )
    def test_bad_records_name_file_record_and_field(self, tmp_path: Path, fixtures_dir: Path, mutate, field: str, message: str) -> None:
        src = fixtures_dir / "tombench" / "data" / "False Belief Task.jsonl"
        lines = src.read_text(encoding="utf-8").splitlines()
        rec = json.loads(lines[1])
        mutate(rec)
        lines[1] = json.dumps(rec, ensure_ascii=False)
        bad = tmp_path / "False Belief Task.jsonl"
        bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(TomDataError) as err:
            load_file(bad, ["en", "zh"])
        text = str(err.value)
        assert str(bad) in text and "line 2" in text and repr(field) in text and message in text

    def test_invalid_json_line_is_reported_with_its_line(self, tmp_path: Path) -> None:
        bad = tmp_path / "Hidden Emotions.jsonl"
        bad.write_text('{"a": 1}\n{broken\n', encoding="utf-8")
        with pytest.raises(TomDataError, match=r"line 1|line 2"):
            load_file(bad, ["en"])

    def test_missing_data_explains_how_to_get_it(self, tmp_path: Path) -> None:
        with pytest.raises(TomDataError, match="--tom-download"):
            ToMBench().load(DataSource(tmp_path, False, tmp_path / "cache"))


def _rec(lang: str, task: str, ability: str, outcome: str, story: str = "", size: int = 0, sub: str | None = None, category: str = "Belief") -> dict:
    facets = {"language": lang, "task": task, "ability": ability, "category": category, "sub_label": sub or ability, "story": story}
    if story:
        facets["story_size"] = str(size)
    return {"outcome": outcome, "facets": facets, "parse_rate": 1.0, "parsed": "A", "details": {}}


class TestAggregation:
    def test_task_avg_is_macro_and_abilities_pool_across_files(self) -> None:
        recs = [_rec("en", "fbt", "Content false beliefs", "correct")] * 3 + [_rec("en", "fbt", "Content false beliefs", "incorrect")]
        recs += [_rec("en", "uot", "Sequence false beliefs", "correct")] * 1 + [_rec("en", "uot", "Sequence false beliefs", "incorrect")] * 1
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
        assert paper["tasks"]["pst"]["accuracy"] == pytest.approx(3 / 5)  # the task view is always micro

    def test_coherent_counts_only_complete_stories_and_never_errors(self) -> None:
        recs = [
            _rec("en", "sit", "Information-knowledge links", "correct", "s1", 2, category="Knowledge"),
            _rec("en", "sit", "Information-knowledge links", "correct", "s1", 2, category="Knowledge"),
            _rec("en", "sit", "Information-knowledge links", "correct", "s2", 2, category="Knowledge"),
            _rec("en", "sit", "Information-knowledge links", "incorrect", "s2", 2, category="Knowledge"),
            _rec("en", "sit", "Information-knowledge links", "correct", "s3", 2, category="Knowledge"),  # partial story
            _rec("en", "sit", "Information-knowledge links", "error", "s4", 1, category="Knowledge"),
        ]
        m = aggregate(recs)["languages"]["en"]
        assert m["coherent"]["sit"] == {"stories": 2, "passed": 1, "accuracy": 0.5, "drop": pytest.approx(4 / 5 - 0.5)}
        assert m["tasks"]["sit"]["n"] == 5 and m["tasks"]["sit"]["errors"] == 0  # errors are not answers

    def test_unparseable_counts_as_not_correct_and_is_reported(self) -> None:
        recs = [_rec("en", "fbt", "Content false beliefs", "unparseable"), _rec("en", "fbt", "Content false beliefs", "correct")]
        m = aggregate(recs)["languages"]["en"]
        assert m["tasks"]["fbt"]["unparseable"] == 1 and m["tasks"]["fbt"]["accuracy"] == 0.5


class TestScoring:
    def _question(self, fixtures_dir: Path, **settings):
        bench = ToMBench({"languages": "en", **settings})
        qs = bench.load(DataSource(fixtures_dir, False, fixtures_dir))
        return bench, next(q for q in qs if q.qid == "en-false_belief_task-0002")

    def test_votes_are_mapped_back_to_original_letters(self, fixtures_dir: Path) -> None:
        bench, q = self._question(fixtures_dir)
        planned = bench.requests_for(q.payload)
        orders = [o for o, _ in planned]
        # Always pick whichever displayed letter shows the gold option (B = "Blue jar").
        texts = [f"[[{LETTERS[o.index(1)]}]]" for o in orders]
        result = bench.score(q, orders, texts)
        assert result.outcome is Outcome.CORRECT and result.parsed == "B" and result.parse_rate == 1.0

    def test_all_unreadable_tries_make_the_item_unparseable_not_wrong(self, fixtures_dir: Path) -> None:
        bench, q = self._question(fixtures_dir)
        planned = bench.requests_for(q.payload)
        result = bench.score(q, [o for o, _ in planned], ["hmm"] * len(planned))
        assert result.outcome is Outcome.UNPARSEABLE and result.parse_rate == 0.0
        assert "unparseable" in result.message and "Blue jar" in result.message

    def test_official_extraction_reproduces_upstream_default(self, fixtures_dir: Path) -> None:
        bench, q = self._question(fixtures_dir, extraction="official", tries=1, permutations="none")
        planned = bench.requests_for(q.payload)
        result = bench.score(q, [o for o, _ in planned], ["hmm"])
        assert result.outcome is Outcome.INCORRECT and result.parsed == "A"

    def test_c_or_d_on_a_binary_item_is_an_always_wrong_vote(self, fixtures_dir: Path) -> None:
        bench = ToMBench({"languages": "en", "tries": 1, "permutations": "none"})
        qs = bench.load(DataSource(fixtures_dir, False, fixtures_dir))
        q = next(q for q in qs if q.qid == "en-strange_story_task-0001")
        result = bench.score(q, [(0, 1)], ["[[D]]"])
        assert result.outcome is Outcome.INCORRECT and result.parsed == ""

    def test_loglikelihood_requests_pick_the_highest_scoring_option(self, fixtures_dir: Path) -> None:
        from pytest_tom.types import Response

        bench, q = self._question(fixtures_dir, scoring="loglikelihood", tries=2)
        program = bench.solve(q)
        reqs = next(program)
        assert all(r.kind == "loglikelihood" and r.choices[0] == "[[A]]" for r in reqs)
        orders = [bench.requests_for(q.payload, "loglikelihood")[i][0] for i in range(2)]
        responses = [Response(logprobs=tuple(0.0 if o[pos] == 1 else -5.0 for pos in range(4))) for o in orders]
        with pytest.raises(StopIteration) as stop:
            program.send(responses)
        assert stop.value.value.outcome is Outcome.CORRECT

    def test_tries_must_be_positive(self) -> None:
        from pytest_tom.errors import TomConfigError

        with pytest.raises(TomConfigError):
            ToMBench({"tries": 0})
        with pytest.raises(TomConfigError, match="not one of"):
            ToMBench({"prompt": "fancy"})
        with pytest.raises(TomConfigError, match="no setting"):
            ToMBench({"temperature": 1})


def test_nan_is_not_none() -> None:
    """JSON NaN parses to a float, which the official `!= None` check misses (spec P5)."""
    assert math.isnan(json.loads('{"x": NaN}')["x"])
