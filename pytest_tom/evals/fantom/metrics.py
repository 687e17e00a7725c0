"""FANToM's paper aggregation: upstream's `score_and_analyze` (its rounding included), plus illusory-ToM counts.

Set-level scores use complete units only: a unit missing a question is left out and counted. The control report's
ALL*/ALL follow the selected evaluator revision under upstream's keys, and both revisions' rules under keys that name
them (`accessible:set:ALL*:rev2023`, `...:rev2024`), so a threshold or a published row can name an exact rule.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_tom.evals.fantom.data import FAMILIES, FAMILY, LABEL, QUESTION_TYPES, TOM_TYPES
from pytest_tom.evals.fantom.scoring import gold_int
from pytest_tom.framework.metric import Show
from pytest_tom.metrics import accuracy, group_by, mean
from pytest_tom.record import Outcome, Record
from pytest_tom.scoring import mentions, weighted_f1

_SETTINGS = "fantom (Dist. is comparable to the paper only with its embedder)"
_REPORT = ("fantom {0} context, upstream's {1} report (set and character scores: % of units with every question "
           "right; other scores % of questions right; F1: token F1 or weighted yes/no F1)")
_EXTRA = "fantom {0} context, {1}: illusory ToM, counts and units left out of set scores"
SHOW = (
    Show(("embedder",), "embedder", _SETTINGS, "text"),
    Show(("embedder_is_paper_model",), "the paper's embedder", _SETTINGS, "text"),
    Show(("parsing",), "parsing", _SETTINGS, "text"),
    Show(("aggregation",), "aggregation", _SETTINGS, "text"),
    Show(("prompt",), "prompt", _SETTINGS, "text"),
    Show(("evaluator",), "evaluator", _SETTINGS, "text"),
    Show(("contexts", "*", "*", "*wrong_reasons:freq", "*"), "{2} {3}", _REPORT, "count"),
    Show(("contexts", "*", "*", "*:*"), "{2}", _REPORT, "percent"),
    Show(("contexts", "*", "*", "fact_word-f1"), "fact token F1", _REPORT, "percent"),
    Show(("contexts", "*", "extra", "*", "belief:choice_dist_agreement"), "choice/dist. agree", _EXTRA, "percent"),
    Show(("contexts", "*", "extra", "*", "*:freq", "*"), "{2} {3}", _EXTRA, "count"),
    Show(("contexts", "*", "extra", "*", "*"), "{2}", _EXTRA, "count"),
)
"""What the terminal and Markdown print; the report keeps every number."""


def round_numpy(v: float | None) -> float | None:
    """`round(v, 3) * 100` on a numpy float (pandas results): numpy rounds `v * 1000` half to even."""
    return None if v is None else (round(v * 1000) / 1000) * 100


def round_python(v: float | None) -> float | None:
    """`round(v, 3) * 100` on a Python float (the `evaluate` F1): correctly rounded decimal."""
    return None if v is None else round(v, 3) * 100


def _ok(r: Record) -> bool:
    return r.outcome is Outcome.CORRECT


def _qtype(r: Record) -> str:
    return r.facets.get("question_type", "")


def kept_sets(records: Iterable[Record]) -> set[str]:
    """The sets the 2024 evaluator keeps in the control ALL*/ALL: every ToM question of the set is tagged accessible.

    Records carry the flag fixed at load (a selection cannot change it); records replayed from reports written before
    it fall back to their own tags: every ToM record of the set, whatever its outcome, tagged accessible.
    """
    flags: dict[str, bool] = {}
    tags: dict[str, bool] = {}
    for r in records:
        if _qtype(r) in TOM_TYPES:
            name = r.facets["set"]
            if "set_all_accessible" in r.details:
                flags[name] = flags.get(name, True) and bool(r.details["set_all_accessible"])
            tags[name] = tags.get(name, True) and r.facets["accessibility"] == "accessible"
    return {name for name, ok in tags.items() if flags.get(name, ok)}


def _all_by(records: Iterable[Record], field: str) -> float | None:
    """groupby(field)['result'].all().mean()."""
    by: dict[str, bool] = {}
    for r in records:
        key = r.facets[field]
        by[key] = by.get(key, True) and _ok(r)
    return mean([float(v) for v in by.values()])


def illusory_counts(target: Sequence[Record]) -> dict[str, Any]:
    """Illusory ToM (spec A8, A10) in one scenario's scored ToM records, counted, never failed.

    A8: a belief's free and choice forms should agree; A10: choices right while a list (a prerequisite) is wrong.
    """
    by_qid = {r.sample_id: r for r in target}
    pairs = [(_ok(r), _ok(by_qid[other])) for r in target if _qtype(r) == "belief_free"
             and (other := r.sample_id.replace("-belief_free-", "-belief_choice-")) in by_qid]
    by_set: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in target:
        qtype = _qtype(r)
        if qtype == "belief_choice" or qtype.endswith("_list"):
            by_set[r.facets["set"]]["choice" if qtype == "belief_choice" else "list"].append(_ok(r))
    sets = [v for v in by_set.values() if v["choice"] and v["list"]]
    return {
        "belief:choice_dist_pairs": len(pairs),
        "belief:choice_dist_agreement": round_numpy(mean([float(d == c) for d, c in pairs])),
        "belief:choice_right_dist_wrong": sum(c and not d for d, c in pairs),
        "belief:dist_right_choice_wrong": sum(d and not c for d, c in pairs),
        "sets_with_choice_and_lists": len(sets),
        "sets:choice_right_list_wrong": sum(all(v["choice"]) and not all(v["list"]) for v in sets),
    }


@dataclass(frozen=True, slots=True)
class CharacterEntry:
    """One row of upstream's per-character analysis."""

    qid: str
    what: str
    ok: bool
    value: int | None  # binarized (1 knows, 0 does not, -1 unreadable); None for beliefs
    note: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def character_entries(records: Sequence[Record], field: str, mode: str) -> dict[tuple[str, str], list[CharacterEntry]]:
    """Upstream's character tracking rows by (unit, character); a list answer is tiled per yes/no question."""
    out: dict[tuple[str, str], list[CharacterEntry]] = defaultdict(list)
    lists: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for r in records:
        qt = _qtype(r)
        if qt.endswith("_list"):
            lists[(FAMILY[qt], r.facets[field])].append(r)
    for r in records:
        f = r.facets
        qt = f["question_type"]
        unit = f[field]
        if qt in ("belief_free", "belief_choice"):
            if f.get("character"):
                note = f"{r.outcome.value} (answer {r.parsed!r}, gold {r.gold!r})"
                out[(unit, f["character"])].append(CharacterEntry(r.sample_id, LABEL[qt], _ok(r), None, note))
        elif qt.endswith("_yn"):
            d = r.details
            value = int(d.get("binarized", -1))
            char = f["character"]
            said = {1: "yes", 0: "no", -1: "unreadable"}[value]
            out[(unit, char)].append(CharacterEntry(r.sample_id, LABEL[qt], _ok(r), value,
                                                    f"said {said}, gold {d.get('gold_yes_no', r.gold)}"))
            for lr in lists.get((FAMILY[qt], unit), []):
                answer = str(lr.details.get("answer", ""))
                named = mentions(char, answer, mode)
                should = d.get("gold_yes_no") == "yes"
                out[(unit, char)].append(CharacterEntry(
                    lr.sample_id, LABEL[lr.facets["question_type"]], named == should, int(named),
                    f"{'named' if named else 'not named'}, should {'be' if should else 'not be'}",
                ))
    return out


