"""The facet tables derive exactly what the five parallel declarations said before them (c01d35f).

Strata decide which items `--tom-sample` draws, summary tables their order in the report, gate facets
the names of gateable metrics and clusters the intervals: a changed value here changes a user's run.
The literals below were computed once from the declarations the tables replaced.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.evals import BUILTIN
from pytest_tom.framework.base import Benchmark, Facet, described


class Today(NamedTuple):
    strata: tuple[str, ...]
    summary: tuple[tuple[str, ...], ...]
    gates: tuple[str, ...]
    marks: str
    clusters: tuple[str, ...]


PROBES = ({}, {"story": "s1"}, {"conversation": "c1"}, {"context": "t1"}, {"unit": "u7-set2"},
          {"story": "s1", "conversation": "c1", "context": "t1", "unit": "u7-set2"})
"""Facets of a unit, each asked for its cluster (unit id "id")."""

TODAY = {
    "tombench": Today(
        strata=("language", "ability"),
        summary=(("language",), ("language", "task"), ("language", "category"), ("language", "ability")),
        gates=("language", "task", "category", "ability"),
        marks=(
            "ast atypical_emotional_reactions belief beliefs_based_action_emotions coherence "
            "completion_of_failed_actions content_false_beliefs desire desire_action_contradiction "
            "desires_influence_on_actions_emotions discrepant_desires discrepant_emotions discrepant_intentions "
            "egocentric_lies emotion emotion_regulation en extra faux_pas fbt four_choice frt hidden_emotions ht "
            "humor identity_false_beliefs information_knowledge_links intention intentions_explanations "
            "involuntary_lies irony_sarcasm knowledge knowledge_attention_links knowledge_pretend_play_links "
            "location_false_beliefs mixed_emotions moral_emotions multiple_desires nonliteral "
            "percepts_knowledge_links prediction_of_actions pst second_order_beliefs sequence_false_beliefs sit "
            "sst tombench two_choice typical_emotional_reactions uot white_lies zh"
        ),
        clusters=("id", "s1", "id", "id", "id", "s1"),
    ),
    "fantom": Today(
        strata=("context", "question_type", "accessibility"),
        summary=(("context",), ("context", "accessibility", "question_type")),
        gates=("context", "family", "question_type", "accessibility"),
        marks=(
            "accessible acyclic all_star all_tom answerability answerability_all belief character_all choice "
            "consistency cyclic fact fantom first_order free_response full inaccessible info_accessibility "
            "info_accessibility_all list second_order short yes_no"
        ),
        clusters=("id", "id", "c1", "id", "u7", "c1"),
    ),
    "simpletom": Today(
        strata=("question_type", "scenario"),
        summary=(("question_type",), ("question_type", "severity"), ("question_type", "scenario")),
        gates=("question_type", "scenario", "severity"),
        marks=(
            "behavior behind_the_scene_service_industry chain food_item_in_grocery_store hidden_body_part_feature "
            "inside_containers_for_personal_belongings inside_reuse_labeled_containers judgment letter_balance "
            "locked_devices_accounts mental_state provider_info_healthcare seller_info_in_second_hand_market sev1 "
            "sev2 sev3 simpletom true_property_pretentious_labels unobserved_unethical_actions"
        ),
        clusters=("id", "s1", "id", "id", "id", "s1"),
    ),
    "tomato": Today(
        strata=("mental_state", "order", "false_belief"),
        summary=(("order", "false_belief"), ("mental_state", "order"), ("mental_state", "false_belief")),
        gates=("mental_state", "order", "false_belief", "openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism"),
        marks=(
            "agreeableness_high agreeableness_low belief conscientiousness_high conscientiousness_low desire "
            "emotion extraversion_high extraversion_low false_belief false_belief_gap first_order intention "
            "knowledge neuroticism_high neuroticism_low openness_high openness_low personality_robustness "
            "second_order tomato"
        ),
        clusters=("id", "id", "c1", "id", "id", "c1"),
    ),
    "tomvalley": Today(
        strata=("question_type", "item"),
        summary=(("question_type",), ("item",), ("item", "question_type")),
        gates=("item", "question_type", "subtype", "scenario", "span"),
        marks=(
            "action belief composition emotion influence intention scenario1 scenario2 scenario3 scenario4 "
            "scenario5 scenario6 scenario7 span1_2 span1_4 span1_5 span1_6 span1_7 span2_3 span3_4 span4_5 "
            "span5_6 span6_7 tomvalley transformation transformation1 transformation2 transformation3 "
            "understanding"
        ),
        clusters=("id", "id", "id", "t1", "id", "t1"),
    ),
}


def _cls(name: str) -> type[Benchmark[object]]:
    module, attr = BUILTIN[name].split(":")
    cls: type[Benchmark[object]] = getattr(importlib.import_module(module), attr)
    return cls


@pytest.mark.parametrize("name", sorted(TODAY))
def test_the_facet_table_derives_todays_declarations(name: str) -> None:
    cls, today = _cls(name), TODAY[name]
    assert cls.strata == today.strata
    assert cls.summary_facets == today.summary
    assert cls.gate_facets == today.gates
    assert sorted(cls.mark_docs) == today.marks.split()
    bench = cls({"embedder": "none"} if name == "fantom" else {})
    assert tuple(bench.cluster(p, "id") for p in PROBES) == today.clusters


@pytest.mark.parametrize("name", sorted(TODAY))
def test_every_class_declares_one_table_and_no_parallel_lists(name: str) -> None:
    cls = _cls(name)
    assert cls.facets and all(isinstance(f, Facet) for f in cls.facets)
    for derived in ("strata", "summary_facets", "gate_facets", "mark_docs"):
        assert derived not in cls.__dict__ or "facets" in cls.__dict__


def test_derived_gate_facets_are_the_ones_declared_so() -> None:
    cls = type("Toy", (Benchmark,), {"name": "toy", "description": "d",
                                     "facets": (Facet("a", gate=True), Facet("b", derived_gate=True), Facet("c"))})
    assert (cls.gate_facets, cls.derived_gate_facets) == (("a",), ("b",))
    assert _cls("bigtom").derived_gate_facets == ("group",) and _cls("tombench").derived_gate_facets == ()


def test_a_table_with_two_clusters_is_refused() -> None:
    with pytest.raises(TypeError, match="only one facet can be the cluster"):
        type("Two", (Benchmark,), {"name": "two", "description": "d",
                                   "facets": (Facet("a", cluster=True), Facet("b", cluster=True))})


def test_whole_needs_the_cluster_and_only_hitom_samples_whole_clusters() -> None:
    with pytest.raises(TypeError, match="whole=True needs cluster=True"):
        type("Loose", (Benchmark,), {"name": "loose", "description": "d", "facets": (Facet("a", whole=True),)})
    assert [n for n in (*TODAY, "hitom") if _cls(n).sample_whole] == ["hitom"]


def test_settings_added_after_0_1_0_say_what_runs_did_before_them() -> None:
    from pytest_tom.evals.fantom import FANToM
    from pytest_tom.evals.simpletom import SimpleToM

    assert FANToM.settings_before() == {"evaluator": "2023"}
    assert SimpleToM.settings_before() == {"cot_mental_state": "false", "extra_options": "none"}


@pytest.mark.parametrize(("bench", "setting"), [("tomato", "prompt"), ("tombench", "prompt"), ("hitom", "gold"),
                                                ("fantom", "evaluator"), ("simpletom", "layout")])
def test_a_one_value_setting_refuses_a_list(bench: str, setting: str) -> None:
    from pytest_tom.evals import Registry

    cls = Registry().get(bench)
    option = next(o for o in cls.options if o.name == setting)
    with pytest.raises(TomConfigError, match="one value only"):
        cls({setting: ",".join(option.choices[:2])})


def test_list_settings_still_take_lists() -> None:
    from pytest_tom.evals import Registry

    assert Registry().get("tombench")({"languages": "zh,en"}).languages == ("zh", "en")
    assert Registry().get("fantom")({"contexts": "short,full"}).contexts == ("short", "full")


def test_described_marks_read_the_underscores_as_spaces_in_their_markers_text() -> None:
    assert described("OpenToM {} question.", "first_order", "mover") == {
        "first_order": "OpenToM first order question.", "mover": "OpenToM mover question."}
    assert described("X {}.") == {}
