"""What a model is shown: the paper's prompt (App. C) verbatim, with and without a system prompt, and the requests.

Layouts: ``paper`` (App. C as printed) and ``reference`` (the authors' `run_local_llm.py`, byte for byte). Each
sampled run has its own seed (its own cache entry); log-likelihood scoring compares "[A]".."[D]" (`--do_mc_qa`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from pytest_tom.errors import TomConfigError
from pytest_tom.evals.tomato.data import LETTERS, ToMATOSample
from pytest_tom.framework.base import BenchmarkOption, stop_at_answer_option
from pytest_tom.request import GenerationSettings, Message, Request

SYSTEM = ("You are an expert at understanding human communication. Please leverage the information provided and choose "
          "the most probable answer to the question from the options. Output your final answer by strictly following "
          "this format: [A], [B], [C], or [D]")  # App. C, verbatim
COT = "Let's think step by step."  # zero-shot chain of thought, as in the authors' `prompts.py`
DIRECT_TOKENS, COT_TOKENS = 256, 512  # the authors' `max_new_tokens` for local models
PAPER_RUNS, PAPER_TEMPERATURE, PAPER_TOP_P = 5, 0.6, 0.9

OPTIONS: tuple[BenchmarkOption, ...] = (
    BenchmarkOption("subset", "all",
                    "Release file to test: all (tomato.json, 5,401 questions), first (tomato_first.json), second "
                    "(tomato_second.json) or fb (tomato_fb.json, the 806 false-belief questions).",
                    choices=("all", "first", "second", "fb")),
    BenchmarkOption("system_prompt", "system",
                    "system: App. C's instruction as a system message; none: joined to the user message by a blank "
                    "line (the paper's way for models without a system role, e.g. Gemma-2).",
                    choices=("system", "none")),
    BenchmarkOption("layout", "paper",
                    "Prompt layout: paper (App. C as printed) or reference (the authors' run_local_llm.py, byte for "
                    "byte: a space after each header, a final newline).", choices=("paper", "reference")),
    BenchmarkOption("prompt", "vanilla", "vanilla, or cot (zero-shot chain of thought, App. D).",
                    choices=("vanilla", "cot")),
    BenchmarkOption("cot_placement", "assistant",
                    "Where 'Let's think step by step.' goes: assistant (the start of the answer, continued by the "
                    "model, as for the authors' local models) or user (after the question, as for their API models).",
                    choices=("assistant", "user")),
    BenchmarkOption("extraction", "first",
                    "Answer extraction: first (the official first-match rule over [A]-[D]; a '[,]' is skipped), "
                    "official (the authors' regex \\[[A,B,C,D]\\] byte for byte: a '[,]' found first makes the answer "
                    "unreadable), last (the last [A]-[D], for chain of thought; an extension).",
                    choices=("first", "official", "last")),
    BenchmarkOption("scoring", "generate",
                    "generate (the paper: parse the generated answer) or loglikelihood (the option letter '[A]'-'[D]' "
                    "the model scores highest after the prompt, as the authors' mc_qa mode).",
                    choices=("generate", "loglikelihood")),
    BenchmarkOption("runs", "1",
                    f"Sampled runs per question, each with its own seed (the paper: {PAPER_RUNS} at temperature "
                    f"{PAPER_TEMPERATURE}, top_p {PAPER_TOP_P}); metrics are the mean and standard deviation over runs, "
                    "an item's verdict the majority of its runs.", kind=int, bounds=(1, None)),
    BenchmarkOption("temperature", "0", f"Sampling temperature (the paper: {PAPER_TEMPERATURE}; 0 is greedy).",
                    kind=float),
    BenchmarkOption("top_p", "1", f"Nucleus sampling top_p (the paper: {PAPER_TOP_P}).", kind=float),
    BenchmarkOption("seed", "42", "Seed of run 1; run k uses seed + k - 1 (the authors' default: 42).", kind=int),
    BenchmarkOption("max_new_tokens", "0",
                    f"Token budget per answer; 0 means {DIRECT_TOKENS} (the authors') or {COT_TOKENS} with cot.",
                    kind=int),
    stop_at_answer_option("its first [A]-[D] (official extraction: also [,]): the first match settles the answer "
                          "(last extraction never stops)"),
)


@dataclass(frozen=True, slots=True)
class PromptConfig:
    """The settings that change what is asked and how it is read, typed once."""

    system_prompt: str = "system"
    layout: str = "paper"
    prompt: str = "vanilla"
    cot_placement: str = "assistant"
    extraction: str = "first"
    scoring: str = "generate"
    runs: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 42
    max_new_tokens: int = 0
    stop_at_answer: bool = True

    @property
    def stops(self) -> tuple[str, ...]:
        """Stops of a first-match extraction (the first match of a text stays first in every extension); none for `last`."""
        if not self.stop_at_answer or self.extraction == "last":
            return ()
        letters = tuple(f"[{x}]" for x in LETTERS)
        return (*letters, "[,]") if self.extraction == "official" else letters

    @property
    def budget(self) -> int:
        return self.max_new_tokens or (COT_TOKENS if self.prompt == "cot" else DIRECT_TOKENS)

    def settings(self, run: int) -> GenerationSettings:
        """Decoding of run `run` (0-based): a seed per run whenever sampling, so runs are distinct cache entries."""
        seed = self.seed + run if self.temperature > 0 else None
        return GenerationSettings(max_new_tokens=self.budget, temperature=self.temperature, top_p=self.top_p, seed=seed,
                                  stop_after=self.stops)


def config_from(settings: Mapping[str, Any]) -> PromptConfig:
    """The typed config of a benchmark's settings; combinations that cannot mean anything are refused."""
    c = PromptConfig(**{f.name: settings[f.name] for f in fields(PromptConfig)})  # typed by the options
    if c.temperature < 0 or not 0 < c.top_p <= 1:
        raise TomConfigError(f"tomato temperature must be >= 0 and top_p in (0, 1], got {c.temperature}, {c.top_p}")
    if c.runs > 1 and c.temperature == 0:
        raise TomConfigError(f"tomato runs={c.runs} at temperature 0 would ask the same greedy question {c.runs} "
                             f"times; repeated runs need sampling (the paper: --tom-set tomato.temperature="
                             f"{PAPER_TEMPERATURE} --tom-set tomato.top_p={PAPER_TOP_P})")
    if c.scoring == "loglikelihood" and (c.prompt == "cot" or c.runs > 1):
        raise TomConfigError("tomato scoring=loglikelihood reads no generated text, so it takes neither prompt=cot "
                             "nor runs > 1")
    return c


