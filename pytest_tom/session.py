"""Per-run state: loaded suites, sampling, the engine run, and the records for the report.

The plugin's hooks are thin and hand their work to one `TomSession` kept in the
config stash.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_tom.benchmarks import Registry
from pytest_tom.benchmarks.base import Benchmark, DataSource
from pytest_tom.cache import ResponseCache
from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.engine import Engine
from pytest_tom.errors import TomConfigError
from pytest_tom.models import as_model, make_model
from pytest_tom.models.base import Model
from pytest_tom.options import TomOptions
from pytest_tom.suite import Suite
from pytest_tom.types import Group, ItemResult, Question, sha256_text

if TYPE_CHECKING:
    import pytest


@dataclass
class LoadedSuite:
    sid: str
    """Node id of the suite's collector; prefixes its items' keys."""
    benchmark: Benchmark
    questions: list[Question]
    groups: list[Group]
    sample: int | None
    seed: int


class Progress:
    """A one-line progress bar on the real terminal, even while pytest captures output."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.start = time.monotonic()
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done not in (0, total) and now - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = now
        rate = done / (now - self.start) if now > self.start else 0.0
        width = 30
        filled = int(width * done / total) if total else width
        line = f"tom: [{'#' * filled}{'.' * (width - filled)}] {done}/{total} model requests ({rate:.1f}/s)"
        capman = self.config.pluginmanager.getplugin("capturemanager")
        ctx = capman.global_and_fixture_disabled() if capman else None
        if ctx:
            ctx.__enter__()
        try:
            if self.tty:
                sys.stderr.write("\r" + line + ("\n" if done == total else ""))
            else:
                sys.stderr.write(line + "\n")
            sys.stderr.flush()
        finally:
            if ctx:
                ctx.__exit__(None, None, None)


