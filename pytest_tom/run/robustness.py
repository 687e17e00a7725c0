"""Robustness items: hypothesis searches one question's perturbations for a change that breaks the model.
`<bench>_robustness[<question>-<strategy>]` items exist only when strategies are asked for (`--tom-robustness` or a
suite's `robustness=[...]`), carry `tom_robustness` and the question's marks, and run hypothesis inside the item: no
test function takes fixtures (so the function-scoped-fixture health check never applies), and every model call goes
through the engine and its cache. The database key is (suite, question, strategy, model), so a failing example is
replayed first next run; the `tom-ci` profile makes CI reproducible, and `--tom-robustness-examples` bounds the model
calls per item.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import pytest

from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.robustness.results import KIND, MARK
from pytest_tom.robustness.search import RobustnessFailed, answer_text, failure_message, search
from pytest_tom.run.gates import is_gate_run
from pytest_tom.run.nodeids import CacheComparableId, place
from pytest_tom.run.session import tom_session

if TYPE_CHECKING:
    from pytest_tom.engine.suites import LoadedSuite
    from pytest_tom.robustness.base import StrategySpec
    from pytest_tom.sample import Sample


class RobustnessItem(CacheComparableId, pytest.Function):
    """One (question, strategy) property: correctness survives every drawn perturbation, or follows a counterfactual."""

    def __init__(self, *, base: Sample[Any], suite: LoadedSuite, spec: StrategySpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.base_sample = base
        self.suite = suite
        self.spec = spec
        self.question_key = suite.key(base.id)
        for mark in (MARK, f"robust_{spec.name}", *base.marks):
            self.add_marker(getattr(pytest.mark, mark))

    def setup(self) -> None:
        super().setup()
        tom = tom_session(self.config)
        bench = self.suite.benchmark
        model = self.funcargs["tom_model"]

        def answer(sample: Sample[Any]) -> Record:
            return tom.planner.answer(sample, bench, lambda: model)

        original = tom.planner.results.get(self.question_key) or answer(self.base_sample)
        details: dict[str, Any] = {"strategy": self.spec.name, "perturbation_kind": self.spec.kind,
                                   "original_correct": original.passed, "original_answer": answer_text(original)}
        facets = {**self.base_sample.facets, "strategy": self.spec.name}

        def done(verdict: Verdict, message: str = "", **more: Any) -> DerivedRecord:
            rec = DerivedRecord(benchmark=bench.name, derived_id=f"{self.base_sample.id}-{self.spec.name}", kind=KIND,
                                verdict=verdict, members=(self.base_sample.id,), facets=facets, message=message,
                                details={**details, **more}, suite=self.suite.sid, nodeid=self.nodeid)
            self.user_properties.append((RECORD_PROPERTY, rec.to_dict()))
            tom.records.add_local(rec)
            return rec

        if original.outcome is Outcome.ERROR:
            self.verdict = done(Verdict.ERROR, f"the original question hit a model error: {original.message}")
            pytest.fail(self.verdict.message, pytrace=False)
        if self.spec.kind == "counterfactual" and not original.passed:
            self.verdict = done(Verdict.SKIPPED, "the model answers the original wrongly; a counterfactual is judged "
                                                 "only where the original is right")
            pytest.skip(self.verdict.message)
        fp = str((tom.planner.describe_model() or {}).get("fingerprint", ""))
        key = hashlib.sha256(f"pytest-tom:{self.nodeid}:{fp}".encode()).digest()
        tried, broken, error = search(self.spec, self.base_sample, original, answer,
                                      examples=tom.options.robustness_examples, key=key,
                                      profile=tom.options.robustness_profile)
        if error is not None:
            self.verdict = done(Verdict.ERROR, f"model error while answering a perturbation: {error}", tried=tried)
            pytest.fail(self.verdict.message, pytrace=False)
        if broken is None:
            self.verdict = done(Verdict.PASSED, tried=tried)
            return
        message = failure_message(self.spec, self.base_sample, original, tried, broken)
        self.verdict = done(Verdict.FAILED, message, tried=tried, minimal=broken.perturbation.to_dict(),
                            perturbed_answer=answer_text(broken.record))

    def runtest(self) -> None:
        if self.verdict.verdict is Verdict.FAILED and not is_gate_run(tom_session(self.config)):
            raise RobustnessFailed(self.verdict.message)

    def repr_failure(self, excinfo: Any) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, RobustnessFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int, str]:
        suite = self.parent.name if self.parent else self.suite.benchmark.name
        return *place(self), f"{suite}: {self.spec.name} robustness of {self.base_sample.id}"


def register_marks(config: pytest.Config, specs: list[StrategySpec]) -> None:
    """`robust_<strategy>` marks, registered when a suite first uses the strategy (in time for its items)."""
    done: set[str] = config.stash.setdefault(_MARKS, set())
    for spec in specs:
        if spec.name not in done:
            done.add(spec.name)
            config.addinivalue_line("markers", f"robust_{spec.name}: pytest-tom robustness items of the {spec.name} "
                                               f"strategy ({spec.kind}: {spec.doc}).")


_MARKS = pytest.StashKey[set[str]]()

