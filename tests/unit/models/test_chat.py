"""Chat rendering with and without the generation prompt, against the real SmolLM2 tokenizer (offline).

ToMBench's `run_huggingface.py` and ToMATO's `run_local_llm.py` call `apply_chat_template(messages)` without
`add_generation_prompt`; `generation_prompt=false` must give exactly those bytes and ids, and the default must keep
today's prompts and hashes (so every cached answer stays valid).
"""

from __future__ import annotations

import pytest
from helpers.tiny_models import smollm2_tokenizer

from pytest_tom.errors import TomConfigError
from pytest_tom.models._chat import ChatFormatter, TokenizedChat
from pytest_tom.models._common import parse_spec
from pytest_tom.request import Message

pytest.importorskip("transformers")

# The default rendering's hash for SmolLM2's template, as computed before `generation_prompt` existed: the default
# must not move any fingerprint or cache key.
DEFAULT_HASH = "44e2d858677a6ae723b96baf7c8c058157a95fc7ea4ac0485db84932ec4652ce"
MESSAGES = (Message("system", "S"), Message("user", "U"))
DICTS = [m.to_dict() for m in MESSAGES]


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    """SmolLM2-135M-Instruct's tokenizer from the converted folder under $TOM_MODEL_DIR (skipped when absent)."""
    return smollm2_tokenizer()


def chat(tokenizer, generation_prompt: bool = True, system: str = "auto") -> TokenizedChat:  # type: ignore[no-untyped-def]
    return TokenizedChat(tokenizer, chat_template="auto", system=system, generation_prompt=generation_prompt)


def test_false_renders_exactly_apply_chat_template_without_the_header(tokenizer) -> None:  # type: ignore[no-untyped-def]
    text = chat(tokenizer, False).formatter.render(MESSAGES)
    assert text == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
    assert text == tokenizer.apply_chat_template(DICTS, tokenize=False)


def test_false_encodes_the_ids_of_tombenchs_tokenize_true_call(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """`run_huggingface.py` line 192: apply_chat_template(messages, tokenize=True, return_dict=True)."""
    expected = tokenizer.apply_chat_template(DICTS, tokenize=True, return_dict=True)["input_ids"]
    assert list(chat(tokenizer, False).encode_prompt(MESSAGES)) == list(expected)


def test_the_default_still_ends_with_the_assistant_header_and_keeps_its_hash(tokenizer) -> None:  # type: ignore[no-untyped-def]
    default = chat(tokenizer)
    assert default.formatter.render(MESSAGES).endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert default.formatter.hash() == DEFAULT_HASH
    assert chat(tokenizer, False).formatter.hash() != DEFAULT_HASH
    assert default.formatter.describe()["generation_prompt"] is True
    assert chat(tokenizer, False).formatter.describe()["generation_prompt"] is False


def test_a_final_assistant_message_is_still_continued(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A prefill (ToMATO's `cot_placement=assistant`) stays open whatever the option says."""
    prefill = (*MESSAGES, Message("assistant", "Let's think step by step."))
    for generation_prompt in (True, False):
        text = chat(tokenizer, generation_prompt).formatter.render(prefill)
        assert text.endswith("<|im_start|>assistant\nLet's think step by step.")


def test_folding_composes_with_false(tokenizer) -> None:  # type: ignore[no-untyped-def]
    text = chat(tokenizer, False, system="fold").formatter.render(MESSAGES)
    assert text == tokenizer.apply_chat_template([{"role": "user", "content": "S\n\nU"}], tokenize=False)
    assert text.endswith("<|im_start|>user\nS\n\nU<|im_end|>\n")


def test_false_without_a_template_is_a_usage_error() -> None:
    with pytest.raises(TomConfigError, match="generation_prompt=false needs a chat template"):
        ChatFormatter(template=None, source="none", renderer=None, generation_prompt=False)


@pytest.mark.parametrize("scheme", ["hf", "vllm", "openai"])
def test_the_uri_option_is_a_bool_defaulting_to_true(scheme: str) -> None:
    import importlib

    options = importlib.import_module(f"pytest_tom.models.{scheme}").OPTIONS
    assert parse_spec(scheme, "m", options)["generation_prompt"] is True
    assert parse_spec(scheme, "m?generation_prompt=false", options)["generation_prompt"] is False
    with pytest.raises(TomConfigError, match=r"generation_prompt=maybe: expected true or false"):
        parse_spec(scheme, "m?generation_prompt=maybe", options)
    assert next(o for o in options if o.name == "generation_prompt").help
