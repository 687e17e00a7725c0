"""Hi-ToM (He et al., Findings of EMNLP 2023): higher-order theory of mind, orders 0-4, with deception.

120 generated stories asked at ToM orders 0-4 ("where does A think B thinks ... the object is?") in vanilla (MC) and
chain-of-thought (CoT) prompting: 1,200 items of 15 options. `data` reads the release into checked samples and renders
the prompt; here are the answer rule, the metrics, the checks (§8) and the class. Spec: docs/benchmarks/hitom.md.

Answers (§4): the first non-blank line decides, an `Answer:` token dropped: the container of `<L>. <container>`
(lower-cased; the letter is ignored, as upstream; text may follow) or a bare letter read through the choices (§4.2's
safe relaxations). The rest is never searched: a CoT explanation names many containers.

Metrics (§6), as the authors' notebooks compute them: an unreadable answer is not right; model errors leave every
denominator. A chain (one style's 5 questions of a story) is jointly right at order k when its orders 0..k are all
right; a chain asked at k without all of 0..k scored has no value there: it is counted, never guessed. Intervals
resample whole stories. The terminal prints the paper's tables at a glance; every cell (deception x style x length x
order) is in the JSON report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from pytest_tom.derived import Derived, Judgement, Rule
from pytest_tom.evals.hitom import data
from pytest_tom.evals.hitom.data import HiToMExtra, HiToMSample, render
from pytest_tom.framework.base import Benchmark, BenchmarkOption, DataSource, Facet, Program
from pytest_tom.framework.gaps import gap_rule
from pytest_tom.framework.metric import Metric, clustered_rate
from pytest_tom.metrics import groups
from pytest_tom.record import Outcome, Record, failure
from pytest_tom.request import GenerationSettings, Message, Request

__all__ = ["HiToM", "HiToMExtra", "HiToMSample"]

STRICT = re.compile(r"([A-O])\.\s+([A-Za-z_]+)")
LETTER = re.compile(r"\(?([A-O])\)?[.:)]?")


def first_line(text: str | None) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


def extract(response: str | None, choices: dict[str, str]) -> str | None:
    """The predicted container, or None when the first non-blank line is no answer; `choices`: letter -> container."""
    line = first_line(response).removeprefix("Answer:").strip()
    if m := STRICT.match(line):
        return m.group(2).lower()
    return choices[m.group(1)] if (m := LETTER.fullmatch(line)) else None


def request(sample: HiToMSample, max_new_tokens: int) -> Request:
    """The prompt file as the only user message, greedy; the random model answers a well-formed '<L>. <container>'."""
    return Request(messages=(Message("user", render(sample)),),
                   settings=GenerationSettings(max_new_tokens=max_new_tokens or 2000),  # the authors' GPT-4 max_tokens (§3.3)
                   answer_labels=tuple(f"{c.label}. {c.text}" for c in sample.choices))


def score(sample: HiToMSample, text: str | None, gold: str, key: str = "") -> Record:
    """Correct iff the extracted container is the gold's; unparseable counts as not correct in the metrics."""
    choices, x = {c.label: c.text for c in sample.choices}, sample.extra
    want, got = choices[sample.gold_label], extract(text, choices)
    outcome = Outcome.judge(got, want)
    differ = (f"; the MC and CoT data files disagree (MC {x.gold_mc}, CoT {x.gold_cot}), gold={gold} reads "
              f"{'the ' + x.style + ' file' if gold == 'own' else gold.upper()}") if x.gold_mc != x.gold_cot else ""
    message = failure(f"Hi-ToM {x.path} (order {x.order}, length {x.length}, {x.tell}, {x.style})", outcome,
                      sample.question, f"gold: {sample.gold_label}. {want}{differ}",
                      f"first line of the answer: {first_line(text)[:200]!r} -> {got or 'unparseable'}")
    return Record.of(sample, outcome, parsed=got, gold=want, responses=(text,), request_keys=(key,) if key else (),
                     details={"gold_setting": gold}, message=message)


INVARIANTS, DECLINE, DECEPTION = "joint_invariants", "order_decline", "deception_gap"
CELLS = "Figures: length x order per deception x style"
MARGINS = "Margins: order, length, deception, style"
CELL = ("deception", "style", "length")


def chains(records: Sequence[Record]) -> dict[str, dict[int, Record]]:
    """Records by chain (`<style>/<story>`) and order."""
    return {c: {int(r.facets["order"]): r for r in rs} for (c,), rs in groups(records, ("chain",)).items()}


