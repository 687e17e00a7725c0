"""The perturbation strategies are sound: hypothesis tests of the strategies themselves, on the bundled fixtures."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_tom.errors import TomConfigError
from pytest_tom.evals.fantom import FANToM
from pytest_tom.evals.fantom.strategies import other_character
from pytest_tom.evals.simpletom import SimpleToM
from pytest_tom.evals.simpletom.strategies import witness
from pytest_tom.evals.tombench import ToMBench
from pytest_tom.evals.tomvalley import ToMValley
from pytest_tom.evals.tomvalley.prompts import PromptConfig, context_request
from pytest_tom.framework.base import DataSource
from pytest_tom.robustness import resolve
from pytest_tom.robustness.base import registry
from pytest_tom.robustness.invariance import (
    choice_permutations,
    irrelevant_sentences,
    renamings,
    rephrasings,
    whitespace_noise,
)
from pytest_tom.robustness.text import FILLERS_EN
from pytest_tom.sample import Sample

REGISTRY = {s.name: s for s in resolve("all")}

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
SRC = DataSource(FIXTURES, False, Path("unused"))
FAST = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def simpletom() -> list[Sample[Any]]:
    return SimpleToM({"partial": "true"}).load(SRC)


@pytest.fixture(scope="module")
def fantom() -> list[Sample[Any]]:
    return FANToM({"partial": "true"}).load(SRC)


@pytest.fixture(scope="module")
def tomvalley() -> list[Sample[Any]]:
    return ToMValley({"contexts": "7001-7002"}).load(SRC)


def words(text: str, name: str) -> int:
    return len(re.findall(rf"(?<!\w){re.escape(name)}(?!\w)", text))


# -- renaming ------------------------------------------------------------------------------------------------


def test_renaming_is_consistent_and_collision_free(fantom: list[Sample[Any]]) -> None:
    sample = next(s for s in fantom if s.extra.qtype == "answerability_list")

    @FAST
    @given(renamings(sample))
    def check(p: Any) -> None:
        out = p.sample
        mapping = dict(pair.split(" -> ") for pair in p.change.removeprefix("renamed ").split(", "))
        assert p.size == len(mapping) >= 1 and len(set(mapping.values())) == len(mapping)
        for old, new in mapping.items():
            before = "\n".join([sample.context.render(), sample.question])
            after = "\n".join([out.context.render(), out.question])
            assert words(after, old) == 0 and words(before, new) == 0  # all renamed, and the new name was free
            assert words(after, new) == words(before, old)
            assert new in out.characters and old not in out.characters
        renamed_gold = {mapping.get(g, g) for g in sample.gold}
        assert set(out.gold) == renamed_gold  # FANToM's who-knows list follows the rename
        assert out.id == sample.id and out.marks == sample.marks

    check()


def test_renaming_keeps_the_users_pool_and_shrinks_to_one_rename(tomvalley: list[Sample[Any]]) -> None:
    sample = tomvalley[0]
    smallest = find(renamings(sample, names="female"), lambda p: True)
    assert smallest.size == 1 and smallest.change.endswith("-> Alice")
    # the rewritten ToMValley sample still renders the official prompt, with the new name in the dialogue
    text = context_request(smallest.sample, PromptConfig()).messages[0].content
    assert "'Alice':" in text or "Alice:" in text
    with pytest.raises(InvalidArgument, match="names must be a non-empty list"):
        renamings(sample, names=[])
    with pytest.raises(InvalidArgument, match="choose one of"):
        renamings(sample, names="martian")


def test_a_sample_without_characters_cannot_be_renamed() -> None:
    sample = ToMBench({"partial": "true"}).load(SRC)[0]
    assert not REGISTRY["rename"].applies(sample)
    with pytest.raises(InvalidArgument, match="names no characters"):
        REGISTRY["rename"].strategy(sample)


# -- options -------------------------------------------------------------------------------------------------


def test_permutations_remap_the_gold(simpletom: list[Sample[Any]], fantom: list[Sample[Any]]) -> None:
    def run(sample: Sample[Any]) -> None:
        @FAST
        @given(choice_permutations(sample))
        def check(p: Any) -> None:
            out = p.sample
            assert out.choice(out.gold).text == sample.choice(sample.gold).text
            assert sorted(c.text for c in out.choices) == sorted(c.text for c in sample.choices)
            assert [c.label for c in out.choices] == [c.label for c in sample.choices]
            assert [c.text for c in out.choices] != [c.text for c in sample.choices]

        check()

    for sample in (simpletom[0], next(s for s in fantom if s.choices)):
        run(sample)
    four = next(s for s in ToMBench({"partial": "true"}).load(SRC) if len(s.choices) == 4)
    moved_gold = find(choice_permutations(four), lambda p: p.sample.gold != four.gold)
    assert moved_gold.size == 2  # shrunk to a single swap


# -- text edits ----------------------------------------------------------------------------------------------


def test_irrelevant_sentences_only_add_sentences_about_nobody(simpletom: list[Sample[Any]]) -> None:
    sample = simpletom[0]

    @FAST
    @given(irrelevant_sentences(sample))
    def check(p: Any) -> None:
        text = p.sample.context.render()
        added = [f for f in FILLERS_EN if f in text]
        assert len(added) == p.size
        rest = text
        for f in added:
            rest = rest.replace(f, "")
        assert " ".join(rest.split()) == " ".join(sample.context.render().split())
        assert all(words(f, c) == 0 for f in added for c in sample.characters)
        assert (p.sample.question, p.sample.choices, p.sample.gold) == (sample.question, sample.choices, sample.gold)

    check()
    assert find(irrelevant_sentences(sample), lambda p: True).size == 1
    with pytest.raises(InvalidArgument, match="max_insertions=0"):
        irrelevant_sentences(sample, max_insertions=0)


def test_conversations_get_no_inserted_lines(fantom: list[Sample[Any]]) -> None:
    assert not REGISTRY["irrelevant"].applies(fantom[0])
    with pytest.raises(InvalidArgument, match="conversations are left alone"):
        irrelevant_sentences(fantom[0])


def test_whitespace_noise_only_doubles_spaces(simpletom: list[Sample[Any]], tomvalley: list[Sample[Any]]) -> None:
    def run(sample: Sample[Any]) -> None:
        @FAST
        @given(whitespace_noise(sample))
        def check(p: Any) -> None:
            text = p.sample.context.render()
            assert text.count("  ") - sample.context.render().count("  ") == p.size
            assert re.sub(" +", " ", text) == re.sub(" +", " ", sample.context.render())
            if sample.benchmark == "tomvalley":  # the turn layout is intact: the official prompt still renders
                context_request(p.sample, PromptConfig())

        check()

    for sample in (simpletom[3], tomvalley[5]):
        run(sample)


def test_rephrasings_keep_the_names_and_change_the_words(simpletom: list[Sample[Any]]) -> None:
    for sample in simpletom:
        if not REGISTRY["rephrase"].applies(sample):
            continue
        p = find(rephrasings(sample), lambda p: True)
        assert p.sample.question != sample.question
        assert all(words(p.sample.question, c) == words(sample.question, c) for c in sample.characters)
        assert p.sample.gold == sample.gold


# -- counterfactuals -----------------------------------------------------------------------------------------


def test_witness_flips_mental_state_and_behavior_golds(simpletom: list[Sample[Any]]) -> None:
    by_type = {s.extra.question_type: s for s in simpletom if s.extra.story_id == "jam_jar_sev2"}
    ms = find(witness(by_type["mental_state"]), lambda p: True).sample
    assert ms.choice(ms.gold).text == "Yes" and by_type["mental_state"].choice(by_type["mental_state"].gold).text == "No"
    assert "Priya is fully aware that the jar of strawberry jam" in ms.context.render()
    beh = find(witness(by_type["behavior"]), lambda p: True).sample
    orig = by_type["behavior"]
    assert beh.gold != orig.gold and beh.choice(beh.gold).text == "report the moldy jam to a store clerk"
    assert not REGISTRY["witness"].applies(by_type["judgment"])


def test_other_character_flips_by_the_sets_list(fantom: list[Sample[Any]]) -> None:
    yes_no = [s for s in fantom if s.extra.qtype.endswith("_yn")]
    assert yes_no and all(REGISTRY["other_character"].applies(s) for s in yes_no)
    def run(sample: Sample[Any]) -> None:
        @FAST
        @given(other_character(sample))
        def check(p: Any) -> None:
            x = p.sample.extra
            assert p.sample.gold == ("no" if sample.gold == "yes" else "yes")
            assert (x.binary_character in sample.extra.list_correct) == (p.sample.gold == "yes")
            assert words(p.sample.question, x.binary_character) == 1
            assert words(p.sample.question, sample.extra.binary_character) == 0

        check()

    for sample in yes_no:
        run(sample)


def test_strategies_declare_where_they_apply_and_resolve_checks_names(simpletom: list[Sample[Any]]) -> None:
    assert [s.name for s in resolve("rename, permute")] == ["rename", "permute"]
    assert {s.name for s in resolve("all")} >= {"rename", "permute", "irrelevant", "whitespace", "rephrase", "witness",
                                                "other_character"}
    with pytest.raises(TomConfigError, match="unknown robustness strategy 'swap'; known: .*rename"):
        resolve("swap")
    with pytest.raises(TomConfigError, match=r"did you mean rename\?"):
        resolve("renam")
    assert list(registry())[:2] == ["other_character", "witness"], "a benchmark's own strategies come first"
    assert REGISTRY["witness"].benchmarks == ("simpletom",) and REGISTRY["witness"].kind == "counterfactual"
    with pytest.raises(InvalidArgument, match="applies to fantom, not simpletom"):
        REGISTRY["other_character"].strategy(simpletom[0])


@given(st.data())
@settings(max_examples=20, deadline=None, derandomize=True, database=None)
def test_any_drawn_perturbation_of_any_fixture_question_keeps_its_id(data: st.DataObject) -> None:
    samples = SimpleToM({"partial": "true"}).load(SRC)
    sample = data.draw(st.sampled_from(samples))
    spec = data.draw(st.sampled_from([s for s in REGISTRY.values() if s.applies(sample)]))
    p = data.draw(spec.strategy(sample))
    assert p.sample.id == sample.id and p.strategy == spec.name and p.size >= 1


def test_tomato_questions_are_rephrased_between_its_two_shapes() -> None:
    from pytest_tom.evals.tomato import ToMATO

    samples = ToMATO({"subset": "fb", "partial": "true"}).load(SRC)
    when_first = [s for s in samples if s.question.startswith("When ")]
    assert when_first and all(REGISTRY["rephrase"].applies(s) for s in when_first)
    for s in when_first:
        q = find(rephrasings(s), lambda p: True).sample.question
        speaker = s.question[len("When "):].split(" says ")[0]
        utterance = s.question.split(" says ", 1)[1].rsplit('", ', 1)[0] + '"'
        assert q.startswith(("How does ", "What does ")) and f" says {utterance}?" in q
        assert q.split(" ")[2] == speaker  # the asked person comes first now
    assert not any(REGISTRY["rephrase"].applies(s) for s in samples if not s.question.startswith("When "))


def test_the_generic_robustness_package_names_no_benchmark() -> None:
    """Benchmark knowledge lives with its benchmark (`evals/<bench>/strategies.py`), offered as a `Perturbable`."""
    from pytest_tom.evals import BUILTIN

    package = Path(__file__).resolve().parents[3] / "pytest_tom" / "robustness"
    for path in package.glob("*.py"):
        text = path.read_text(encoding="utf-8").lower()
        assert not [b for b in BUILTIN if b in text], f"{path.name} names a benchmark"
