"""BigToM (Gandhi et al., NeurIPS 2023): 200 procedurally written stories, each asked in 25 conditions. `data` builds the release
CSV into the 25 condition files, checked; `scoring` holds the eight official methods verbatim and the official substring rule;
the metrics, here, are the authors' analysis's (spec §4): accuracy per condition file and the paired score. The figures pair
the true and false item of one (init, variable, kind) by story and plot TB beside TB AND FB (`plot_utils.get_contingency`'s
`true_and_false`), so a story counts only when both its items were answered; the split (both, tb_only, fb_only, neither)
says which answer text a model held to. The micro averages are this harness's summaries: the paper reports no overall
mean. Unparseable answers stay in every denominator; intervals resample stories. Spec: docs/benchmarks/bigtom.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_tom.derived import Derived
from pytest_tom.evals.bigtom import data, scoring
from pytest_tom.evals.bigtom.data import CONDITIONS, PARTS, PERCEPT, VARIABLES, BigToMExtra, BigToMSample
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program, described
from pytest_tom.framework.metric import Metric, clustered_rate
from pytest_tom.framework.release import parse_sha256, release_options
from pytest_tom.metrics import group_by
from pytest_tom.record import Record

__all__ = ["BigToM", "BigToMExtra", "BigToMSample"]

PAIRS = "Paired score per story: TB and TB AND FB, as the paper's figures plot them"
SUMMARY = "Micro averages over the core conditions (this harness's summary, not a paper number)"
DIAGNOSTICS = "Answers read by the official substring rule"
JUDGED = "With the official LLM-grader fallback, answered by --tom-judge (beside, never instead of, the rule)"
SPLIT = {"both": (True, True), "tb_only": (True, False), "fb_only": (False, True), "neither": (False, False)}
PAIR = {"belief": ("true_belief", "false_belief"), "control": ("true_control", "false_control")}
COUNTS = (("n", "items answered", lambda r: True),
          ("unparseable", "unparseable: no key a)/b) and no single option text (where the official code asks its LLM "
                            "grader)", lambda r: r.parsed is None),
          ("via_text", "read from an option's text, not a key (the official grader's cases)",
           lambda r: r.details.get("via") == "text"),
          ("both_keys", "answers holding both a) and b) (officially: the gold key wins)",
           lambda r: bool(r.details.get("both_keys"))))


def _acc(key: tuple[str, ...], label: str, table: str, records: Sequence[Record], judge: bool = False) -> list[Metric]:
    """Accuracy over `records` with story intervals; with `judge`, a judge's exact "True" counts too (the official grader)."""
    values = [float(r.passed or (judge and bool(r.details.get("judge_correct")))) for r in records]
    return clustered_rate(key, label, table, values, [r.facets["story"] for r in records], "story")


def partner(sample_id: str, facets: Mapping[str, str]) -> str | None:
    """The id of the false (or false control) item a true one pairs with, by story; None for any other item."""
    t, f = PAIR[facets["kind"]]
    return sample_id.replace(f"_{t}-", f"_{f}-") if facets["condition"] == t and facets["folder"] != PERCEPT else None


