"""Robustness items: hypothesis searches one question's perturbations for a change that breaks the model.

`<bench>_robustness[<question>-<strategy>]` items exist only when strategies are asked for
(`--tom-robustness`, ini `tom_robustness`, or a suite's `robustness=[...]`), carry the mark
`tom_robustness` and the question's own marks, and run hypothesis inside the item: no test
function takes fixtures, so the function-scoped-fixture health check never applies, and every
model call goes through the engine and its response cache (a rerun replays from the cache).
Hypothesis' database key is the item's (suite, question, strategy, model), so a failing example
is replayed first on the next run; the `tom-ci` profile (derandomized, no database, no deadline)
makes CI runs reproducible. `--tom-robustness-examples` bounds the examples per item, hence the
model calls.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.record import DerivedRecord, Outcome, Record, Verdict
from pytest_tom.robustness import KIND, MARK, register_profiles
from pytest_tom.run.gates import is_gate_run
from pytest_tom.run.session import tom_session

if TYPE_CHECKING:
    from pytest_tom.run.suites import LoadedSuite
    from pytest_tom.sample import Sample
    from pytest_tom.strategies.base import Perturbation, StrategySpec


class Broken(AssertionError):
    """A perturbation broke the property; carries what the failure shows."""

    def __init__(self, perturbation: Perturbation, record: Record, message: str) -> None:
        super().__init__(message)
        self.perturbation = perturbation
        self.record = record


def _answer_text(r: Record) -> str:
    if r.outcome is Outcome.UNPARSEABLE:
        return "unparseable"
    return f"{r.parsed!r} ({'right' if r.passed else 'wrong'}, gold {r.gold!r})"


@contextlib.contextmanager
def _storage_for(profile: Any) -> Iterator[None]:
    """A profile without an example database (`tom-ci`) leaves nothing on disk.

    `database=None` alone is not enough: hypothesis also caches, under its home
    folder (`.hypothesis/` in the working directory), the constants it read from
    local modules (`constants/`) and Unicode tables (`unicode_data/`). For such a
    profile the home folder is a temporary one for the search, removed after it,
    and the previous one is restored, so a user's own hypothesis tests keep theirs.
    """
    if profile.database is not None:
        yield
        return
    from hypothesis.configuration import set_hypothesis_home_dir, storage_directory

    previous = storage_directory(intent_to_write=False).home_directory
    with tempfile.TemporaryDirectory(prefix="pytest-tom-hypothesis-") as scratch:
        set_hypothesis_home_dir(scratch)
        try:
            yield
        finally:
            set_hypothesis_home_dir(previous)


def search(spec: StrategySpec, sample: Sample[Any], original: Record, answer: Callable[[Sample[Any]], Record],
           *, examples: int, key: bytes, profile: str = "tom-dev") -> tuple[int, Broken | None, str | None]:
    """Run the property over hypothesis' draws: (examples tried, the minimal breaking one or None, a model error)."""
    from hypothesis import given, reject, settings

    register_profiles()
    tried: set[str] = set()
    error: list[str] = []

    def check(p: Perturbation) -> None:
        if error:
            reject()  # after a model error, no more calls: the item reports the error
        rec = answer(p.sample)
        if rec.outcome is Outcome.ERROR:
            error.append(rec.message)
            reject()
        tried.add(p.change)  # shrinking replays draws: count each distinct perturbation once
        if spec.kind == "invariance":
            ok = rec.passed == original.passed
            want = "the same correctness as on the original"
        else:
            ok = rec.passed
            want = f"the new gold {p.sample.gold!r}"
        if not ok:
            raise Broken(p, rec, f"expected {want}; got {_answer_text(rec)}")

    test = given(spec.strategy(sample))(check)
    test = settings(settings.get_profile(profile), max_examples=examples)(test)
    test._hypothesis_internal_database_key = key  # type: ignore[attr-defined]
    try:
        with _storage_for(settings.get_profile(profile)):
            test()
    except Broken as exc:  # hypothesis re-raises the minimal failing example's exception after shrinking
        return len(tried), exc, None
    except Exception as exc:
        if error:
            return len(tried), None, error[0]
        if type(exc).__name__ in ("Unsatisfiable", "NoSuchExample"):
            return len(tried), None, None
        raise
    return len(tried), None, error[0] if error else None


class RobustnessFailed(AssertionError):
    """A question whose answer a perturbation broke; the message shows the original and the minimal change."""


class RobustnessItem(pytest.Function):
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
                                   "original_correct": original.passed, "original_answer": _answer_text(original)}
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
        p = broken.perturbation
        message = "\n".join([
            f"{self.spec.kind} {self.spec.name} broken on {self.base_sample.id} after {tried} perturbation(s); minimal "
            f"example ({p.size} edit(s)): {p.change}",
            f"  original:  {_answer_text(original)}",
            f"  perturbed: {_answer_text(broken.record)} ({broken})",
            f"  original question:  {self.base_sample.question}",
            f"  perturbed question: {p.sample.question}",
            *([f"  original options:  {_options(self.base_sample)}", f"  perturbed options: {_options(p.sample)}"]
              if p.sample.choices != self.base_sample.choices else []),
            f"  original context:   {_clip(self.base_sample.context.render())}",
            f"  perturbed context:  {_clip(p.sample.context.render())}",
        ])
        self.verdict = done(Verdict.FAILED, message, tried=tried, minimal=p.to_dict(),
                            perturbed_answer=_answer_text(broken.record))

    def runtest(self) -> None:
        if self.verdict.verdict is Verdict.FAILED and not is_gate_run(tom_session(self.config)):
            raise RobustnessFailed(self.verdict.message)

    def repr_failure(self, excinfo: Any) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, RobustnessFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        suite = self.parent.name if self.parent else self.suite.benchmark.name
        return self.path, None, f"{suite}: {self.spec.name} robustness of {self.base_sample.id}"


def _options(sample: Sample[Any]) -> str:
    return " ".join(f"({c.label}) {c.text}" for c in sample.choices) + f"; gold {sample.gold}"


def _clip(text: str, limit: int = 400) -> str:
    flat = text.replace("\n", " | ")
    return flat if len(flat) <= limit else flat[:limit] + " [...]"


def register_marks(config: pytest.Config, specs: list[StrategySpec]) -> None:
    """`robust_<strategy>` marks, registered when a suite first uses the strategy (in time for its items)."""
    done: set[str] = config.stash.setdefault(_MARKS, set())
    for spec in specs:
        if spec.name not in done:
            done.add(spec.name)
            config.addinivalue_line("markers", f"robust_{spec.name}: pytest-tom robustness items of the {spec.name} "
                                               f"strategy ({spec.kind}: {spec.doc}).")


_MARKS = pytest.StashKey[set[str]]()


def robustness_items(make: Callable[..., pytest.Item], loaded: LoadedSuite, sample: Sample[Any],
                     specs: list[StrategySpec]) -> list[pytest.Item]:
    bench = loaded.benchmark.name
    return [make(RobustnessItem, f"{bench}_robustness[{sample.id}-{spec.name}]", base=sample, suite=loaded, spec=spec)
            for spec in specs if spec.applies(sample)]


__all__ = ["RobustnessItem", "register_profiles", "robustness_items", "search"]
