"""The bounded listing's choice of what to show (pytest_tom.run.bounded), without a pytest run."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_tom.constants import RECORD_PROPERTY
from pytest_tom.run.bounded import hide, lines, restore


def _report(i: int, suite: str = "tombench") -> Any:
    return SimpleNamespace(nodeid=f"{suite}[{i}]", user_properties=[(RECORD_PROPERTY, {"suite": suite, "benchmark": suite})])


def _session() -> Any:
    def unknown(name: str) -> Any:
        raise KeyError(name)

    return SimpleNamespace(registry=SimpleNamespace(get=unknown), options=SimpleNamespace(detail=None, report=None))


def _reporter(failed: list[Any], error: list[Any], verbosity: int = 0) -> Any:
    config = SimpleNamespace(get_verbosity=lambda: verbosity)
    return SimpleNamespace(config=config, stats={"failed": failed, "error": error})


def test_a_groups_model_errors_are_shown_even_when_its_wrong_answers_fill_the_bound() -> None:
    failed, error = [_report(i) for i in range(10)], [_report(100 + i) for i in range(5)]
    reporter, tom = _reporter(failed, error), _session()
    state = hide(reporter, tom)
    assert state is not None
    assert len(reporter.stats["failed"]) == 3 and len(reporter.stats["error"]) == 3  # errors have their own quota
    assert lines(state, tom)[:2] == ["tombench: 7 more failed (3 shown above)", "tombench: 2 more errors (3 shown above)"]
    restore(reporter, state)
    assert reporter.stats["failed"] == failed and reporter.stats["error"] == error


def test_reports_of_other_plugins_are_never_hidden() -> None:
    plain = [SimpleNamespace(nodeid=f"test_x.py::t{i}", user_properties=[]) for i in range(10)]
    reporter = _reporter(list(plain), [])
    assert hide(reporter, _session()) is None and reporter.stats["failed"] == plain


def test_verbose_lifts_the_bound_and_quiet_lowers_it() -> None:
    failed = [_report(i) for i in range(5)]
    assert hide(_reporter(list(failed), [], verbosity=1), _session()) is None
    quiet = _reporter(list(failed), [], verbosity=-1)
    assert hide(quiet, _session()) is not None and len(quiet.stats["failed"]) == 1