class BigToM(Benchmark[BigToMExtra]):
    name = "bigtom"
    description = ("BigToM: 200 stories x 25 conditions of forward belief, forward action and backward belief "
                   "inference, true/false belief and controls (Gandhi et al., NeurIPS 2023)")
    options = (
        BenchmarkOption("prompt", "0shot", "The official method: 0shot, 1shot, 0shot-cot or 1shot-cot (completion "
                        "1shot-cot sends no exemplar, as officially).", choices=("0shot", "1shot", "0shot-cot", "1shot-cot")),
        BenchmarkOption("format", "chat", "chat: the instruction as system message, the exemplar as user/assistant turns "
                        "(the authors' chat-model path); completion: one text with stop strings (their completion path; "
                        "pair with chat_template=none for a base model).", choices=("chat", "completion")),
        BenchmarkOption("conditions", "core", "core: the 24 conditions the authors' analysis reads; all: adds "
                        "1_percept_to_belief_true_belief with its released (aware-belief) key.", choices=("core", "all")),
        BenchmarkOption("extraction", "official", "official: the gold key first, anywhere in the answer; first: the "
                        "earlier of a) and b) (gold-independent).", choices=("official", "first")),
        BenchmarkOption("max_new_tokens", "0", "Tokens per call; 0: the official 25, 220 for chat CoT, 200 for the "
                        "completion CoT thought (its answer call: 30).", kind=int, bounds=(0, None)),
        *release_options(data.URL, f"{data.FILE} (github.com/cicl-stanford/procedural-evals-tom at {data.REVISION[:12]})",
                         f"sha256 of another bigtom.csv; empty: the pinned {data.PIN.sha256[:12]}...",
                         "partial or changed copy; by default a local copy must be the whole pinned release."),
    )
    facets = (
        Facet("variable", described("BigToM {} item.", *VARIABLES, "percept_to_belief"), tables=((),), gate=True),
        Facet("condition", {**described("BigToM {} condition.", *CONDITIONS), "control":
                            "BigToM control condition (true or false control)."}, tables=((), ("variable",)), gate=True),
        Facet("init", {"initial_belief_shown": "BigToM item whose story states the initial belief (1_).",
                       "initial_belief_hidden": "BigToM item without the initial-belief sentence (0_)."}, gate=True),
        Facet("kind", {"pair": "BigToM derived item: the TB and FB (or two control) items of one story both correct."}),
        Facet("folder", gate=True), Facet("group", derived_gate=True),
        Facet("gold"),
        Facet("story", cluster=True, whole=True),
    )

    def load(self, source: DataSource) -> list[BigToMSample]:
        s = self.settings
        sha = parse_sha256(s["sha256"], "bigtom sha256") if s["sha256"] else ""
        folder, verified = data.PIN.release(s["source_url"], sha).locate(source)
        return data.load(folder / data.FILE, conditions=s["conditions"], sha256=sha, verified=verified, partial=s["partial"])

    def program(self, sample: BigToMSample) -> Program:
        return scoring.solve(sample, *(self.settings[k] for k in ("prompt", "format", "max_new_tokens", "extraction")))

    def derived(self, samples: Sequence[BigToMSample]) -> list[Derived]:
        """One TB AND FB item per story and (init, variable, kind) with both items loaded (spec §7)."""
        ids = {s.id for s in samples}
        return [Derived("bigtom", f"{f['init']}_{f['variable']}-{f['kind']}-{s.extra.line:03d}", "pair", (s.id, p),
                        ("bigtom", "pair", f["variable"]), {k: f[k] for k in ("variable", "init", "kind", "story")}
                        | {"group": f"{f['init']}_{f['variable']}.{f['kind']}"})  # the metrics' group: gateable
                for s in samples if (p := partner(s.id, f := s.facets)) is not None and p in ids]

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        scored = [r for r in records if r.scored]
        by, core = group_by(scored, "folder"), [r for r in scored if r.facets["folder"] != PERCEPT]
        out = [m for f in PARTS for m in _acc(("condition", f, "accuracy"), f"{f} accuracy",
                                       "Accuracy per condition (the official per-file accuracy)", by.get(f, []))]
        ids, paired = {r.sample_id: r for r in scored}, dict[str, dict[str, tuple[bool, bool]]]()
        for r in scored:  # `<init>_<variable>.<kind>` -> story -> (TB, FB) passed, for stories with both items answered
            if (p := partner(r.sample_id, g := r.facets)) is not None and p in ids:
                paired.setdefault(f"{g['init']}_{g['variable']}.{g['kind']}", {})[g["story"]] = (r.passed, ids[p].passed)
        for name, group in paired.items():
            key, tf = ("pair", *name.split(".")), list(group.values())
            for part, label, values in (("true", "TB accuracy (paired stories)", [float(t) for t, _ in tf]),
                                        ("false", "FB accuracy (paired stories)", [float(f) for _, f in tf]),
                                        ("true_and_false", "TB AND FB (the paper's second bar)",
                                         [float(t and f) for t, f in tf])):
                out += clustered_rate((*key, part), f"{name} {label}", PAIRS, values, list(group), "story")
            out += [Metric((*key, split), tf.count(want), f"{name} stories {split}", "count", PAIRS)
                    for split, want in SPLIT.items()]
        for facet in ("variable", "init", "condition"):
            for value, members in sorted(group_by(core, facet).items()):
                out += _acc((facet, value, "accuracy"), f"{facet} {value} accuracy", SUMMARY, members)
        out += _acc(("accuracy",), "accuracy, core conditions (micro)", SUMMARY, core)
        out += [Metric((k,), sum(map(counts, scored)), label, "count", DIAGNOSTICS) for k, label, counts in COUNTS]
        if not (asked := [r for r in scored if "judge" in r.details]):
            return out
        out += [Metric(("judge", "verdicts"), len(asked), "unparseable items the judge graded", "count", JUDGED),
                Metric(("judge", "true"), sum(bool(r.details["judge_correct"]) for r in asked),
                       "of them graded exactly 'True' (correct, officially)", "count", JUDGED)]
        for f in PARTS:
            out += _acc(("judge", "condition", f, "accuracy"), f"{f} accuracy with the judge", JUDGED, by.get(f, []), True)
        return out + _acc(("judge", "accuracy"), "accuracy with the judge, core conditions (micro)", JUDGED, core, True)