def joint(records: Sequence[Record], k: int) -> tuple[list[tuple[bool, str]], int]:
    """(jointly right, story) of each chain asked at order k with 0..k all scored, and how many chains lack one."""
    judged, left = [], 0
    for c in chains(records).values():
        rows = [c[o] for o in range(k + 1) if o in c and c[o].scored]
        if k in c and len(rows) == k + 1:
            judged.append((all(r.passed for r in rows), c[k].facets["story"]))
        left += k in c and len(rows) < k + 1
    return judged, left


def _rate(key: tuple[str, ...], label: str, table: str, units: Sequence[tuple[bool, str]]) -> list[Metric]:
    return clustered_rate(key, label, table, [float(v) for v, _ in units], [s for _, s in units], "story")


def _items(records: Iterable[Record]) -> list[tuple[bool, str]]:
    return [(r.passed, r.facets["story"]) for r in records if r.scored]


def slice_metrics(prefix: tuple[str, ...], name: str, table: str, records: Sequence[Record], *, orders: bool) -> list[Metric]:
    """Accuracy and each order's accuracy, joint and chains left out; `name` ("": JSON only), `orders`: printed."""
    out = _rate((*prefix, "accuracy"), name and f"{name} accuracy", table, _items(records))
    for k in range(5):
        mine, (judged, left) = _items(r for r in records if r.facets["order"] == str(k)), joint(records, k)
        key, what = (*prefix, "order", str(k)), f"{name} order {k}" if name and orders else ""
        out += _rate((*key, "accuracy"), what and f"{what} accuracy", table, mine)
        out += _rate((*key, "joint"), what and f"{what} joint accuracy", table, judged)
        why = f"{what} joint accuracy not computed: chains without orders 0..{k} all run and scored"
        out += [Metric((*key, "joint_left_out"), left, what and why, "count", table)] if left else []
    return out


def invariants_rule(derived: Derived, members: Sequence[Record]) -> Judgement:
    """Joint accuracy never exceeds accuracy and never rises with the order: a failure is a harness bug."""
    chained = chains(members)
    correct = [sum(c[k].passed for c in chained.values() if k in c) for k in range(5)]
    jc = [sum(v for v, _ in joint(members, k)[0]) for k in range(5)]
    wrong = [f"chain {n} mixes deception, style or length" for n, c in chained.items()
             if len({tuple(r.facets[f] for f in CELL) for r in c.values()}) > 1]
    wrong += [f"joint(0) = {jc[0]} but correct(0) = {correct[0]}"] * (jc[0] != correct[0])
    wrong += [f"joint({k}) = {jc[k]} > correct({k}) = {correct[k]}" for k in range(1, 5) if jc[k] > correct[k]]
    wrong += [f"joint({k}) = {jc[k]} > joint({k - 1}) = {jc[k - 1]}" for k in range(1, 5) if jc[k] > jc[k - 1]]
    wrong += [f"{len(chained)} chains, expected {derived.params['chains']}"] * (len(chained) != derived.params["chains"])
    details = {"correct": correct, "joint_correct": jc, "chains": len(chained)}
    return Judgement(not wrong, f"Hi-ToM joint accuracy invariants broken in {derived.id} (a harness bug): "
                     + "; ".join(wrong) if wrong else "", jc[4] / len(chained) if chained else None, details=details)


def _gap_rule(facet: str, a: str, b: str, what: str, above: bool) -> Rule:
    """acc(`a`) - acc(`b`) over the `facet` groups, by story, beyond max_gap (`above`) or below -max_gap."""
    return gap_rule(facet, a, b, "story", lambda d, g, tol: (
        f"Hi-ToM {d.kind}: {what} is {100 * g.point:+.1f} points (95% interval [{100 * g.low:+.1f}, "
        f"{100 * g.high:+.1f}], {g.n_a} vs {g.n_b} items), beyond the tolerance of {100 * tol:.1f} points"), above=above)


