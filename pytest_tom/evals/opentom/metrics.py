"""OpenToM's metrics as the official `evaluate.py` computes them (spec §3.7), typed, and its diagnostics (§6). Per cell
(multihop pools fullness and accessibility, which share integer labels): macro-F1 and accuracy over the answers parsed
against an existing gold, as the official metrics drop unparseable answers; beside them the counts, the corrupted rate
and a strict accuracy counting unparseable answers wrong. `protocol=paper`: mean and population std over the 5 batches.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pytest_tom.framework.metric import Metric
from pytest_tom.metrics import group_by, groups
from pytest_tom.record import MetricData, Record
from pytest_tom.stats import macro_f1

TABLE = "Macro-F1 and accuracy per genre and order (official rule; unparseable answers dropped)"
DIAGNOSTICS = "Answers the official rule could not read, and self-consistency"
CELLS = ("loc_coarse/fo", "loc_coarse/so", "loc_fine/fo", "loc_fine/so", "multihop/fo", "multihop/so", "fullness/fo",
         "fullness/so", "accessibility/fo", "accessibility/so", "attitude")


def members(cell: str, records: Sequence[Record]) -> list[Record]:
    """The scored records of a cell: multihop pools fullness and accessibility; the others are one genre and order."""
    genre, _, order = cell.partition("/")
    return [r for r in records if r.scored and (r.facets["cell"] == cell if genre in ("multihop", "attitude") else
                                                r.facets["genre"] == genre and r.facets["order"] == order)]


def stats(cell: str, recs: Sequence[Record]) -> dict[str, float]:
    """One cell's official numbers (spec §3.7) and pytest-tom's counts."""
    pairs = [(r.gold, r.parsed) for r in recs if r.parsed is not None and r.gold is not None]
    gold_n = sum(r.gold is not None for r in recs)
    out = {"n": float(len(recs)), "n_scored": float(len(pairs)), "unparseable": float(sum(r.parsed is None for r in recs)),
           "no_gold": float(len(recs) - gold_n),
           "accuracy": sum(g == p for g, p in pairs) / len(pairs) if pairs else 0.0,
           "macro_f1": macro_f1([g for g, _ in pairs], [p for _, p in pairs]) if pairs else 0.0,
           "accuracy_strict": sum(r.passed for r in recs) / gold_n if gold_n else 0.0,
           "corrupted_rate": (len(recs) - len(pairs)) / len(recs) if recs else 0.0}
    if cell.startswith("multihop/"):  # the official multihop rate is the mean of its two parts' rates
        parts = [stats(f"{k}/{cell[9:]}", [r for r in recs if r.facets["genre"] == k]) for k in ("fullness", "accessibility")]
        out["corrupted_rate"] = statistics.fmean([p["corrupted_rate"] for p in parts if p["n"]])
    return out


COUNTS = ("n", "n_scored", "unparseable", "no_gold")
PRINTED = {"macro_f1": "macro-F1", "accuracy": "accuracy"}
"""The numbers printed per cell; the rest (`accuracy_strict`, `corrupted_rate`, the counts) are in the JSON report."""


def _label(cell: str, name: str, end: str = "") -> str:
    return f"{cell} {PRINTED[name]}{end}" if name in PRINTED else ""


def aggregate(records: Sequence[Record], batched: bool) -> list[Metric]:
    """Every cell's metrics; `batched`: mean, population std and per-batch values over the records' `batch` facet."""
    out: list[Metric] = []
    for cell in CELLS:
        if not (recs := members(cell, records)):
            continue
        key = tuple(cell.split("/"))
        if not batched:
            out += [Metric((*key, name), int(v) if name in COUNTS else v, _label(cell, name),
                           "count" if name in COUNTS else "rate", TABLE, n=len(recs)) for name, v in stats(cell, recs).items()]
            continue
        per = [stats(cell, rs) for _, rs in sorted(group_by(recs, "batch").items(), key=lambda kv: int(kv[0]))]
        for name in per[0]:
            vals = tuple(p[name] for p in per)
            std, shown = statistics.pstdev(vals), _label(cell, name, f" (mean over {len(vals)} batches)")
            out += [Metric((*key, name, "mean"), statistics.fmean(vals), shown, "score", TABLE, n=len(recs), std=std),
                    Metric((*key, name, "std"), std, "", "score", TABLE),
                    Metric((*key, name, "per_batch"), vals, "", "list", TABLE)]
    return out + diagnostics(records)


def diagnostics(records: Sequence[Record]) -> list[Metric]:
    """Coarse-fine agreement of the model's own answers (spec §6.2) and the narrator control (§6.4)."""
    out: list[Metric] = []
    loc = [r for r in records if r.scored and r.facets["genre"] in ("loc_coarse", "loc_fine")
           and r.facets["perspective"] != "narrator"]
    twins = groups(loc, ("order", "narrative", "perspective", "length"))  # a coarse and a fine question of one character
    for order in ("fo", "so"):
        both = [{r.facets["genre"]: r for r in rs} for k, rs in twins.items() if k[0] == order]
        pairs = [(p["loc_coarse"].parsed, p["loc_fine"].parsed) for p in both if len(p) == 2]
        read = [(c, f) for c, f in pairs if c is not None and f in (1, 2)]
        if pairs:
            out += [Metric(("coarse_fine_agreement", order), sum((c == 1) == (f == 1) for c, f in read) / len(read)
                           if read else 0.0, f"coarse-fine agreement, {order} (Yes = original place)", "rate",
                           DIAGNOSTICS, n=len(read)),
                    Metric(("coarse_fine_agreement", f"{order}_unreadable"), len(pairs) - len(read), "", "count",
                           DIAGNOSTICS)]
    narrator = [r for r in records if r.scored and r.facets["perspective"] == "narrator" and r.gold is not None]
    if narrator:
        out.append(Metric(("narrator_control",), sum(r.passed for r in narrator) / len(narrator),
                          "narrator control: where the entity is at the beginning and the end", "rate", DIAGNOSTICS,
                          n=len(narrator)))
    return out


def gate_rates(records: Sequence[Record]) -> list[MetricData]:
    """`macro_f1.<cell>` per cell, gateable: each scorable question a unit in its narrative, with (gold, prediction) so a
    comparison bootstraps the F1 difference; an unparseable answer is the prediction -1 (a wrong class of its own), as
    gates count unparseable answers wrong, unlike the official metrics which drop them.
    """
    out = []
    for cell in CELLS:
        recs = [r for r in members(cell, records) if r.facets.get("scorable") != "no"]
        if recs:
            out.append(MetricData(f"macro_f1.{cell.replace('/', '_')}", tuple(r.sample_id for r in recs),
                                  tuple(float(r.passed) for r in recs), tuple(r.facets["narrative"] for r in recs),
                                  f"OpenToM {cell} macro-F1 (unparseable counted as a wrong class)", True,
                                  tuple((r.gold, -1 if r.parsed is None else r.parsed) for r in recs)))
    return out
