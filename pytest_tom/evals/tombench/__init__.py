"""ToMBench (Chen et al., ACL 2024): loader, official prompts, parsing, metrics, story coherence.

Faithful to zhchen18/ToMBench where it is well defined, explicit where not (README, "ToMBench"):
official prompts byte for byte; shuffled tries majority-voted, permutations derived from (seed, file,
row, try) so a selection never changes them; official, lenient (default: no letter is unparseable,
not "A") or strict extraction; the paper's aggregation or a clean one; the coherent story test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.evals.tombench import data, release, scoring
from pytest_tom.evals.tombench.data import ToMBenchExtra, ToMBenchSample
from pytest_tom.evals.tombench.metrics import SHOW, aggregate
from pytest_tom.evals.tombench.prompts import Config
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program, slug, stop_at_answer_option
from pytest_tom.framework.metric import Metric, from_tree
from pytest_tom.framework.release import parse_pins, release_options
from pytest_tom.record import Record

__all__ = ["ToMBench", "ToMBenchExtra", "ToMBenchSample"]


class ToMBench(Benchmark[ToMBenchExtra]):
    name = "tombench"
    robustness = "pytest_tom.evals.tombench.strategies:PERTURBABLE"
    description = "ToMBench: 2,860 bilingual multiple-choice items, 8 tasks, 31 abilities (Chen et al., ACL 2024)"
    options = (
        BenchmarkOption("languages", "en,zh", "Languages to test, comma-separated.", choices=("en", "zh"), many=True),
        BenchmarkOption("prompt", "vanilla", "Official prompt: vanilla or chain-of-thought.", choices=("vanilla", "cot")),
        BenchmarkOption("tries", "5", "Shuffled tries per item, majority-voted (official: 5).", kind=int,
                        bounds=(1, None)),
        BenchmarkOption("permutations", "random", "Option orders: random (official), cyclic (each option once per "
                        "position), none.", choices=("random", "cyclic", "none")),
        BenchmarkOption("shuffle_seed", "42", "Seed of the option shuffles (official default 42).", kind=int),
        BenchmarkOption("extraction", "lenient", "Answer extraction: official (upstream, unreadable answers become "
                        "'A'), lenient (upstream rules, unreadable answers are unparseable), strict (last [[X]] only).",
                        choices=("lenient", "official", "strict")),
        BenchmarkOption("aggregation", "paper", "Metrics: paper (reproduces the tables) or clean.", choices=("paper", "clean")),
        BenchmarkOption("scoring", "generate", "generate (official: parse the generated answer), loglikelihood (pick "
                        "the option the model scores highest), or both (items scored by generation; the report gives "
                        "how often the two disagree).", choices=("generate", "loglikelihood", "both")),
        BenchmarkOption("ll_target", "letter", "Log-likelihood continuation: letter ('[[A]]', the official answer "
                        "format) or text (the option itself).", choices=("letter", "text")),
        BenchmarkOption("ll_normalise", "none", "Log-likelihood normalisation: none, or bytes (divide by the "
                        "continuation's UTF-8 length).", choices=("none", "bytes")),
        stop_at_answer_option("[[A]]: upstream reads [[A]] before any other answer (strict extraction never stops)"),
        BenchmarkOption("max_new_tokens", "0", "Token budget per answer; 0 means 64 (vanilla) or 1024 (cot).", kind=int),
        *release_options(
            data.OFFICIAL_BASE_URL, "data/*.jsonl (pinned revision)",
            "Checksums of the release files, for a mirror or a new release: a sha256sum manifest file, or "
            f"'name=sha256,...'; empty means the pinned revision {data.OFFICIAL_REVISION[:12]}.",
            "partial copy (missing files or rows); by default a local copy must be the whole release (every file, "
            "every row)."),
    )
    facets = (
        Facet("language", {"tombench": "ToMBench items (Chen et al., 2024).", "en": "English version of an item.",
                           "zh": "Chinese version of an item."},
              stratum=True, gate=True, tables=((), ("task",), ("category",), ("ability",))),
        Facet("task", {**{abbr: f"ToMBench task: {name}." for abbr, name in data.TASK_NAMES.items()},
                       "extra": "ToMBench extra-ability items (no task)."}, gate=True),
        Facet("category", {mark: f"Ability category: {cat}." for cat, mark in data.CATEGORIES.items()}, gate=True),
        Facet("ability", {slug(a): f"ToMBench ability: {a} ({c})." for a, c in data.ABILITY_CATEGORY.items()},
              stratum=True, gate=True),
        Facet("qtype", {"two_choice": "Question with 2 options (yes/no style).",
                          "four_choice": "Question with 4 options."}),
        # a question's story (the INDEX blocks): a model that misreads a story misses several of its questions
        Facet("story", {"coherence": "Consistency test: passes only if every question of its story/set passes."},
              cluster=True),
    )

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        langs = self.settings["languages"]
        self.languages: tuple[str, ...] = tuple(dict.fromkeys(langs.split(",") if isinstance(langs, str) else langs))
        self.settings["languages"] = ",".join(self.languages)
        if "=" in self.settings["sha256"]:  # a 'name=sha256' list fails here; a manifest is read by load()
            parse_pins(self.settings["sha256"])
        self.config = Config(**{f.name: self.settings[f.name] for f in dataclasses.fields(Config)})

    def load(self, source: DataSource) -> list[ToMBenchSample]:
        rel = release.release(self.settings["sha256"])
        folder, verified = release.locate(source, self.settings["source_url"], rel)
        return release.load(folder, self.languages, rel, verified=verified, partial=self.settings["partial"])

    def program(self, sample: ToMBenchSample) -> Program:
        return scoring.solve(sample, self.config)

    def derived(self, samples: Sequence[ToMBenchSample]) -> list[Derived]:
        return data.stories(samples)

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        return from_tree(aggregate(records, self.settings["aggregation"]), SHOW)
