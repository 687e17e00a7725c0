"""`generation_prompt=false` renders what ToMBench's and ToMATO's official local runners give the tokenizer, byte for
byte, on the real releases in $TOM_DATA_DIR (skipped without them, or without the converted SmolLM2 tokenizer under
$TOM_MODEL_DIR).

The expected side never goes through pytest-tom's prompt code: it is built here from the raw release rows and the
official templates, copied verbatim from the specs (ToMBench `prompts.py`, spec §2.2; ToMATO `run_local_llm.py`, spec
§3.1 and §8), then rendered as the runners do: `apply_chat_template([system, user], tokenize=False)`, the tokenizer's
own template, no generation prompt.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.tiny_models import smollm2_tokenizer

from pytest_tom.framework.base import DataSource
from pytest_tom.models._chat import TokenizedChat

pytest.importorskip("transformers")

pytestmark = pytest.mark.realdata

# ToMBench `prompts.py` (spec tombench.md §2.2), vanilla system prompts and the 4-option user templates, verbatim.
SYSTEM_ZH = """\
下面给你提供一段故事，一个问题和若干答案选项，请你根据故事内容和给定的问题，按照常理推测，选择一个最可能的答案选项，并输出答案序号。
注意：
（1）请只输出最可能的答案序号，格式为：[[答案序号]]，例如，最可能的答案选项为“A. 手提包”，则输出“[[A]]”；
（2）请必须从给定的答案选项“A、B、C、D”中选择一个做为最可能的答案作为输出，无论故事中是否提供足够的信息，如果你认为故事里没有足够的信息选出答案，请随机输出“[[A]]”，“[[B]]”，“[[C]]”，“[[D]]”其中之一；
（3）请只输出在给定的信息下最可能的答案序号，不要输出其他内容。"""  # noqa: E501
SYSTEM_EN = """\
Below is a multiple-choice question with a story and serveral answer options. Based on the content of the story and the given question, please infer the most likely answer and output the answer index.
Note:
(1) Please only output the most likely answer index in the format: [[Answer Index]], for example, if the most likely answer option is 'A. Handbag', then output '[[A]]';
(2) You must choose one of the given answer options 'A, B, C, D' as the most likely answer, regardless of whether the story provides enough information. If you think there is not enough information in the story to choose an answer, please randomly output one of "[[A]]", "[[B]]", "[[C]]", or "[[D]]";
(3) Please only output the most likely answer index based on the given information, and do not output any other content."""  # noqa: E501
USER_ZH = """[故事]
{story}

[问题]
{question}

[答案选项]
A. {choice_a}
B. {choice_b}
C. {choice_c}
D. {choice_d}"""
USER_EN = """[Story]
{story}

[Question]
{question}

[Candidate Answers]
A. {choice_a}
B. {choice_b}
C. {choice_c}
D. {choice_d}"""

# ToMATO `run_local_llm.py` (spec tomato.md §3.1 and §8): the paper's system text, the repository's user layout.
TOMATO_SYSTEM = ("You are an expert at understanding human communication. Please leverage the information provided "
                 "and choose the most probable answer to the question from the options. Output your final answer by "
                 "strictly following this format: [A], [B], [C], or [D]")
# The first 10 rows of each of the 20 ToMBench files (`run_huggingface.py`: `data[:10]`) that are 4-option and need no
# option cleaning, per language (counted on the pinned release).
TOMBENCH_ROWS = {"en": 190, "zh": 163}
_PREFIX = re.compile(r"^\s*[A-D]\s*[.．、:：]")


@pytest.fixture(scope="module")
def chat():  # type: ignore[no-untyped-def]
    """SmolLM2's own tokenizer and template, with `generation_prompt=false` (`hf:smollm2?generation_prompt=false`)."""
    return TokenizedChat(smollm2_tokenizer(), chat_template="auto", system="auto", generation_prompt=False)


def official(chat: TokenizedChat, system: str | None, user: str, **kw: Any) -> Any:
    """What the runners hand the tokenizer: `apply_chat_template(messages)` with transformers' defaults; ToMATO's
    runner folds the system text into the user turn itself for Mistral and Gemma (`system` None here)."""
    messages = [{"role": "system", "content": system}] if system is not None else []
    return chat.tokenizer.apply_chat_template([*messages, {"role": "user", "content": user}], **{"tokenize": False, **kw})


