"""The paper's aggregation (Tables 2, 3, 21 and 22) over typed records, and which of its numbers are printed.

Each printed table says how it is computed: the suite's table pools questions, so its
"Non-Literal Communication" row and the macro "nonliteral" category here differ.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_tom.evals.tombench.data import ABILITIES, CATEGORIES, DESIRE_II, DESIRE_II_SUB_LABELS, TASK_ORDER
from pytest_tom.evals.tombench.data import HUMAN_TASK_ACCURACY_ZH as HUMAN
from pytest_tom.framework.metric import Show
from pytest_tom.metrics import accuracy, group_by, mean, tally
from pytest_tom.record import Outcome, Record

_AVG = "tombench {0} ({aggregation} aggregation)"
SHOW = (
    Show(("languages", "*", "task_avg"), "task AVG", _AVG),
    Show(("languages", "*", "ability_avg"), "ability AVG", _AVG),
    Show(("languages", "*", "coherent_avg"), "coherent AVG", _AVG),
    Show(("languages", "*", "complete"), "(unweighted means of the task, category and coherent rates below) every task present",
         _AVG, "text"),
    Show(("languages", "*", "tasks", "*", "accuracy"), "{1}", "tombench {0} tasks (% of questions right)"),
    Show(("languages", "*", "coherent", "*", "accuracy"), "{1}",
         "tombench {0} coherent stories (Table 22: % of stories with every question right)"),
    Show(("languages", "*", "loglikelihood_accuracy"), "% of questions right", "tombench {0} log-likelihood scoring"),
    Show(("languages", "*", "generate_vs_loglikelihood_disagreement"), "% of items it disagrees with generation on",
         "tombench {0} log-likelihood scoring"),
    Show(("languages", "*", "categories", "*"), "{1}",
         "tombench {0} categories (unweighted mean of the category's abilities, not per question)"),
)
"""What the terminal and Markdown print; the report keeps every number."""


def aggregate(records: Sequence[Record], mode: str = "paper") -> dict[str, Any]:
    """Per language: `paper` = Tables 2, 3, 22 (Desire II averaged); `clean` pools it, drops FRT's broken blocks."""
    by_lang = group_by(records, "language")
    return {"aggregation": mode, "languages": {lang: _language(recs, mode) for lang, recs in sorted(by_lang.items())}}


def _language(recs: Sequence[Record], mode: str) -> dict[str, Any]:
    scored = [r for r in recs if r.outcome is not Outcome.ERROR]
    by_task = group_by([r for r in scored if r.facets["task"] != "extra"], "task")
    by_ability = group_by(scored, "ability")
    by_sub: dict[str, list[Record]] = defaultdict(list)
    for r in scored:
        by_sub[r.facets.get("sub_label", r.facets["ability"])].append(r)
    tasks = {t: tally(by_task[t]).to_dict() for t in TASK_ORDER if by_task.get(t)}
    abilities: dict[str, float | None] = {}
    for ability, rs in by_ability.items():
        if mode == "paper" and ability == DESIRE_II:
            parts = [accuracy(by_sub[s]) for s in DESIRE_II_SUB_LABELS if by_sub.get(s)]
            abilities[ability] = mean(p for p in parts if p is not None)
        else:
            abilities[ability] = accuracy(rs)
    categories: dict[str, float] = {}
    for cat, names in ABILITIES.items():
        if mode == "paper" and cat == "Desire":
            groups = [s for a in names for s in (DESIRE_II_SUB_LABELS if a == DESIRE_II else (a,))]
            vals = [accuracy(by_sub[s]) for s in groups if by_sub.get(s)]
        else:
            vals = [abilities[a] for a in names if abilities.get(a) is not None]
        value = mean(v for v in vals if v is not None)
        if value is not None:
            categories[CATEGORIES[cat]] = value
    coherent = _coherent(recs, tasks, mode)
    both = [r for r in scored if "loglikelihood_answer" in r.details]
    disagreement = sum(r.parsed != r.details["loglikelihood_answer"] for r in both) / len(both) if both else None
    task_avg = mean(t["accuracy"] for t in tasks.values() if t["accuracy"] is not None)
    human = {t: HUMAN[t] - v["accuracy"] for t, v in tasks.items() if v["accuracy"] is not None}
    return {"n": len(scored), "micro_accuracy": accuracy(scored), "tasks": tasks, "task_avg": task_avg,
            "abilities": abilities, "categories": categories, "ability_avg": mean(categories.values()),
            "coherent": coherent, "coherent_avg": mean(c["accuracy"] for c in coherent.values()), "human_gap": human,
            "generate_vs_loglikelihood_disagreement": disagreement,
            "loglikelihood_accuracy": mean(float(bool(r.details["loglikelihood_correct"])) for r in both),
            "complete": set(tasks) == set(TASK_ORDER) and len(categories) == len(CATEGORIES)}


def _coherent(recs: Sequence[Record], tasks: Mapping[str, Mapping[str, Any]], mode: str) -> dict[str, dict[str, Any]]:
    """Table 22: a story counts only if every one of its questions was scored, and passes only if all pass."""
    stories = {k: rs for k, rs in group_by(recs, "story").items() if k}
    story_total, story_pass = Counter[str](), Counter[str]()
    for rs in stories.values():
        # An errored record carries no details (no story_size); its story is skipped anyway.
        size = rs[0].details.get("story_size")
        if ((size is not None and len(rs) != int(size)) or any(r.outcome is Outcome.ERROR for r in rs)
                or (mode == "clean" and any(r.details.get("defect") for r in rs))):
            continue
        task = rs[0].facets["task"]
        story_total[task] += 1
        story_pass[task] += all(r.outcome is Outcome.CORRECT for r in rs)
    coherent: dict[str, dict[str, Any]] = {}
    for task in TASK_ORDER:
        if story_total.get(task):
            c = story_pass[task] / story_total[task]
            orig = tasks[task]["accuracy"] if task in tasks else None
            coherent[task] = {"stories": story_total[task], "passed": story_pass[task], "accuracy": c,
                              "drop": (orig - c) if orig is not None else None}
    return coherent