def scenario_report(records: Sequence[Record], scenario: str, field: str, mode: str, context: str,
                    evaluator: str = "2024") -> tuple[dict[str, Any], dict[str, Any]]:
    """One of upstream's two reports ("fantom" for inaccessible, "control_task" for accessible), plus extras.

    `evaluator` picks whose control ALL*/ALL go under upstream's keys: 2023 (`ebd35eb`) scores every unit with
    accessible questions; 2024 (`1cae6fa`) only the rows of sets whose every ToM question is accessible (the filter is
    by set, then grouped by unit; no kept set gives None, upstream's NaN). Units must still be complete over all their
    rows of the scenario first: conservative, as upstream has no selection.
    """
    scored = [r for r in records if r.outcome is not Outcome.ERROR]
    tom = [r for r in scored if _qtype(r) in TOM_TYPES]
    asked = [r for r in records if _qtype(r) in TOM_TYPES and r.facets["accessibility"] == scenario]
    target = [r for r in asked if r.outcome is not Outcome.ERROR]
    present = Counter(r.facets[field] for r in asked)
    errored = {r.facets[field] for r in asked if r.outcome is Outcome.ERROR}
    # ToM questions in a record's unit; reports written before the typed contract kept it in the facets
    sizes = {r.facets[field]: int(r.details.get("unit_size", r.facets.get("unit_size", -1))) for r in target}
    complete = {u for u, n in present.items() if n == sizes.get(u, -1) and u not in errored}
    whole = [r for r in target if r.facets[field] in complete]
    p = scenario + ":"
    rep: dict[str, Any] = {"conversation_input_type": context}
    for_all = {f"tom:belief:{scenario}:multiple-choice", "tom:answerability:list", "tom:answerability:binary",
               "tom:info_accessibility:list", "tom:info_accessibility:binary"}
    kept = kept_sets(records) if scenario == "accessible" else {r.facets["set"] for r in whole}
    rules = {"2023": whole, "2024": [r for r in whole if r.facets["set"] in kept]}
    by_rule = {rev: (round_numpy(_all_by(rows, field)),
                     round_numpy(_all_by([r for r in rows if r.facets["upstream_type"] in for_all], field)))
               for rev, rows in rules.items()}
    rep[p + "set:ALL*"], rep[p + "set:ALL"] = by_rule[evaluator]
    if scenario == "accessible":  # the inaccessible report is the same under both rules
        for rev, (star, every) in by_rule.items():
            rep[p + f"set:ALL*:rev{rev}"], rep[p + f"set:ALL:rev{rev}"] = star, every
    choice = [r for r in target if r.facets["upstream_type"].endswith(":multiple-choice")]
    rep[p + "belief:multiple-choice"] = round_numpy(accuracy(choice))
    dist = [r for r in target if r.facets["upstream_type"] == f"tom:belief:{scenario}"]
    rep[p + "belief:distance"] = round_numpy(accuracy(dist))
    rep[p + "belief_true_word-f1"] = round_numpy(mean([float(r.score or 0.0) for r in dist if _ok(r)]))
    extra: dict[str, Any] = {}
    for family in FAMILIES:
        fam = [r for r in whole if r.facets["family"] == family]
        rep[p + f"{family}:set:ALL"] = round_numpy(_all_by(fam, field))
        lst = [r for r in target if _qtype(r) == f"{family}_list"]
        rep[p + f"{family}:list"] = round_numpy(accuracy(lst))
        yn = [r for r in target if _qtype(r) == f"{family}_yn"]
        preds = [int(r.details.get("binarized", -1)) for r in yn]
        refs = [gold_int(r.details.get("gold_yes_no", "no")) for r in yn]
        rep[p + f"{family}:binary-f1"] = round_python(weighted_f1(preds, refs))
        extra[f"{family}:list:wrong_reasons:freq"] = _list_reasons(lst)
        extra[f"{family}:binary:wrong_reasons:freq"] = _binary_reasons(yn)
        extra[f"{family}:n_list"] = len(lst)
        extra[f"{family}:n_yes_no"] = len(yn)
    facts = [r for r in scored if _qtype(r) == "fact"]
    rep["fact_word-f1"] = round_numpy(mean([float(r.score or 0.0) for r in facts]))
    rep[p + "tom:lists:wrong_reasons:freq"] = _list_reasons([r for r in target if _qtype(r) == "answerability_list"])
    rep[p + "tom:binary:wrong_reasons:freq"] = _binary_reasons([r for r in target if _qtype(r).endswith("_yn")])
    # Table 4 (upstream: "only consider the BeliefQ[dist.] questions"), by upstream's question_type label.
    belief_dist = [r for r in tom if r.facets["upstream_type"] == f"tom:belief:{scenario}"]
    by_order: dict[str, list[bool]] = defaultdict(list)
    by_type: dict[str, list[bool]] = defaultdict(list)
    for r in belief_dist:
        tom_type = r.facets["tom_type"]
        by_order[tom_type.split(":")[0]].append(_ok(r))
        by_type[tom_type].append(_ok(r))
    for key, vals in (*sorted(by_order.items()), *sorted(by_type.items())):
        rep[p + key] = round_numpy(sum(vals) / len(vals))
    rows = character_entries(whole, field, mode)
    rep[p + "set:ALL_character"] = round_numpy(mean([float(all(e.ok for e in es)) for es in rows.values()]))
    consistency = [len({e.value for e in es if e.value is not None}) == 1
                   for es in rows.values() if any(e.value is not None for e in es)]
    rep[p + "set:character_answer_consistency"] = round_numpy(mean([float(v) for v in consistency]))
    extra.update(illusory_counts(target))
    extra.update(units=len(present), complete_units=len(complete), incomplete_units=len(present) - len(complete),
                 n_belief_choice=len(choice), n_belief_free=len(dist), n_fact=len(facts), n_characters=len(rows))
    if scenario == "accessible":  # how few sets the 2024 control ALL*/ALL rest on (often 1 in the full context)
        extra.update(sets_all_accessible=len({r.facets["set"] for r in asked} & kept),
                     units_rev2024=len({r.facets[field] for r in rules["2024"]}))
    return rep, extra