def cleaned(raw: Any, letter: str) -> str | None:
    """Upstream's `raw.replace("X. ", "")`, where it means exactly "drop a leading 'X. '" (spec P6); else None."""
    if not isinstance(raw, str):  # a binary row's C/D are NaN
        return None
    text = raw[3:] if raw.startswith(f"{letter}. ") else raw
    if f"{letter}. " in text or _PREFIX.match(text) or text != text.strip() or not text:
        return None
    return text


def tombench_rows(root: Path) -> list[tuple[str, int, str, str, str, list[str]]]:
    """(file stem, line, language, story, question, options) of the runner's rows that need no cleaning."""
    fields = {"en": ("STORY", "QUESTION", "OPTION-"), "zh": ("故事", "问题", "选项")}
    out = []
    for path in sorted((root / "tombench" / "data").glob("*.jsonl")):
        lines = [(no, line) for no, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if line.strip()]
        for no, line in lines[:10]:
            rec = json.loads(line)
            for lang, (story_f, question_f, option_f) in fields.items():
                story, question = rec[story_f], rec[question_f]
                options = [cleaned(rec[f"{option_f}{x}"], x) for x in "ABCD"]
                if story != story.strip() or question != question.strip() or None in options:
                    continue
                out.append((path.name[: -len(".jsonl")], no, lang, story, question, [o for o in options if o]))
    return out


def test_tombench_prompts_match_run_huggingface(chat: TokenizedChat, real_data_dir: Path) -> None:
    from pytest_tom.evals.tombench import ToMBench
    from pytest_tom.evals.tombench.prompts import Config, tries

    samples = {(s.extra.file, s.extra.row, s.extra.language): s
               for s in ToMBench().load(DataSource(real_data_dir, False, real_data_dir))}
    rows = tombench_rows(real_data_dir)
    counts = {lang: sum(r[2] == lang for r in rows) for lang in ("en", "zh")}
    assert counts == TOMBENCH_ROWS
    identity = Config(tries=1, permutations="none")
    for stem, no, lang, story, question, options in rows:
        user = (USER_EN if lang == "en" else USER_ZH).format(
            story=story, question=question, **dict(zip(("choice_a", "choice_b", "choice_c", "choice_d"), options, strict=True)))
        expected = official(chat, SYSTEM_EN if lang == "en" else SYSTEM_ZH, user)
        messages = tries(samples[(stem, no, lang)], identity)[0].request.messages
        ours = chat.formatter.render(messages)
        assert ours == expected, f"{stem} line {no} ({lang})"
        assert not ours.endswith("<|im_start|>assistant\n")
        # `run_huggingface.py` line 192 tokenises inside the call: the same ids.
        ids = official(chat, SYSTEM_EN if lang == "en" else SYSTEM_ZH, user, tokenize=True, return_dict=True)["input_ids"]
        assert list(chat.encode_prompt(messages)) == list(ids)


@pytest.mark.parametrize("system_prompt", ["system", "none"])
def test_tomato_prompts_match_run_local_llm(chat: TokenizedChat, real_data_dir: Path, system_prompt: str) -> None:
    """Llama-2/3 get [system, user]; Mistral the system text joined to the user's (`tomato.system_prompt=none`)."""
    from pytest_tom.evals.tomato import ToMATO
    from pytest_tom.evals.tomato import prompts as tomato_prompts

    bench = ToMATO({"subset": "fb", "layout": "reference", "system_prompt": system_prompt})
    samples = {s.id: s for s in bench.load(DataSource(real_data_dir, False, real_data_dir))}
    records = json.loads((real_data_dir / "tomato" / "dataset" / "tomato_fb.json").read_text(encoding="utf-8"))
    assert len(records) == len(samples) == 806
    for rec in records:
        user = ("# Transcript \n" + rec["conversation"] + "\n\n" + "# Question \n" + rec["q"] + "\n\n# Options \n"
                + "".join(f"[{x}] {rec[f'a{i}']}\n" for i, x in enumerate("ABCD")))
        ours = chat.formatter.render(tomato_prompts.messages(samples[rec["q_id"]], bench.config))
        if system_prompt == "none":
            expected = official(chat, None, TOMATO_SYSTEM + "\n\n" + user)
        else:
            expected = official(chat, TOMATO_SYSTEM, user)
        assert ours == expected, rec["q_id"]
