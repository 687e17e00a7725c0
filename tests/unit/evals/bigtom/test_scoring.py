"""BigToM's prompts byte for byte against the spec's renders of the official `evaluate_llm.py` (line 1, Noor, built
here from the spec's field table), the instruction texts against the release files' sha256, and the official
substring rule with its quirks (gold key first, `parse_chat_response` on chat 0shot-cot only) plus the text fallback.
"""

from __future__ import annotations

import hashlib

import pytest

from pytest_tom.evals.bigtom import scoring
from pytest_tom.evals.bigtom.data import BigToMSample, samples
from pytest_tom.evals.bigtom.scoring import parse_chat_response, read, score, solve
from pytest_tom.record import Outcome
from pytest_tom.request import Response

STORY = ("Noor is working as a barista at a busy coffee shop. Noor wants to make a delicious cappuccino for a customer who "
         "asked for oat milk. Noor grabs a milk pitcher and fills it with oat milk. Noor believes that the milk pitcher "
         "contains oatmilk. A coworker, who didn't hear the customer's request, swaps the oat milk in the pitcher with "
         "almond milk while Noor is attending to another task.")
LINE1 = [STORY, "Noor sees her coworker swapping the milk.", "Noor does not see her coworker swapping the milk.",
         "Noor opens the fridge again and reaches for the oat milk.", "Noor makes the cappuccino using the milk in the pitcher.",
         "Does Noor believe the milk pitcher contains oat milk or almond milk?",
         "Does Noor want to make a cappuccino with oat milk or almond milk?", "What will Noor do?",
         "Noor believes the milk pitcher contains almond milk.", "Noor wants to make a cappuccino with oat milk.",
         "Noor will open the fridge once again to take out the oat milk and replace the almond milk with oat milk.",
         "Noor believes the milk pitcher contains oat milk.", "Noor wants to make a cappuccino with oat milk.",
         "Noor will make the cappuccino using the milk in the pitcher.",
         "A decorative mug falls from a shelf in the coffee shop.", "Noor sees the decorative mug falling from the shelf.",
         "Noor does not see the decorative mug falling from the shelf.", "auto", "0"]
ITEMS = {s.id: s for s in samples([LINE1], "all")}
FB = ITEMS["1_forward_belief_false_belief-001"]
USER = (f"Story: {STORY} Noor does not see her coworker swapping the milk.\nQuestion: Does Noor believe the milk pitcher "
        "contains oat milk or almond milk?\nChoose one of the following:\na)Noor believes the milk pitcher contains oat "
        "milk.\nb)Noor believes the milk pitcher contains almond milk.")
KOFI = ("Story: Kofi is a fisherman from a small village in Ghana. He wants to catch enough fish today to provide for his "
        "family and sell the surplus at the market. Kofi repaired his fishing net last night. While Kofi is away from his "
        "boat, a group of monkeys comes and plays with the fishing net, tearing it apart. Kofi does not see the monkeys "
        "damaging his fishing net.\nQuestion: Does Kofi believe his fishing net is in good condition or torn apart?\n"
        "Choose one of the following:\na)Kofi believes his fishing net is in good condition.\nb)Kofi believes his "
        "fishing net is torn apart.\nAnswer: a)Kofi believes his fishing net is in good condition.")


def test_the_instructions_are_the_release_files_byte_for_byte() -> None:  # sha256 from the data's SOURCE.md
    for text, sha in ((scoring.EVALUATE, "e147b4427db20c7b184bd5c9faa3fa93413e911f1dc66e0538afdd17a449df72"),
                      (scoring.EVALUATE_COT, "43821184a29c187e0357fce8958e475571f14012540df8c2d00ea98ce8fb461e"),
                      (scoring.COT_CHAT, "4c0a30cda6374181e6f0e825eb0156621c68f15c72c8cbfbba2319809ac4ffe9")):
        assert hashlib.sha256(text.encode()).hexdigest() == sha


def test_the_spec_worked_example_story_and_control() -> None:
    assert FB.context.render() == STORY + " Noor does not see her coworker swapping the milk."
    assert ITEMS["0_forward_belief_true_control-001"].context.render() == (
        "Noor is working as a barista at a busy coffee shop. Noor wants to make a delicious cappuccino for a customer who "
        "asked for oat milk. Noor grabs a milk pitcher and fills it with oat milk. A decorative mug falls from a shelf in "
        "the coffee shop. Noor sees the decorative mug falling from the shelf.")


def test_completion_prompts_match_the_spec_renders() -> None:
    zero = scoring.first(FB, "0shot", "completion", 0)
    assert zero.messages[0].content == f"{scoring.EVALUATE}\n\n{USER}\nAnswer:"
    assert zero.settings.stop == ("Story:", "Question:") and zero.settings.max_new_tokens == 25
    one = scoring.first(FB, "1shot", "completion", 0).messages[0].content
    assert one == f"{scoring.EVALUATE}\n{KOFI}\n\n\n{USER}\nAnswer:"
    cot = scoring.first(FB, "1shot-cot", "completion", 0)  # the official quirk: no exemplar
    assert cot == scoring.first(FB, "0shot-cot", "completion", 0) and cot.settings.max_new_tokens == 200
    assert cot.messages[0].content == f"{scoring.EVALUATE_COT}\n\n{USER}\nThought: Let's think step by step:"
    second = scoring.answer_call(cot, " think.")
    assert second.messages[0].content == cot.messages[0].content + " think.\nWrite the answer as <option>) <answer>\nAnswer:"
    assert second.settings.max_new_tokens == 30 and second.settings.stop == ("Story:", "Question:", "Answer:")


