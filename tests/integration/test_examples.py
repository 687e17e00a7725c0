"""The examples/ folder works as a model repo would use it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def example_repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("TOM_DATA_DIR", raising=False)
    for name in ("test_tom.py", "conftest.py", "my_model.py"):
        shutil.copy(REPO / "examples" / name, pytester.path / name)
    # The example finds the fixtures relative to itself; point it at the repo's copy.
    text = (pytester.path / "test_tom.py").read_text().replace(
        'Path(__file__).resolve().parent.parent / "fixtures"', repr(str(REPO / "fixtures"))
    )
    (pytester.path / "test_tom.py").write_text(text)
    pytester.syspathinsert()
    return pytester


def test_the_example_runs_the_repos_own_model(example_repo: pytest.Pytester) -> None:
    result = example_repo.runpytest("-p", "no:cacheprovider", "--tb=no", "-q")
    outcomes = result.parseoutcomes()
    # 21 English questions + 5 stories, then the sample: 10 questions + the 1-question PST story it completes,
    # and the main suite's 3 gates. A gate run: wrong answers and broken stories are their own statuses.
    assert outcomes["passed"] + outcomes.get("wrong", 0) + outcomes.get("inconsistent", 0) == 21 + 5 + 10 + 1 + 3
    assert "failed" not in outcomes and result.ret == 0
    result.stdout.fnmatch_lines([
        "pytest-tom: test_tom.py::tombench_quick: sample=10 keeps 10 of 21 questions (stratified by language, ability; "
        "seed 1); 11 questions deselected, and 4 aggregate assertions whose groups the sample splits",
        "model: python:my_model:overlap_baseline*", "*test_tom.py::tombench_quick (tombench, 10 questions)*",
        "gates: all 3 passed",
    ])


def test_the_example_ignores_tom_data_dir(example_repo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's main command must run the bundled fixtures wherever it starts, even with real data configured."""
    monkeypatch.setenv("TOM_DATA_DIR", str(example_repo.path / "no-such-data"))
    result = example_repo.runpytest("-p", "no:cacheprovider", "--tb=no", "-q")
    result.stdout.fnmatch_lines(["*15 deselected*"])
    assert result.ret == 0 and result.parseoutcomes()["deselected"] == 15


def test_the_command_line_model_wins_over_the_conftest_model(example_repo: pytest.Pytester) -> None:
    result = example_repo.runpytest("-p", "no:cacheprovider", "--tb=no", "-q", "--tom-model=random:4", "-m", "en and belief")
    result.stdout.fnmatch_lines(["model: random:4*"])