def user_prompt(sample: ToMATOSample, layout: str) -> str:
    """The user text of App. C from the sample's own fields (a rewritten sample is asked as rewritten)."""
    conversation = sample.context.render()
    options = [f"[{c.label}] {c.text}" for c in sample.choices]
    if layout == "reference":
        return ("# Transcript \n" + conversation + "\n\n# Question \n" + sample.question + "\n\n# Options \n"
                + "".join(o + "\n" for o in options))
    return f"# Transcript\n{conversation}\n\n# Question\n{sample.question}\n\n# Options\n" + "\n".join(options)


def messages(sample: ToMATOSample, config: PromptConfig) -> tuple[Message, ...]:
    """The chat messages of one question (without a chain-of-thought prefill)."""
    user = user_prompt(sample, config.layout)
    if config.prompt == "cot" and config.cot_placement == "user":
        user = f"{user}\n\n{COT}"
    if config.system_prompt == "none":
        return (Message("user", f"{SYSTEM}\n\n{user}"),)
    return (Message("system", SYSTEM), Message("user", user))


def requests(sample: ToMATOSample, config: PromptConfig) -> list[Request]:
    """One request per run (generation), or the one log-likelihood request over "[A]".."[D]"."""
    base = messages(sample, config)
    if config.scoring == "loglikelihood":
        return [Request(messages=base, settings=GenerationSettings(max_new_tokens=0), kind="loglikelihood",
                        choices=tuple(f"[{letter}]" for letter in LETTERS[: len(sample.choices)]))]
    prefill = (Message("assistant", COT),) if config.prompt == "cot" and config.cot_placement == "assistant" else ()
    return [Request(messages=base + prefill, settings=config.settings(run),
                    answer_labels=tuple(c.label for c in sample.choices), answer_format="[{}]")
            for run in range(config.runs)]