def test_chat_prompts_match_the_spec_renders() -> None:
    zero = scoring.first(FB, "0shot", "chat", 0)
    assert [(m.role, m.content) for m in zero.messages] == [("system", scoring.EVALUATE), ("user", USER)]
    assert zero.settings.stop == () and zero.settings.max_new_tokens == 25
    one = scoring.first(FB, "1shot-cot", "chat", 0)
    kofi_user, kofi_answer = KOFI.rsplit("\nAnswer: ", 1)
    assert [m.role for m in one.messages] == ["system", "user", "assistant", "user"]
    assert one.messages[0].content == scoring.COT_CHAT and one.messages[1].content == kofi_user
    assert one.messages[2].content == (
        "Thought: Let's think step by step:\n1) Kofi repaired his fishing net last night. So last night he believes that "
        "his net is fixed.\n2) While Kofi is away from his boat, a group of monkeys comes and plays with the fishing net, "
        "tearing it apart.\n3) Kofi does not see the monkeys damaging his fishing net. So, his belief about his net stays "
        "the same. He thinks that it is fixed.\n4) Does Kofi believe his fishing net is in good condition or torn apart?\n"
        f"5) Kofi believes his fishing net is in good condition.\nAnswer: {kofi_answer}")
    assert one.settings.max_new_tokens == 220 and scoring.first(FB, "1shot", "chat", 0).messages[2].content == (
        f"Answer: {kofi_answer}")
    assert scoring.first(FB, "0shot", "chat", 7).settings.max_new_tokens == 7


@pytest.mark.parametrize(("answer", "letter", "via", "both"), [
    ("Answer:a)Noor believes", "a", "key", False), ("(A) oat", "a", "key", False), ("b) almond", "b", "key", False),
    ("a) or b)?", "a", "key", True), ("b) no, a)", "a", "key", True), ("an idea) yes", "a", "key", False),
    ("Noor believes the milk pitcher contains ALMOND milk", "b", "text", False),
    ("I cannot tell.", None, "none", False),
    ("Noor believes the milk pitcher contains oat milk. Noor believes the milk pitcher contains almond milk.", None, "none",
     False),
])
def test_the_official_rule_reads_the_gold_key_first(answer: str, letter: str | None, via: str, both: bool) -> None:
    assert FB.gold == "a" and read(FB, answer, cut=False) == (letter, via, both)


def test_first_extraction_and_the_chat_0shot_cot_cut() -> None:
    assert read(FB, "b) no, a)", cut=False, extraction="first") == ("b", "key", True)
    assert parse_chat_response("Thought: x\nAnswer: b)almond") == "b)almond"
    assert parse_chat_response("Answer:a)oat") == ")oat" and parse_chat_response("b) almond milk") == "nd milk"
    assert read(FB, "Thought: hmm\nAnswer:a)Noor believes the milk pitcher contains oat milk.", cut=True)[1:] == ("text", False)
    assert read(FB, "b)", cut=True) == (None, "none", False)


def drive(sample: BigToMSample, method: str, fmt: str, *texts: str) -> tuple[list, object]:
    program, sent = solve(sample, method, fmt, 0, "official"), []
    reqs = next(program)
    try:
        for text in texts:
            sent.append(reqs[0])
            reqs = program.send([Response(text=text)])
    except StopIteration as stop:
        return sent, stop.value
    raise AssertionError("the program asked for more")


def test_programs_score_the_last_call_and_keep_every_response() -> None:
    sent, rec = drive(FB, "0shot-cot", "completion", " thinking", " a) oat")
    assert len(sent) == 2 and rec.outcome is Outcome.CORRECT and rec.responses == (" thinking", " a) oat")
    assert rec.request_keys == tuple(r.key for r in sent)
    sent, rec = drive(FB, "0shot-cot", "chat", "Thought: x. Answer: b) almond")
    assert len(sent) == 1 and rec.outcome is Outcome.INCORRECT and rec.parsed == "b"
    wrong = score(FB, "no idea")
    assert wrong.outcome is Outcome.UNPARSEABLE and not wrong.passed and "no idea" in wrong.message


def test_the_grader_prompt_is_the_official_template() -> None:  # grade.txt's sha256 from the data's SOURCE.md
    assert hashlib.sha256(scoring.GRADE.encode()).hexdigest() == (
        "404a7d15ad335f1ec94d9cb1f65640591925033aaaa06a61497b3d3750471fda")
    assert scoring.grade(FB, "I am not sure") == (
        f"{scoring.GRADE}\n\nHere is the question:\nDoes Noor believe the milk pitcher contains oat milk or almond milk?\n"
        "Here is the true answer:\na) Noor believes the milk pitcher contains oat milk.\nHere is the false answer:\n"
        "b) Noor believes the milk pitcher contains almond milk.\nHere is the predicted answer:\nI am not sure\nIs the "
        "predicted answer close to the true answer compared to the false answer? Answer True or False.\nA:")


def test_only_an_unread_answer_asks_the_judge_and_its_verdict_stays_beside_the_outcome() -> None:
    program = solve(FB, "0shot-cot", "chat", 0, "official")
    next(program)
    (judge,) = program.send([Response(text="Thought: hmm. Answer: unsure")])
    assert judge.model == "judge" and judge.settings == scoring.GRADER
    assert "Here is the predicted answer:\nunsure\nIs" in judge.messages[0].content  # the chat 0shot-cot cut, as official
    with pytest.raises(StopIteration) as stop:
        program.send([Response(text=" True")])
    rec = stop.value.value
    assert rec.outcome is Outcome.UNPARSEABLE and rec.details["judge"] == "True" and rec.details["judge_correct"]
    assert drive(FB, "0shot", "chat", "a)")[1].details.keys() == {"via", "both_keys"}  # a read answer: no judge