class TomSession:
    def __init__(self, config: pytest.Config, options: TomOptions, registry: Registry) -> None:
        self.config = config
        self.options = options
        self.registry = registry
        self.suites: dict[str, LoadedSuite] = {}
        self.results: dict[str, ItemResult] = {}
        self.engine: Engine | None = None
        self.model: Model | None = None
        self.records: dict[str, dict[str, Any]] = {}
        self.group_records: dict[str, dict[str, Any]] = {}
        self.suite_info: dict[str, dict[str, Any]] = {}
        self._selected: set[str] | None = None
        self._report: dict[str, Any] | None = None
        self._cache: ResponseCache | None = None
        self._order: list[Any] | None = None
        self._chunk_of: dict[str, int] = {}
        self._by_key: dict[str, Any] = {}

    # -- collection ------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return bool(self.options.benchmarks)

    def load_suite(self, sid: str, declaration: Suite) -> LoadedSuite:
        cls = self.registry.get(declaration.benchmark)
        settings: dict[str, Any] = dict(self.options.benchmark_settings.get(cls.name, {}))
        settings.update(declaration.settings)
        bench = cls(settings)
        data_dir = Path(declaration.data_dir) if declaration.data_dir is not None else self.options.data_dir
        source = DataSource(root=data_dir, download=self.options.download, cache_dir=self.options.cache_dir / "data")
        questions = bench.load(source)
        seen: set[str] = set()
        for q in questions:
            if q.qid in seen:
                raise TomConfigError(f"{cls.name}: duplicate question id {q.qid!r}; ids must be unique")
            seen.add(q.qid)
        loaded = LoadedSuite(
            sid=sid,
            benchmark=bench,
            questions=questions,
            groups=bench.groups(questions),
            sample=declaration.sample if declaration.sample is not None else self.options.sample,
            seed=declaration.seed if declaration.seed is not None else self.options.seed,
        )
        self.suites[sid] = loaded
        self.suite_info[sid] = bench.describe()
        return loaded

    def sample(self, items: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """Keep a stratified sample of each sampled suite's questions; return (kept, deselected)."""
        from pytest_tom.collect import GroupItem, QuestionItem

        by_suite: dict[str, list[QuestionItem]] = defaultdict(list)
        for it in items:
            if isinstance(it, QuestionItem) and it.suite.sample is not None:
                by_suite[it.suite.sid].append(it)
        if not by_suite:
            return list(items), []
        drop: set[str] = set()
        for sid, qitems in by_suite.items():
            suite = self.suites[sid]
            keep = stratified_sample(
                [(it.question.qid, tuple(it.question.facets.get(f, "") for f in suite.benchmark.strata)) for it in qitems],
                suite.sample or 0,
                suite.seed,
            )
            drop.update(it.key() for it in qitems if it.question.qid not in keep)
        kept_keys = {it.key() for it in items if isinstance(it, QuestionItem) and it.key() not in drop}
        kept, deselected = [], []
        for it in items:
            if isinstance(it, QuestionItem):
                (deselected if it.key() in drop else kept).append(it)
            elif isinstance(it, GroupItem) and it.suite.sample is not None:
                # A sample splits groups at random; drop them rather than skip hundreds.
                members = {f"{it.suite.sid}::{m}" for m in it.group.members}
                (kept if members <= kept_keys else deselected).append(it)
            else:
                kept.append(it)
        return kept, deselected

    def selected_keys(self, items: Sequence[Any]) -> set[str]:
        if self._selected is None:
            from pytest_tom.collect import QuestionItem

            self._selected = {it.key() for it in items if isinstance(it, QuestionItem)}
        return self._selected

    # -- running ---------------------------------------------------------------------------------
    def default_model(self) -> Model:
        uri = self.options.model
        if not uri:
            raise TomConfigError(
                "no model to test: pass --tom-model=URI (e.g. random, python:pkg.mod:fn, replay:report.json) "
                "or override the tom_model fixture in conftest.py"
            )
        made = self.config.hook.pytest_tom_make_model(uri=uri, config=self.config)
        return as_model(made, uri=uri) if made is not None else make_model(uri)

    def ensure(self, keys: Sequence[str], items: Sequence[Any], model: Callable[[], Any]) -> None:
        """Make sure `keys` have results, answering their whole planning unit in one engine run.

        In one process the unit is every selected question: dedupe and batching
        need the whole plan. On a pytest-xdist worker it is what xdist has already
        queued on this worker (the questions, and the members of queued consistency
        groups), so workers split the model work instead of each answering
        everything. Where the queue cannot be read, the unit falls back to the
        contiguous chunk of the selection that holds the key.
        """
        missing = [k for k in keys if k not in self.results]
        if not missing:
            return
        if self.engine is None:
            self.model = as_model(model())
            self._cache = None if self.options.no_cache else ResponseCache(self.options.cache_dir)
            self.engine = Engine(self.model, self._cache, batch_size=self.options.batch_size, progress=Progress(self.config))
        unit = self._planning_unit(missing, items)
        programs = {key: (it.question, it.suite.benchmark.solve(it.question)) for key, it in unit.items()}
        self.results.update(self.engine.run(programs))
        self.config.hook.pytest_tom_results_ready(session=self, results=self.results)

    def _planning_unit(self, missing: Sequence[str], items: Sequence[Any]) -> dict[str, Any]:
        from pytest_tom.collect import QuestionItem

        if self._order is None:
            self._order = [it for it in items if isinstance(it, QuestionItem)]
            self._by_key = {it.key(): it for it in self._order}
            workers = self._workers()
            size = len(self._order) if workers <= 1 else max(1, -(-len(self._order) // (workers * 4)))
            self._chunk_of = {it.key(): i // size for i, it in enumerate(self._order)}
        for k in missing:
            if k not in self._by_key:
                raise KeyError(f"pytest-tom: {k} is not a selected question")
        queued = self._queued_on_worker(items) if self._workers() > 1 else None
        if queued is not None:
            wanted = dict.fromkeys([*missing, *(k for it in queued for k in getattr(it, "needed_keys", list)())])
            return {k: self._by_key[k] for k in wanted if k in self._by_key and k not in self.results}
        chunks = {self._chunk_of[k] for k in missing}
        return {it.key(): it for it in self._order if self._chunk_of[it.key()] in chunks and it.key() not in self.results}

    def _queued_on_worker(self, items: Sequence[Any]) -> list[Any] | None:
        """The items pytest-xdist has sent to this worker and not yet finished, or None.

        xdist has no public API for this; its worker keeps the indices it was sent
        in `torun`. Reading it is only an optimisation, so any surprise falls back
        to chunk planning.
        """
        for plugin in self.config.pluginmanager.get_plugins():
            torun = getattr(plugin, "torun", None)
            if torun is None or not hasattr(torun, "lock") or not hasattr(plugin, "item_index"):
                continue
            try:
                with torun.lock() as queue:
                    pending = list(queue)
                indices = [plugin.item_index, getattr(plugin, "nextitem_index", None), *pending]
                return [items[i] for i in indices if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(items)]
            except Exception:  # noqa: BLE001 - an xdist internals change must not break a run
                return None
        return None

    def _workers(self) -> int:
        return int(getattr(self.config, "workerinput", {}).get("workercount", 1))

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def errors_within_budget(self) -> bool:
        """True when the run's erroring questions fit the --tom-max-errors budget."""
        errors = sum(1 for r in self.results.values() if r.outcome.value == "error")
        return errors <= self.options.max_errors

    def result(self, key: str) -> ItemResult:
        return self.results[key]

    # -- records ---------------------------------------------------------------------------------
    def record_for(self, item: Any, result: ItemResult) -> dict[str, Any]:
        rec = result.to_dict()
        rec["suite"] = item.suite.sid
        rec["nodeid"] = item.nodeid
        rec["prompt_hash"] = sha256_text("\n".join(result.request_keys))
        rec["suite_info"] = self.suite_info.get(item.suite.sid, {})
        return rec

    def group_record(self, item: Any, members: Sequence[ItemResult]) -> dict[str, Any]:
        g = item.group
        failed = [m.qid for m in members if not m.passed]
        return {
            "kind": "group",
            "suite": item.suite.sid,
            "nodeid": item.nodeid,
            "benchmark": g.benchmark,
            "gid": g.gid,
            "group_kind": g.kind,
            "facets": dict(g.facets),
            "members": list(g.members),
            "failed_members": failed,
            "outcome": "error" if any(m.outcome.value == "error" for m in members) else ("failed" if failed else "passed"),
        }

    def logreport(self, report: pytest.TestReport) -> None:
        """Collect result records from reports; on the xdist controller they arrive from workers."""
        if report.when == "teardown":
            return
        if report.when == "setup" and report.passed:
            return
        for name, value in report.user_properties:
            if name == RECORD_PROPERTY and isinstance(value, dict):
                if value.get("kind") == "group":
                    self.group_records[report.nodeid] = value
                else:
                    self.records[report.nodeid] = value

    # -- output ----------------------------------------------------------------------------------
    def report(self) -> dict[str, Any] | None:
        if not self.records and not self.group_records:
            return None
        from pytest_tom.report import build_report

        return build_report(
            list(self.records.values()),
            list(self.group_records.values()),
            self.registry,
            model=self.model_info(),
            engine=self.engine.stats.to_dict() if self.engine else None,
            responses={k: r.to_dict() for k, r in self.engine.responses.items()} if self.engine else None,
        )

    def summary_lines(self) -> list[str]:
        from pytest_tom.report import summary_lines

        if self._report is None:
            self._report = self.report()
        return summary_lines(self._report, self.registry) if self._report else []

    def finish(self) -> None:
        if self.options.report is None:
            return
        from pytest_tom.report import write_report

        if self._report is None:
            self._report = self.report()
        if self._report is not None:
            write_report(self.options.report, self._report)

    def model_info(self) -> dict[str, Any]:
        if self.model is None:
            return {"uri": self.options.model}
        return self.model.describe()


def stratified_sample(entries: Sequence[tuple[str, tuple[str, ...]]], n: int, seed: int) -> set[str]:
    """Pick `n` ids, allocated to strata in proportion to their size (largest remainder).

    Every stratum gets at least one pick when `n` allows, so rare abilities are
    never sampled away; order within a stratum is a seeded hash, so the same seed
    picks the same ids on every machine.
    """
    if n >= len(entries):
        return {e[0] for e in entries}
    strata: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for qid, stratum in entries:
        strata[stratum].append(qid)
    total = len(entries)
    keys = sorted(strata)
    alloc = {k: 0 for k in keys}
    if n >= len(keys):
        for k in keys:
            alloc[k] = 1
    budget = n - sum(alloc.values())
    quotas = {k: budget * len(strata[k]) / total for k in keys}
    for k in keys:
        alloc[k] += min(int(quotas[k]), len(strata[k]) - alloc[k])
    remaining = n - sum(alloc.values())
    for k in sorted(keys, key=lambda k: (-(quotas[k] - int(quotas[k])), k)):
        if remaining <= 0:
            break
        if alloc[k] < len(strata[k]):
            alloc[k] += 1
            remaining -= 1
    chosen: set[str] = set()
    for k in keys:
        ranked = sorted(strata[k], key=lambda q: hashlib.sha256(f"{seed}:{q}".encode()).hexdigest())
        chosen.update(ranked[: alloc[k]])
    return chosen
