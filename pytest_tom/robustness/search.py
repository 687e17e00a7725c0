"""The search behind a robustness item, without pytest: hypothesis tries perturbations until one breaks the answer. The
caller's `answer` function asks the model (the run layer passes the engine's, so every call is cached).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pytest_tom.record import Outcome, Record
from pytest_tom.robustness.results import register_profiles

if TYPE_CHECKING:
    from pytest_tom.robustness.base import Perturbation, StrategySpec
    from pytest_tom.sample import Sample


class Broken(AssertionError):
    """A perturbation broke the property; carries what the failure shows."""

    def __init__(self, perturbation: Perturbation, record: Record, message: str) -> None:
        super().__init__(message)
        self.perturbation = perturbation
        self.record = record


def answer_text(r: Record) -> str:
    if r.outcome is Outcome.UNPARSEABLE:
        return "unparseable"
    return f"{r.parsed!r} ({'right' if r.passed else 'wrong'}, gold {r.gold!r})"


@contextlib.contextmanager
def _storage_for(profile: Any) -> Iterator[None]:
    """A profile without an example database (`tom-ci`) leaves nothing on disk. `database=None` alone is not enough:
    hypothesis also caches, under its home folder (`.hypothesis/` in the working directory), the constants it read from
    local modules (`constants/`) and Unicode tables (`unicode_data/`). For such a profile the home folder is a temporary
    one for the search, removed after it, and the previous one is restored, so a user's own hypothesis tests keep
    theirs.
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
        invariance = spec.kind == "invariance"
        ok = rec.passed == original.passed if invariance else rec.passed
        want = "the same correctness as on the original" if invariance else f"the new gold {p.sample.gold!r}"
        if not ok:
            raise Broken(p, rec, f"expected {want}; got {answer_text(rec)}")

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


def failure_message(spec: StrategySpec, base: Sample[Any], original: Record, tried: int, broken: Broken) -> str:
    """The original and the minimal breaking change, side by side (question, options, context)."""
    p = broken.perturbation
    return "\n".join([
        f"{spec.kind} {spec.name} broken on {base.id} after {tried} perturbation(s); minimal "
        f"example ({p.size} edit(s)): {p.change}",
        f"  original:  {answer_text(original)}",
        f"  perturbed: {answer_text(broken.record)} ({broken})",
        f"  original question:  {base.question}",
        f"  perturbed question: {p.sample.question}",
        *([f"  original options:  {_options(base)}", f"  perturbed options: {_options(p.sample)}"]
          if p.sample.choices != base.choices else []),
        f"  original context:   {_clip(base.context.render())}",
        f"  perturbed context:  {_clip(p.sample.context.render())}",
    ])


def _options(sample: Sample[Any]) -> str:
    return " ".join(f"({c.label}) {c.text}" for c in sample.choices) + f"; gold {sample.gold}"


def _clip(text: str, limit: int = 400) -> str:
    flat = text.replace("\n", " | ")
    return flat if len(flat) <= limit else flat[:limit] + " [...]"


