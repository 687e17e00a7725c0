"""pytest-timeout's per-test limit on pytest-tom's items: the item that answers a planning unit gets the limit once per
question, and a model that hangs is timed out once, its unit's questions then errors, never asked again by each item.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_timeout", reason="pytest-timeout is in the dev extra")

MODELS = """
import time
from pathlib import Path

def slow(batch, settings):  # 6 batches of 4: about 1.8 s for the unit, far above a 1 s limit per test
    time.sleep(0.3)
    return ["[[A]]" for _ in batch]
slow.tom_batch_size = 4

def hangs(batch, settings):
    calls = Path("calls.txt")
    calls.write_text(str(int(calls.read_text() or 0) + 1) if calls.exists() else "1")
    time.sleep(600)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, fixtures_dir: Path) -> pytest.Pytester:
    pytester.makepyfile(models=MODELS, test_tom=f"import pytest_tom\n\ntb = pytest_tom.suite('tombench', languages='en', "
                                                f"tries=1, data_dir={str(fixtures_dir)!r}, partial=True)\n")
    pytester.syspathinsert()
    return pytester


def test_a_unit_slower_than_the_per_test_limit_is_answered(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "no:cacheprovider", "--tom-no-cache", "--tom-model=python:models:slow", "--timeout=1")
    outcomes = result.parseoutcomes()
    assert "errors" not in outcomes and "error" not in outcomes
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 26  # 21 questions, 5 coherence assertions
    assert "Timeout" not in result.stdout.str()


def test_a_hung_model_is_timed_out_once_and_its_questions_are_errors(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "no:cacheprovider", "--tom-no-cache", "--tom-model=python:models:hangs", "--timeout=0.1",
                             "--timeout-method=signal")
    result.assert_outcomes(errors=26)
    result.stdout.fnmatch_lines(["*Failed: Timeout (>2.1s) from pytest-timeout*",  # 21 questions x 0.1 s
                                 "*interrupted while answering this question: Failed: Timeout*"])
    assert (suite.path / "calls.txt").read_text() == "1"  # asked once, not once per item
