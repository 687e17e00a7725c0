"""ToMValley's tables as the paper computes them: micro accuracies with counts summed over contexts.

Table 3 (item x question type, 11 cells; an influence question counts under its start state) and AVG (micro over
every question), Tables 4/6 per item and type, per sub-type with its chance level, per scenario and span (T1 + T2),
and Fig. 6's compositional statuses. Unparseable answers count as wrong.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.evals.tomvalley.data import ITEMS, QTYPES, SUBTYPES
from pytest_tom.evals.tomvalley.derived import STATUSES, record_statuses
from pytest_tom.framework.metric import Show
from pytest_tom.metrics import group_by, mean, tally
from pytest_tom.record import Outcome, Record

CELLS = tuple((item, qtype) for item in ITEMS for qtype in QTYPES if not (item == "action" and qtype == "influence"))

SHOW = (
    Show(("protocol",), "protocol", "tomvalley", "text"),
    Show(("style",), "style", "tomvalley", "text"),
    Show(("contexts",), "contexts", "tomvalley", "count"),
    Show(("questions",), "questions", "tomvalley", "count"),
    Show(("avg", "accuracy"), "AVG (micro, counts summed over contexts, unparseable counted wrong)", "tomvalley"),
    Show(("avg", "unparseable"), "unparseable", "tomvalley", "count"),
    Show(("table3", "*", "accuracy"), "{0}", "tomvalley Table 3 (item.question type, % right)"),
    Show(("items", "*", "accuracy"), "{0}", "tomvalley items"),
    Show(("question_types", "*", "accuracy"), "{0}", "tomvalley question types"),
    Show(("subtypes", "*", "accuracy"), "{0}", "tomvalley sub-types (with chance level)"),
    Show(("subtypes", "*", "chance"), "{0} chance", "tomvalley sub-types (with chance level)"),
    Show(("spans", "*", "accuracy"), "{0}", "tomvalley spans (T1+T2, lost in the middle)"),
    Show(("composition", "*", "n"), "{0} n", "tomvalley composition (Fig. 6, % of compositional questions)", "count"),
    Show(("composition", "*", "*"), "{0} {1}", "tomvalley composition (Fig. 6, % of compositional questions)"),
)
"""What the terminal and Markdown print; the report keeps every number."""


def _acc(records: Sequence[Record]) -> dict[str, Any]:
    return tally(records).to_dict()


def _by(records: Sequence[Record], facet: str) -> dict[str, list[Record]]:
    """`group_by` without the records that lack the facet (a transformation has no scenario)."""
    return {k: v for k, v in group_by(records, facet).items() if k}


def aggregate(records: Sequence[Record], settings: Mapping[str, Any]) -> dict[str, Any]:
    scored = [r for r in records if r.outcome is not Outcome.ERROR]
    contexts = sorted({r.facets.get("context", "") for r in records})
    by_item, by_qtype, by_sub = _by(records, "item"), _by(records, "question_type"), _by(records, "subtype")
    cells = {f"{item}.{qtype}": _acc([r for r in by_item.get(item, []) if r.facets.get("question_type") == qtype])
             for item, qtype in CELLS}
    chance = {sub: mean(1 / r.details["options"] for r in scored if r.facets.get("subtype") == sub
                        and r.details.get("options")) for sub in SUBTYPES}
    spans = {k: _acc(v) for k, v in sorted(_by([r for r in records if r.facets.get("subtype") in
                                                 ("transformation1", "transformation2")], "span").items())}
    got = record_statuses(records)
    subtype_of = {r.sample_id: r.facets.get("subtype", "") for r in records}
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for cid, st in got.items():
        kind = "influence" if subtype_of[cid] == "influence" else "transformation"
        by_kind[kind][st] += 1
        by_kind["all"][st] += 1
    composition = {kind: {"n": sum(c.values()), **{s: c.get(s, 0) / sum(c.values()) for s in STATUSES}}
                   for kind, c in sorted(by_kind.items())}
    return {"protocol": settings.get("protocol"), "style": settings.get("style"), "contexts": len(contexts),
            "questions": len(records), "avg": _acc(records), "table3": cells,
            "items": {item: _acc(by_item.get(item, [])) for item in ITEMS},
            "question_types": {q: _acc(by_qtype.get(q, [])) for q in QTYPES},
            "subtypes": {s: {**_acc(by_sub.get(s, [])), "chance": chance[s]} for s in SUBTYPES},
            "scenarios": {k: _acc(v) for k, v in sorted(_by(records, "scenario").items(), key=lambda kv: int(kv[0]))},
            "spans": spans, "composition": composition}
