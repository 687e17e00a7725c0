"""OpenToM's prompts and label mapping against the spec's verbatim texts and rule examples (spec §3.2-§3.5), and its metrics:
the official pooling of multihop and the batch means.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_tom.evals import opentom
from pytest_tom.evals.opentom import OpenToM, OpenToMSample
from pytest_tom.framework.base import DataSource
from pytest_tom.record import Outcome, Record

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
HEAD = "Read and comprehend the following short story. Then, answer the question that follows.\n\n"


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> dict[str, OpenToMSample]:
    samples = OpenToM({"partial": "true"}).load(DataSource(FIXTURES, False, tmp_path_factory.mktemp("c")))
    return {s.id: s for s in samples}


ENDS = {"location_cg_fo-0": '? Answer the question with "Yes" or "No". Do not give any explanation.',
        "location_fg_fo-2": "? Answer the question without any explanation.",
        "multihop_fo-0": '? Answer with "more full", "equally full", or "less full". Answer the question without any '
                         "explanation.",
        "multihop_fo-4": '? Answer with "more accessible", "equally accessible", or "less accessible". Answer the '
                         "question without any explanation.",
        "attitude-0": ', assuming that you observed the action? Answer with "positive", "neutral", or "negative". '
                      "Answer without any explanation."}


@pytest.mark.parametrize("item", sorted(ENDS))
def test_the_vanilla_prompt_is_the_template_with_the_raw_narrative(items: dict[str, OpenToMSample], item: str) -> None:
    s = items[f"22222222-{item}"]
    got = opentom.prompt(s)
    stem = s.question.split("?")[0] if item == "attitude-0" else s.question[:-1]
    assert got == HEAD + s.context.render() + "\n\nQuestion: " + stem + ENDS[item]


def test_a_narrative_that_begins_with_a_space_is_inserted_unchanged(items: dict[str, OpenToMSample]) -> None:
    assert opentom.prompt(items["11111111-location_cg_fo-0"]).startswith(HEAD + " Lena and Omar")


POST = "Reason step by step before answering. Write the answer in the end."


def test_cot_prompts_cut_the_instruction_as_the_official_code(items: dict[str, OpenToMSample]) -> None:
    coarse, full = items["22222222-location_cg_fo-0"], items["22222222-multihop_fo-1"]
    assert opentom.prompt(coarse, "cot").endswith('? Answer the question with "Yes" or "No". ' + POST)
    assert opentom.prompt(full, "cot").endswith('or "less full". ' + POST)
    assert opentom.prompt(items["22222222-attitude-0"], "cot").endswith('or "negative". ' + POST)
    fine = items["22222222-location_fg_fo-2"]
    assert opentom.prompt(fine, "cot") == opentom.prompt(fine, "cot", "fixed") == (
        HEAD + fine.context.render() + "\n\nQuestion: " + fine.question + " " + POST)
    odd = items["11111111-location_fg_fo-2"]  # a '?' in the story: the official cut loses the question
    assert opentom.prompt(odd, "cot") == HEAD + " Lena and Omar shared a house. Where had the kite gone? " + POST
    assert opentom.prompt(odd, "cot", "fixed").endswith(odd.question + " " + POST)
    assert opentom.prompt(coarse, "selfask").endswith('"No". Break the original question into sub-questions. Explicitly '
                                                      "state the follow-up questions, and the answers to the follow-up "
                                                      "questions. Aggregate the answers to the follow-up questions and "
                                                      'write the answer in the end as "Final Answer: [answer]".')


def test_simtom_asks_the_character_then_the_question(items: dict[str, OpenToMSample]) -> None:
    s = items["22222222-location_cg_so-1"]  # Theo about Rosa: Theo leads
    bench = OpenToM({"partial": "true", "prompt": "simtom"})
    program = bench.program(s)
    (first,) = next(program)
    assert [(m.role, m.content) for m in first.messages] == [
        ("system", opentom.SYSTEM),
        ("user", f"The following is a sequence of events:\n\n{s.context.render()}\n\nWhich events does Theo know about?\n")]
    from pytest_tom.request import Response
    (second,) = program.send([Response(text="Theo saw the bowl.")])
    assert [m.role for m in second.messages] == ["system", "user", "system", "user"]
    assert second.messages[2].content == "Theo saw the bowl."
    assert second.messages[3].content == "Answer the following question without any explanation:\n" + s.question
    narrator = items["22222222-location_fg_fo-0"]
    (only,) = next(bench.program(narrator))
    assert [m.content for m in only.messages] == [f"{narrator.context.render()}\n\nAnswer the following question "
                                                  f"without any explanation:\n{narrator.question}"]


@pytest.mark.parametrize(("item", "text", "label"), [
    ("location_cg_fo-0", "Nope", 0), ("location_cg_fo-0", "I don't know", 0), ("location_cg_fo-0", "Yes, I know.", -1),
    ("location_cg_fo-0", "eyes", 1), ("location_cg_fo-0", "Maybe", -1),
    ("multihop_fo-0", "It is not less full, it is more full", 1), ("multihop_fo-0", "Fuller.", 2),
    ("multihop_fo-0", "Equally full.", 3), ("multihop_fo-0", "unchanged", -1),
    ("multihop_fo-4", "More accessible.", 1), ("multihop_fo-4", "less accessible", 2),
    ("multihop_fo-4", "inaccessible", -1),
    ("attitude-0", "Negative.", 2), ("attitude-0", "Answer: B", 3), ("attitude-0", "positive and negative", -1),
    ("attitude-0", "My attitude is positive. It is not negative.", 1), ("attitude-0", "Neutral", 3),
    ("location_fg_fo-2", "In the pantry.", 2), ("location_fg_fo-2", "the fruit bowl", 1), ("location_fg_fo-2", "", 3),
    ("location_fg_fo-2", "the fruit bowl pantry", 3), ("location_fg_fo-2", "fruit pantry", 2),
])
def test_the_official_label_mapping(items: dict[str, OpenToMSample], item: str, text: str, label: int) -> None:
    assert opentom.label(items[f"22222222-{item}"].extra, text) == label


def test_strip_det_tests_character_prefixes() -> None:
    assert [opentom.strip_det(s) for s in ("a basket", "attic storage bin", "an X", "theater", "Andrew's box")] == [
        "basket", "ttic storage bin", "n x", "ater", "andrew's box"]


def test_outcomes_unparseable_tie_and_cot_last_line(items: dict[str, OpenToMSample]) -> None:
    fine, coarse = items["22222222-location_fg_fo-2"], items["22222222-location_cg_fo-0"]
    assert opentom.score(coarse, "Maybe").outcome is Outcome.UNPARSEABLE
    tie = opentom.score(fine, "the fruit bowl or the pantry")
    assert tie.outcome is Outcome.INCORRECT and tie.parsed == 3 and "ambiguous: equal overlap" in tie.message
    misses = [opentom.score(fine, neither) for neither in ("somewhere", "")]
    for miss in misses:  # the official tie too, and said so: not an answer read as a wrong place
        assert miss.outcome is Outcome.INCORRECT and miss.parsed == 3 and "names neither place" in miss.message
    counted = {m.name: m.value for m in opentom.diagnostics([tie, *misses])}  # and counted beside the official numbers
    assert counted["names_neither.fo"] == 2 and tie.details == {"label": 3}
    assert opentom.score(coarse, "Yes it moved.\nNo", cot=True).outcome is Outcome.CORRECT
    assert opentom.score(coarse, "It moved. Therefore, no", cot=True).parsed == 0


def test_a_release_answer_naming_neither_place_is_unscored_and_only_counted(items: dict[str, OpenToMSample]) -> None:
    bad = dataclasses.replace(items["11111111-location_fg_fo-0"], gold="a garage shlef")  # as the real release's one
    r = opentom.score(bad, "A garage shelf.")
    assert (r.outcome, r.gold, r.parsed, r.scored) == (Outcome.UNSCORED, None, 2, False)
    assert r.message.splitlines()[0].endswith("unscored: no scorable gold: the release's answer names neither place of plot_info")
    right = opentom.score(items["11111111-location_fg_fo-1"], "treasure chest")
    m = {x.name: x.value for x in opentom.aggregate([r, right], batched=False)}
    assert (m["loc_fine.fo.n"], m["loc_fine.fo.n_scored"], m["loc_fine.fo.no_gold"], m["loc_fine.fo.accuracy"]) == (2, 1, 1, 1.0)
    assert {x.name: x.value for x in opentom.diagnostics([r, right])}["narrator_control"] == 1.0


def rec(cell: str, genre: str, gold: int | None, parsed: int | None, batch: str = "1") -> Record:
    outcome = Outcome.UNPARSEABLE if parsed is None else Outcome.CORRECT if parsed == gold else Outcome.INCORRECT
    return Record("opentom", f"{cell}{gold}{parsed}", outcome, {"cell": cell, "genre": genre, "order": cell[-2:],
                  "perspective": "mover", "narrative": "1", "batch": batch}, parsed=parsed, gold=gold)


def test_multihop_pools_shared_labels_and_drops_unparseable() -> None:
    recs = [rec("multihop/fo", "fullness", 1, 1), rec("multihop/fo", "fullness", 2, None),
            rec("multihop/fo", "accessibility", 1, 1), rec("multihop/fo", "accessibility", 3, 2)]
    m = {x.name: x.value for x in opentom.aggregate(recs, batched=False)}
    assert m["multihop.fo.accuracy"] == 2 / 3 and m["multihop.fo.macro_f1"] == pytest.approx((1 + 0) / 3 + 0 / 3)
    assert m["multihop.fo.unparseable"] == 1 and m["multihop.fo.accuracy_strict"] == 2 / 4
    assert m["multihop.fo.corrupted_rate"] == (0.5 + 0) / 2 and m["fullness.fo.corrupted_rate"] == 0.5
    assert m["accessibility.fo.accuracy"] == 0.5


def test_paper_protocol_reports_mean_and_population_std_over_batches() -> None:
    recs = [rec("attitude", "attitude", 1, 1, "1"), rec("attitude", "attitude", 1, 2, "2"),
            rec("attitude", "attitude", 2, 2, "2")]
    m = {x.name: x for x in opentom.aggregate(recs, batched=True)}
    assert m["attitude.accuracy.per_batch"].value == (1.0, 0.5)
    assert m["attitude.accuracy.mean"].value == 0.75 and m["attitude.accuracy.std"].value == 0.25


def test_a_cell_with_nothing_read_has_no_rate_never_zero() -> None:
    recs = [rec("attitude", "attitude", 1, None), rec("attitude", "attitude", 2, None)]
    m = {x.name: x for x in opentom.aggregate(recs, batched=False)}
    assert m["attitude.accuracy"].value is None and m["attitude.macro_f1"].value is None
    assert m["attitude.unparseable"].value == 2 and m["attitude.accuracy_strict"].value == 0.0
    assert m["attitude.corrupted_rate"].value == 1.0


def test_printed_rates_count_the_answers_read_as_their_n() -> None:
    recs = [rec("attitude", "attitude", 1, 1), rec("attitude", "attitude", 1, None), rec("attitude", "attitude", 2, 1)]
    m = {x.name: x for x in opentom.aggregate(recs, batched=False)}
    assert (m["attitude.accuracy"].value, m["attitude.accuracy"].n, m["attitude.macro_f1"].n) == (0.5, 2, 2)
    assert m["attitude.accuracy_strict"].n == 3


def test_a_batch_with_nothing_read_leaves_the_mean_undefined() -> None:
    recs = [rec("attitude", "attitude", 1, 1, "1"), rec("attitude", "attitude", 1, None, "2")]
    m = {x.name: x for x in opentom.aggregate(recs, batched=True)}
    assert m["attitude.accuracy.per_batch"].value == (1.0, None)
    assert m["attitude.accuracy.mean"].value is None and m["attitude.accuracy.std"].value is None


def twin(narrative: str, who: str, coarse: int | None, fine: int | None, order: str = "fo") -> list[Record]:
    out = []
    for genre, parsed in (("loc_coarse", coarse), ("loc_fine", fine)):
        out.append(Record("opentom", f"{narrative}-{genre}-{who}", Outcome.UNPARSEABLE if parsed is None else Outcome.CORRECT,
                          {"cell": f"{genre}/{order}", "genre": genre, "order": order, "perspective": who,
                           "narrative": narrative, "length": "normal", "batch": "1"}, parsed=parsed, gold=parsed))
    return out


def test_coarse_fine_agreement_pairs_a_characters_twins_and_gates_unreadable_as_disagreeing() -> None:
    # Yes (1) with the original place (1), No (0) with the move-to place (2): agree; Yes with the move-to place: not;
    # an unparseable coarse (None) or a fine tie (3) makes the pair unreadable; a narrator or a lone question, no pair
    recs = [*twin("1", "mover", 1, 1), *twin("1", "observer", 0, 2), *twin("2", "mover", 1, 2), *twin("2", "observer", None, 1),
            *twin("3", "mover", 0, 3), *twin("3", "narrator", 1, 1), twin("4", "mover", 1, 1)[0], *twin("1", "mover", 0, 1, "so")]
    m = {x.name: x for x in opentom.diagnostics(recs)}
    assert (m["coarse_fine_agreement.fo"].value, m["coarse_fine_agreement.fo"].n) == (2 / 3, 3)
    assert m["coarse_fine_agreement.fo_unreadable"].value == 2 and m["coarse_fine_agreement.so"].value == 0.0
    gates = {g.name: g for g in opentom.gate_rates(recs)}
    fo = gates["coarse_fine_agreement.fo"]
    assert dict(zip(fo.ids, fo.values, strict=True)) == {"fo-1-mover-normal": 1.0, "fo-1-observer-normal": 1.0,
                                                          "fo-2-mover-normal": 0.0, "fo-2-observer-normal": 0.0,
                                                          "fo-3-mover-normal": 0.0}
    assert fo.clusters == ("1", "1", "2", "2", "3") and gates["coarse_fine_agreement.so"].values == (0.0,)
