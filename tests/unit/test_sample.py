"""The typed sample: conversation parsing, generic rewriting (rename, permuted choices) and gold kinds."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_tom.sample import (
    Choice,
    Conversation,
    Sample,
    Story,
    Turn,
    map_text,
    permute_choices,
    rename,
    rewrite_text,
)


@dataclass(frozen=True, slots=True)
class Inner:
    owner: str
    count: int = 0


@dataclass(frozen=True, slots=True)
class Extra:
    """A benchmark extension: plain strings and containers, so `map_text` can rewrite it."""

    note: str
    names: tuple[str, ...] = ()
    lines: list[str] = field(default_factory=list)
    table: Mapping[str, str] = field(default_factory=dict)
    inner: Inner | None = None
    score: float = 0.5
    flag: bool = True
    missing: None = None


def story_sample(**kw: Any) -> Sample[Extra]:
    base: dict[str, Any] = dict(
        benchmark="toy",
        id="en-Anna-0001",
        context=Story("Anna puts the ball in the basket. Ben watches Anna. Annabel is away; anna's ball stays."),
        question="Where will Anna look for the ball?",
        choices=(Choice("A", "In the basket, as Anna left it"), Choice("B", "In the box where Ben put it"),
                 Choice("C", "Nowhere")),
        gold="A",
        characters=("Anna", "Ben"),
        facets={"language": "en", "character": "Anna", "task": "Anna task"},
        marks=("toy", "Anna"),
        extra=Extra(note="Anna's note for Ben", names=("Anna", "Ben"), lines=["Ben left"],
                    table={"Anna": "Ben's friend"}, inner=Inner("Anna", 3)),
        source="toy.jsonl:1 (Anna)",
    )
    base.update(kw)
    return Sample(**base)


def conversation_sample(**kw: Any) -> Sample[None]:
    base: dict[str, Any] = dict(
        benchmark="toy",
        id="conv-1",
        context=Conversation.parse("Anna: Hi Ben!\nBen: Hello Anna.\n(Anna leaves)\nBen: Bye"),
        question="Does Anna know what Ben said after she left?",
        choices=(),
        gold=("Ben",),
        characters=("Anna", "Ben"),
        facets={"character": "Anna"},
        marks=(),
        extra=None,
    )
    base.update(kw)
    return Sample(**base)


# -- contexts ---------------------------------------------------------------------------------------------------


def test_conversation_splits_speaker_turns() -> None:
    conv = Conversation.parse("Anna: Hi: there\nnarration line\n\nBen Lee: ok\n: no speaker\nx:y")
    assert conv.turns == (
        Turn("Anna", "Hi: there"), Turn("", "narration line"), Turn("", ""), Turn("Ben Lee", "ok"),
        Turn("", ": no speaker"), Turn("", "x:y"),
    )
    assert conv.speakers == ("Anna", "Ben Lee")
    assert Conversation((Turn("A", "x"), Turn("B", "y"), Turn("A", "z"))).speakers == ("A", "B")
    assert Story("text").render() == "text"


@settings(max_examples=300)
@given(st.text())
@example("")
@example("\n")
@example("A: b\r\nC: d\n")
@example("A: \nB:  two spaces\n: x\n::: y: z")
def test_conversation_render_gives_any_text_back_byte_for_byte(text: str) -> None:
    assert Conversation.parse(text).render() == text


@given(st.lists(st.tuples(st.sampled_from(["Anna", "Ben", ""]), st.text(alphabet=st.characters(blacklist_characters="\n")))))
def test_conversation_of_speaker_lines_round_trips(lines: list[tuple[str, str]]) -> None:
    text = "\n".join(f"{who}: {what}" if who else what for who, what in lines)
    conv = Conversation.parse(text)
    assert conv.render() == text
    assert Conversation.parse(conv.render()) == conv


# -- rename -------------------------------------------------------------------------------------------------------


def test_rename_rewrites_every_text_field_by_whole_words() -> None:
    s = rename(story_sample(), {"Anna": "Zoe"}, facets=("character",))
    assert s.context == Story("Zoe puts the ball in the basket. Ben watches Zoe. Annabel is away; zoe's ball stays.")
    assert s.question == "Where will Zoe look for the ball?"
    assert s.choices == (Choice("A", "In the basket, as Zoe left it"), Choice("B", "In the box where Ben put it"),
                         Choice("C", "Nowhere"))
    assert s.characters == ("Zoe", "Ben")
    assert s.facets == {"language": "en", "character": "Zoe", "task": "Anna task"}  # only the named facet


def test_rename_leaves_identity_fields_alone() -> None:
    before = story_sample()
    s = rename(before, {"Anna": "Zoe"}, facets=("character",))
    assert (s.benchmark, s.id, s.marks, s.gold, s.source, s.defect) == (
        before.benchmark, before.id, before.marks, before.gold, before.source, before.defect)
    assert [c.label for c in s.choices] == ["A", "B", "C"]
    assert before.question == "Where will Anna look for the ball?"  # the original is not mutated


def test_rename_rewrites_the_extension() -> None:
    extra = rename(story_sample(), {"Anna": "Zoe", "Ben": "Max"}).extra
    assert extra == Extra(note="Zoe's note for Max", names=("Zoe", "Max"), lines=["Max left"],
                          table={"Anna": "Max's friend"},  # mapping keys are field names or ids, not text
                          inner=Inner("Zoe", 3))


def test_rename_swaps_names_at_once() -> None:
    s = rename(story_sample(), {"Anna": "Ben", "Ben": "Anna"})
    assert s.context == Story("Ben puts the ball in the basket. Anna watches Ben. Annabel is away; ben's ball stays.")
    assert s.characters == ("Ben", "Anna")


def test_rename_prefers_the_longest_name() -> None:
    s = rename(story_sample(context=Story("Anna and Anna Lee met.")), {"Anna": "Zoe", "Anna Lee": "Max Roe"})
    assert s.context == Story("Zoe and Max Roe met.")


def test_rename_renames_the_lower_case_form() -> None:
    s = rename(story_sample(context=Story("ANNA, Anna, anna")), {"Anna": "Zoe"})
    assert s.context == Story("ANNA, Zoe, zoe")


def test_rename_of_a_conversation_renames_speakers_and_set_answers() -> None:
    s = rename(conversation_sample(), {"Anna": "Zoe", "Ben": "Max"}, facets=("character",))
    assert s.context.render() == "Zoe: Hi Max!\nMax: Hello Zoe.\n(Zoe leaves)\nMax: Bye"
    assert isinstance(s.context, Conversation) and s.context.speakers == ("Zoe", "Max")
    assert s.gold == ("Max",) and s.facets == {"character": "Zoe"}


def test_rename_of_a_free_response_gold() -> None:
    s = rename(conversation_sample(gold="Anna thinks Ben is gone"), {"Anna": "Zoe"})
    assert s.gold == "Zoe thinks Ben is gone"


def test_rename_with_nothing_to_rename_is_the_same_sample() -> None:
    before = story_sample()
    assert rename(before, {}) is before
    with pytest.raises(ValueError, match="empty name"):
        rename(before, {"": "x"})


def test_rename_handles_names_with_regex_characters() -> None:
    s = rename(story_sample(context=Story("Mr. B. met Mrs. X (again)")), {"Mr. B.": "Dr. Q", "X": "Y"})
    assert s.context == Story("Dr. Q met Mrs. Y (again)")


TOKENS = ["Anna", "Ben", "anna", "ben", "Annabel", "Benny", "'s", " ", ", ", "\n", "x", "ANNA"]


@given(st.lists(st.sampled_from(TOKENS)).map("".join))
def test_swapping_twice_gives_the_text_back(text: str) -> None:
    s = story_sample(context=Story(text), question=text)
    swap = {"Anna": "Ben", "Ben": "Anna"}
    twice = rename(rename(s, swap), swap)
    assert twice.context == s.context and twice.question == text


# -- map_text / rewrite_text ---------------------------------------------------------------------------------------


def test_map_text_rewrites_strings_in_every_container() -> None:
    value = {"k": ("a", ["b", {"inner": "c"}]), "n": 1, "f": 1.5, "none": None, "t": True}
    assert map_text(value, str.upper) == {"k": ("A", ["B", {"inner": "C"}]), "n": 1, "f": 1.5, "none": None, "t": True}
    proxy = map_text(MappingProxyType({"a": "x"}), str.upper)
    assert isinstance(proxy, MappingProxyType) and dict(proxy) == {"a": "X"}
    assert map_text("abc", str.upper) == "ABC"
    assert map_text(Extra, str.upper) is Extra  # a class is not an instance to rewrite


def test_map_text_keeps_derived_dataclass_fields_consistent() -> None:
    @dataclass(frozen=True)
    class WithDerived:
        text: str
        length: int = field(init=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "length", len(self.text))

    out = map_text(WithDerived("ab"), lambda t: t * 3)
    assert out.text == "ababab" and out.length == 6


def test_rewrite_text_on_a_story_sample() -> None:
    s = rewrite_text(story_sample(), str.upper)
    assert s.context == Story(story_sample().context.render().upper())
    assert s.question == "WHERE WILL ANNA LOOK FOR THE BALL?"
    assert [c.text for c in s.choices] == ["IN THE BASKET, AS ANNA LEFT IT", "IN THE BOX WHERE BEN PUT IT", "NOWHERE"]
    assert s.gold == "A" and s.characters == ("ANNA", "BEN") and s.facets["character"] == "Anna"
    assert s.extra.inner == Inner("ANNA", 3) and s.extra.score == 0.5 and s.extra.flag is True


def test_rewrite_text_on_a_conversation_sample() -> None:
    s = rewrite_text(conversation_sample(), lambda t: t.replace("e", "3"), facets=("character",))
    assert isinstance(s.context, Conversation)
    assert s.context.turns[0] == Turn("Anna", "Hi B3n!") and s.context.turns[1].speaker == "B3n"
    assert s.context.turns[2] == Turn("", "(Anna l3av3s)")  # narration keeps its empty speaker
    assert s.gold == ("B3n",) and s.question.startswith("Do3s Anna know")


# -- choices and gold --------------------------------------------------------------------------------------------------


def test_permute_choices_moves_the_texts_under_the_same_labels_and_the_gold_follows() -> None:
    before = story_sample(gold="B")
    after = permute_choices(before, [2, 0, 1])
    assert after.choices == (Choice("A", "Nowhere"), Choice("B", "In the basket, as Anna left it"),
                             Choice("C", "In the box where Ben put it"))
    assert after.gold == "C" and after.choice("C").text == before.choice("B").text
    assert permute_choices(before, [0, 1, 2]) == before
    assert (after.context, after.question, after.id) == (before.context, before.question, before.id)


@given(st.permutations(range(4)), st.sampled_from("ABCD"))
def test_the_gold_text_survives_any_permutation(order: list[int], gold: str) -> None:
    s = story_sample(choices=tuple(Choice(label, f"option {i}") for i, label in enumerate("ABCD")), gold=gold)
    after = permute_choices(s, order)
    assert after.choice(after.gold_label).text == s.choice(gold).text
    assert sorted(c.text for c in after.choices) == sorted(c.text for c in s.choices)
    assert [c.label for c in after.choices] == list("ABCD")


@pytest.mark.parametrize("order", [[0, 0, 1], [0, 1], [0, 1, 2, 3], [1, 2, 3], []])
def test_permute_choices_rejects_what_is_not_a_permutation(order: list[int]) -> None:
    with pytest.raises(ValueError, match="not a permutation of 3 choices"):
        permute_choices(story_sample(), order)


def test_permute_choices_needs_a_multiple_choice_sample() -> None:
    with pytest.raises(TypeError, match="conv-1 is not a multiple-choice question"):
        permute_choices(conversation_sample(), [])


def test_permute_choices_rejects_a_gold_label_that_is_not_a_choice() -> None:
    with pytest.raises(ValueError, match="gold"):
        permute_choices(story_sample(gold="Z"), [1, 0, 2])


def test_gold_kinds() -> None:
    assert story_sample().gold_label == "A"
    with pytest.raises(TypeError, match="not a multiple-choice question"):
        _ = conversation_sample().gold_label  # a tuple of names
    with pytest.raises(TypeError, match="not a multiple-choice question"):
        _ = conversation_sample(gold="free text").gold_label
    assert story_sample().choice("B").text == "In the box where Ben put it"
    with pytest.raises(KeyError):
        story_sample().choice("Z")


def test_samples_are_frozen() -> None:
    s = story_sample()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.id = "x"  # type: ignore[misc]
