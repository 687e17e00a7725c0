"""The noise-floor measurement: flips between two runs' reports, clustered by story."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tom.errors import TomError
from pytest_tom.gates.flips import main, measure
from pytest_tom.record import Outcome, Record


def _records(outcomes: list[Outcome]) -> list[Record]:
    return [Record("tombench", f"q{i}", o, {"story": f"s{i // 4}"}, suite="tombench") for i, o in enumerate(outcomes)]


def test_the_flip_rate_counts_changed_correctness_and_ignores_errors() -> None:
    first = _records([Outcome.CORRECT] * 8 + [Outcome.ERROR])
    second = _records([Outcome.CORRECT] * 6 + [Outcome.INCORRECT, Outcome.UNPARSEABLE, Outcome.CORRECT])
    est, n = measure(first, second)
    assert n == 8 and est.point == pytest.approx(2 / 8) and est.clusters == 2
    assert est.low <= 0.25 <= est.high


def test_a_question_without_a_gold_is_no_flip_in_either_run() -> None:
    first = _records([Outcome.CORRECT] * 7 + [Outcome.UNSCORED])
    second = _records([Outcome.CORRECT] * 6 + [Outcome.INCORRECT, Outcome.UNSCORED])
    est, n = measure(first, second)
    assert n == 7 and est.point == pytest.approx(1 / 7)


def test_runs_without_a_shared_question_are_an_error() -> None:
    with pytest.raises(TomError, match="share no answered question"):
        measure(_records([Outcome.CORRECT]), [])


def test_the_command_prints_the_rate_and_the_option_to_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for name, outcomes in (("a", [Outcome.CORRECT] * 8), ("b", [Outcome.CORRECT] * 7 + [Outcome.INCORRECT])):
        report = {"schema_version": "1.1", "items": [r.to_dict() for r in _records(outcomes)], "groups": []}
        (tmp_path / f"{name}.json").write_text(json.dumps(report))
        paths.append(str(tmp_path / f"{name}.json"))
    assert main(paths) == 0
    out = capsys.readouterr().out
    assert out.startswith("flip rate 12.50% (95% interval") and "use: --tom-noise-flip-rate=" in out