def _list_reasons(records: Sequence[Record]) -> dict[str, int]:
    out: Counter[str] = Counter()
    for r in records:
        if _ok(r):
            continue
        exc, inc = bool(r.details.get("excluded_aware")), bool(r.details.get("included_unaware"))
        out["did_both" if exc and inc else "excluded_aware_character" if exc else "included_unaware_character"] += 1
    return dict(out.most_common())


def _binary_reasons(records: Sequence[Record]) -> dict[str, int]:
    names = {0: "false_negative", 1: "false_positive", -1: "irrelevant_response"}
    out: Counter[str] = Counter(names[int(r.details.get("binarized", -1))] for r in records if not _ok(r))
    return dict(out.most_common())


def context_reports(records: Sequence[Record], contexts: Sequence[str], aggregation: str, mode: str,
                    evaluator: str = "2024") -> dict[str, Any]:
    """Per context: upstream's "fantom" and "control_task" reports and our extras, for contexts with records."""
    by_context = group_by([r for r in records if _qtype(r) in QUESTION_TYPES], "context")
    out: dict[str, Any] = {}
    for context in contexts:
        recs = by_context.get(context, [])
        if not recs:
            continue
        fantom, extra_in = scenario_report(recs, "inaccessible", aggregation, mode, context, evaluator)
        control, extra_ac = scenario_report(recs, "accessible", aggregation, mode, context, evaluator)
        out[context] = {"fantom": fantom, "control_task": control, "extra": {"inaccessible": extra_in, "accessible": extra_ac}}
    return out
