"""ToMATO prompts (App. C verbatim, both layouts, with and without system prompt, CoT), extraction and records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.evals.tomato import ToMATO
from pytest_tom.evals.tomato.prompts import COT, SYSTEM, PromptConfig, requests, user_prompt
from pytest_tom.evals.tomato.scoring import extract, score, solve
from pytest_tom.framework.base import DataSource
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Response

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures"
CONVERSATION = (
    'Lena Fischer: "Hi!"\nTomas Okafor: "Hi, how are you?"\n'
    'Lena Fischer: "Tomas, the bike you listed, is the price still four hundred?"\n'
    'Tomas Okafor: "It is, but I might take a little less for a quick sale."\n'
    'Lena Fischer: "Would three hundred work if I pick it up tonight?"\n'
    'Tomas Okafor: "Three fifty and it is yours, I will even pump the tyres."'
)
QUESTION = ('When Tomas says "It is, but I might take a little less for a quick sale.", what does Tomas think that '
            "Lena will do?")
OPTIONS = ("[A] He thinks that she will pay the full price straight away\n"
           "[B] He thinks that she will ask him to deliver it\n"
           "[C] He thinks that she will haggle over the price\n"
           "[D] He thinks that she will want a test ride first")


def sample(qid: str = "2nd-order-belief-about-intention_R8M2C_1") -> Any:
    b = ToMATO({"partial": True})
    return next(s for s in b.load(DataSource(FIXTURES, False, FIXTURES / "none")) if s.id == qid)


def ask(s: Any, config: PromptConfig, responses: list[Response]) -> Record:
    prog = solve(s, config)
    next(prog)
    with pytest.raises(StopIteration) as stop:
        prog.send(responses)
    record: Record = stop.value.value
    return record


def test_system_prompt_is_app_c_verbatim() -> None:
    assert SYSTEM == (
        "You are an expert at understanding human communication. Please leverage the information provided and "
        "choose the most probable answer to the question from the options. Output your final answer by strictly "
        "following this format: [A], [B], [C], or [D]")
    assert COT == "Let's think step by step."


def test_paper_layout_with_and_without_system_prompt() -> None:
    s = sample()
    user = f"# Transcript\n{CONVERSATION}\n\n# Question\n{QUESTION}\n\n# Options\n{OPTIONS}"
    assert user_prompt(s, "paper") == user
    [req] = requests(s, PromptConfig())
    assert [(m.role, m.content) for m in req.messages] == [("system", SYSTEM), ("user", user)]
    assert req.settings.temperature == 0 and req.settings.seed is None and req.settings.max_new_tokens == 256
    assert req.answer_labels == ("A", "B", "C", "D") and req.answer_format == "[{}]"
    [merged] = requests(s, PromptConfig(system_prompt="none"))
    assert [(m.role, m.content) for m in merged.messages] == [("user", f"{SYSTEM}\n\n{user}")]


def test_reference_layout_is_the_authors_code() -> None:
    s = sample()
    expected = (f"# Transcript \n{CONVERSATION}\n\n# Question \n{QUESTION}\n\n# Options \n"
                + "".join(line + "\n" for line in OPTIONS.split("\n")))
    assert user_prompt(s, "reference") == expected


def test_chain_of_thought_placements() -> None:
    s = sample()
    [pre] = requests(s, PromptConfig(prompt="cot"))
    assert [m.role for m in pre.messages] == ["system", "user", "assistant"] and pre.messages[-1].content == COT
    assert pre.settings.max_new_tokens == 512
    [user] = requests(s, PromptConfig(prompt="cot", cot_placement="user"))
    assert [m.role for m in user.messages] == ["system", "user"]
    assert user.messages[-1].content.endswith(f"[D] He thinks that she will want a test ride first\n\n{COT}")


def test_repeated_runs_are_distinct_cache_entries() -> None:
    reqs = requests(sample(), PromptConfig(runs=5, temperature=0.6, top_p=0.9, seed=42))
    assert [r.settings.seed for r in reqs] == [42, 43, 44, 45, 46]
    assert {(r.settings.temperature, r.settings.top_p) for r in reqs} == {(0.6, 0.9)}
    assert len({r.key for r in reqs}) == 5
    assert len({tuple(r.messages) for r in reqs}) == 1


def test_loglikelihood_request_scores_the_answer_letters() -> None:
    s = sample()
    [req] = requests(s, PromptConfig(scoring="loglikelihood"))
    assert req.kind == "loglikelihood" and req.choices == ("[A]", "[B]", "[C]", "[D]")
    assert [m.role for m in req.messages] == ["system", "user"]
    rec = ask(s, PromptConfig(scoring="loglikelihood"), [Response(logprobs=(-0.5, -2.5, -3.0, -0.5))])
    assert rec.outcome is Outcome.CORRECT and rec.parsed == "A"  # a tie goes to the earlier letter
    rec = ask(s, PromptConfig(scoring="loglikelihood"), [Response(logprobs=(-3.0, -2.5, -0.5, -0.6))])
    assert rec.outcome is Outcome.INCORRECT and rec.parsed == "C" and "log-likelihood of [A]-[D]" in rec.message
    bad = ask(s, PromptConfig(scoring="loglikelihood"), [Response(logprobs=(-1.0,))])
    assert bad.outcome is Outcome.UNPARSEABLE


@pytest.mark.parametrize(("settings", "match"), [
    ({"runs": "3"}, "repeated runs need sampling"),
    ({"runs": "0"}, "at least 1"),
    ({"temperature": "-1"}, "temperature"),
    ({"top_p": "0"}, "top_p"),
    ({"scoring": "loglikelihood", "prompt": "cot"}, "neither prompt=cot"),
    ({"scoring": "loglikelihood", "runs": "2", "temperature": "0.6"}, "nor runs"),
    ({"fb_max_gap": "1.5"}, "fb_max_gap"),
    ({"extraction": "fuzzy"}, "not one of"),
])
def test_settings_that_cannot_work_are_refused(settings: dict[str, str], match: str) -> None:
    with pytest.raises(TomConfigError, match=match):
        ToMATO(settings)


@pytest.mark.parametrize(("text", "first", "official", "last"), [
    ("[B]", "B", "B", "B"),
    ("The answer is [C].", "C", "C", "C"),
    ("Output format: [A], [B], [C], or [D]", "A", "A", "D"),
    ("[,] then [D]", "D", None, "D"),  # the official regex's comma: found first, it is no answer
    ("I pick [D] not [A]", "D", "D", "A"),
    ("B", None, None, None),  # a bare letter is not the contract
    ("(B)", None, None, None),
    ("[b]", None, None, None),
    ("[E]", None, None, None),
    ("", None, None, None),
    (None, None, None, None),
])
def test_extraction_modes(text: str | None, first: str | None, official: str | None, last: str | None) -> None:
    assert (extract(text, "first"), extract(text, "official"), extract(text, "last")) == (first, official, last)


def test_record_of_one_run() -> None:
    s = sample()  # gold A
    right = ask(s, PromptConfig(), [Response(text="[A]")])
    assert right.outcome is Outcome.CORRECT and right.score == 1.0 and right.message == ""
    assert right.details["runs"] == ["A"] and right.details["run_correct"] == [True]
    assert len(right.request_keys) == 1
    wrong = ask(s, PromptConfig(), [Response(text="I think [C]")])
    assert wrong.outcome is Outcome.INCORRECT and wrong.parsed == "C" and wrong.gold == "A"
    assert "gold: [A]" in wrong.message and "answer (first extraction): [C]" in wrong.message
    assert "what does Tomas think that Lena will do?" in wrong.message and "intention, second order, false belief" \
        in wrong.message
    garbled = ask(s, PromptConfig(), [Response(text="The first one.")])
    assert garbled.outcome is Outcome.UNPARSEABLE and garbled.parse_rate == 0.0 and garbled.parsed is None
    assert "unparseable" in garbled.message


def test_record_of_several_runs_is_the_majority_with_every_run_kept() -> None:
    s = sample()  # gold A
    config = PromptConfig(runs=5, temperature=0.6)
    rec = score(s, config, ["[A]", "[C]", "x", "[A]", "[C]"], ["A", "C", None, "A", "C"])
    assert rec.outcome is Outcome.CORRECT and rec.parsed == "A"  # a tie goes to the earlier run
    assert rec.score == pytest.approx(2 / 5) and rec.parse_rate == pytest.approx(4 / 5)
    assert rec.details["run_correct"] == [True, False, False, True, False]
    rec = score(s, config, ["[C]", "[A]", "[C]", "x", "x"], ["C", "A", "C", None, None])
    assert rec.outcome is Outcome.INCORRECT and "majority of 5 runs" in rec.message
    assert "run 4: 'x' -> unparseable" in rec.message
