"""SimpleToM against the real release in $TOM_DATA_DIR/simpletom (skipped when it is unset).

The authors' released CoT run asks every question, the 1,147 mental-state ones included, with its CoT prompt;
their `question_prompt` can also add the "either" and "neither" options. The expected prompts are rebuilt here
from the raw `test.jsonl` rows with the json module only, following the released code's rule (spec section 7.1
and 7.2), so a loader or prompt bug cannot hide behind a shared helper.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_tom.evals.simpletom import SimpleToM, SimpleToMSample
from pytest_tom.framework.base import DataSource

pytestmark = pytest.mark.realdata

COT_PROMPT = ('Think step by step to arrive at an answer. Start your response by explaining your reasoning process and '
              'end your response with "Therefore, the answer is: " followed by ')  # inference/prompts.py, trailing space
EITHER, NEITHER = "Both (A) and (B) are likely", "Neither (A) nor (B) is likely"
CONFIGS = {"mental-state-qa": "aware", "behavior-qa": "action", "judgment-qa": "judge"}
SUFFIX = {"mental_state": "aware", "behavior": "action", "judgment": "judge"}


def released_prompt(row: dict[str, object], final: str, either: bool = False, neither: bool = False) -> str:
    """The user message of the released `question_prompt` for one raw row (no reminder, as run_inference.py)."""
    choices = row["choices"]
    assert isinstance(choices, dict)
    texts = [*choices["text"], *([EITHER] if either else []), *([NEITHER] if neither else [])]
    letters = "ABCD"[: len(texts)]
    plain = " or ".join("(" + x + ")" for x in letters)
    quoted = " or ".join('"(' + x + ')"' for x in letters)
    options = " \n".join("(" + x + ") " + t for x, t in zip(letters, texts, strict=True))
    return ("Given the following story, answer the question by giving the correct answer choice, " + plain + ".\n\n"
            "Story:\n" + str(row["story"]) + "\n" + "\n"
            "Question: " + str(row["question"]) + " \n" + options + "\n\n"
            "What is the correct answer? " + final + " " + quoted + "\n")


@pytest.fixture(scope="module")
def release() -> tuple[list[SimpleToMSample], dict[str, dict[str, object]]]:
    data = os.environ.get("TOM_DATA_DIR")
    if not data or not (Path(data) / "simpletom" / "mental-state-qa" / "test.jsonl").is_file():
        pytest.skip("TOM_DATA_DIR has no simpletom/ release")
    root = Path(data)
    rows = {}
    for config in CONFIGS:
        for line in (root / "simpletom" / config / "test.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows[row["id"]] = row
    samples = SimpleToM().load(DataSource(root=root, download=False, cache_dir=Path("unused-cache")))
    return samples, rows


def test_every_mental_state_prompt_under_cot_is_the_released_cot_runs(release: tuple[list[SimpleToMSample],
                                                                                     dict[str, dict[str, object]]]) -> None:
    samples, rows = release
    ms = [s for s in samples if s.extra.question_type == "mental_state"]
    assert len(ms) == 1147
    bench = SimpleToM({"intervention": "cot", "layout": "reference"})
    differ = []
    for s in ms:
        request = next(bench.program(s))[0]
        want = released_prompt(rows[f"{s.extra.story_id}_aware"], COT_PROMPT)
        got = [(m.role, m.content) for m in request.messages]
        if got != [("system", "You are a helpful assistant."), ("user", want)] or request.settings.max_new_tokens != 500:
            differ.append(s.id)
    assert differ == []
    # the spec's verbatim example (potato_chip_food_sev1_aware), through the same path
    first = next(s for s in ms if s.id == "potato_chip_food_sev1-ms")
    assert next(bench.program(first))[0].messages[1].content == (
        "Given the following story, answer the question by giving the correct answer choice, (A) or (B).\n\nStory:\n"
        "The bag of potato chips has moldy chips in it. Mary picks up the bag in the supermarket and walks to the "
        "cashier.\n\nQuestion: Is Mary likely to be aware that \"The bag of potato chips has moldy chips in it.\"? \n"
        "(A) Yes \n(B) No\n\nWhat is the correct answer? Think step by step to arrive at an answer. Start your response "
        "by explaining your reasoning process and end your response with \"Therefore, the answer is: \" followed by  "
        "\"(A)\" or \"(B)\"\n")


@pytest.mark.parametrize(("settings", "final", "either", "neither"), [
    ({"extra_options": "either,neither"}, "Respond with just", True, True),
    ({"extra_options": "either"}, "Respond with just", True, False),
    ({"extra_options": "neither"}, "Respond with just", False, True),
    ({"extra_options": "neither,either", "intervention": "cot"}, COT_PROMPT, True, True),
    ({}, "Respond with just", False, False),
    ({"intervention": "cot"}, COT_PROMPT, False, False),
])
def test_every_question_with_the_extra_options_is_the_released_codes(
        release: tuple[list[SimpleToMSample], dict[str, dict[str, object]]], settings: dict[str, str], final: str,
        either: bool, neither: bool) -> None:
    samples, rows = release
    assert len(samples) == 3441
    bench = SimpleToM({"layout": "reference", **settings})
    differ = [s.id for s in samples
              if next(bench.program(s))[0].messages[1].content != released_prompt(
                  rows[f"{s.extra.story_id}_{SUFFIX[s.extra.question_type]}"], final, either, neither)]
    assert differ == []