class HiToM(Benchmark[HiToMExtra]):
    name = "hitom"
    description = ("Hi-ToM: 1,200 higher-order ToM questions, orders 0-4, with and without deception, vanilla and "
                   "chain-of-thought prompts (He et al., Findings of EMNLP 2023)")
    options = (
        BenchmarkOption("prompt", "both", "Which official prompt files to ask: both (1,200 items), vanilla (the MC "
                        "files) or cot (the CoT files).", choices=("both", "vanilla", "cot")),
        BenchmarkOption("gold", "cot", "Answer key where the MC and CoT data files disagree (138 of 600 questions): "
                        "cot (the authors' hand-corrected key, for both styles; as their GPT-4 scoring), mc (the "
                        "generator's raw output) or own (each style its own folder's).", choices=("cot", "mc", "own")),
        BenchmarkOption("max_new_tokens", "0", "Token budget per answer; 0 means the authors' 2000.", kind=int),
        BenchmarkOption("max_gap", "0.05", "order_decline and deception_gap fail only when the gap is beyond this share"
                        " (0.05 = 5 points) with 95 percent confidence.", kind=float, bounds=(0, 1)),
        *data.PINS.options(),
    )
    facets = (
        Facet("order", {f"order{k}": f"Hi-ToM question of ToM order {k}." for k in range(5)}, stratum=True,
              tables=((), ("style",)), gate=True),
        Facet("deception", {"deception": "Hi-ToM item of a Tell story: agents make public or private claims, "
                                         "possibly lies."}, stratum=True, tables=((), ("order",)), gate=True),
        Facet("length", {f"length{n}": f"Hi-ToM story of {n} chapter{'s' * (n > 1)}." for n in (1, 2, 3)},
              stratum=True, tables=((),), gate=True),
        Facet("style", {"vanilla": "Hi-ToM vanilla prompt (the MC files, the paper's VP).",
                        "cot": "Hi-ToM chain-of-thought prompt (the CoT files, the paper's CoTP)."},
              tables=((),), gate=True),
        Facet("story", cluster=True, whole=True),
        Facet("check", {INVARIANTS: "Hi-ToM check: joint accuracy <= accuracy, never rising with the order.",
                        DECLINE: "Hi-ToM check: order-4 accuracy is not above order-0 accuracy.",
                        DECEPTION: "Hi-ToM check: at orders 1-4, deception does not raise accuracy."}),
    )
    rules: ClassVar[Mapping[str, Rule]] = {
        INVARIANTS: invariants_rule,
        DECLINE: _gap_rule("order", "4", "0", "order-4 minus order-0 accuracy", above=True),
        DECEPTION: _gap_rule("deception", "no_tell", "tell", "No_Tell minus Tell accuracy", above=False),
    }
    """Order-4 accuracy must not be above order-0 accuracy, nor Tell (deception) above No_Tell at orders 1-4,
    beyond max_gap with 95% confidence; the invariants must hold exactly."""

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        self.pins = data.PINS.pins(self.settings["sha256"])

    def load(self, source: DataSource) -> list[HiToMSample]:
        s, (folder, _) = self.settings, data.PINS.release(self.pins).locate(source)
        return data.load(folder, prompt=s["prompt"], gold=s["gold"], pins=self.pins, partial=s["partial"])

    def program(self, sample: HiToMSample) -> Program:
        (response,) = yield [req := request(sample, self.settings["max_new_tokens"])]
        return score(sample, response.text, self.settings["gold"], req.key)

    def derived(self, samples: Sequence[HiToMSample]) -> list[Derived]:
        """The checks the loaded samples support: one invariants check per cell; each gap check needs both its groups."""
        out = [Derived("hitom", f"{t}-{st}-length_{n}", INVARIANTS, tuple(s.id for s in mine),
                       ("hitom", INVARIANTS, f"length{n}", st, *(("deception",) if t == "tell" else ())),
                       {"deception": t, "style": st, "length": n}, {"chains": len({s.facets["chain"] for s in mine})})
               for (t, st, n), mine in sorted(groups(samples, CELL).items())]
        ends, high = [s for s in samples if s.extra.order in (0, 4)], [s for s in samples if s.extra.order > 0]
        return out + [Derived("hitom", name, kind, tuple(s.id for s in mine), ("hitom", kind),
                              params={"max_gap": self.settings["max_gap"]})
                      for kind, name, mine, facet in ((DECLINE, "order_4_vs_0", ends, "order"),
                                                      (DECEPTION, "orders_1_4", high, "deception"))
                      if len({s.facets[facet] for s in mine}) == 2]  # a gap needs both its sides

    def metrics(self, records: Sequence[Record]) -> list[Metric]:
        """Every metric of one suite's records, and the `gold` setting that scored them."""
        scored, gold = [r for r in records if r.scored], self.settings["gold"]
        out = [Metric(("gold",), gold, "gold key (MC and CoT data files disagree on 138 questions)", "text", MARGINS),
               Metric(("n",), len(scored), "items scored", "count", MARGINS),
               Metric(("unparseable",), sum(r.outcome is Outcome.UNPARSEABLE for r in scored),
                      "answers with no '<L>. <container>' first line (not correct)", "count", MARGINS),
               *slice_metrics(("overall",), "all", MARGINS, records, orders=True)]
        for facet in CELL:
            for (value,), mine in sorted(groups(records, (facet,)).items()):
                out += slice_metrics((facet, value), f"{facet} {value}", MARGINS, mine, orders=False)
        for (tell, style, length), mine in sorted(groups(records, CELL).items()):
            out += slice_metrics(("cells", tell, style, f"length_{length}"), "", CELLS, mine, orders=False)
        return out
