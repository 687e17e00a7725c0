"""pytest's cache workflows on pytest-tom's items: `--lf` reruns the questions that failed, beside the repo's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest

PLAIN = "import os\n\ndef test_plain():\n    assert os.environ.get('FIXED')\n"


def test_last_failed_reruns_the_failed_questions_beside_a_fixed_test(pytester: pytest.Pytester, fixtures_dir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """On pytest 9.2 a bracketed item name never matched its cached failure (pytest-dev/pytest#15045): once the plain
    test was fixed, `--lf` ran it alone and passed while 21 questions still failed.
    """
    pytester.makepyfile(
        test_plain=PLAIN,
        test_tom=f"import pytest_tom\n\ntb = pytest_tom.suite('tombench', languages='en', tries=1, "
                 f"data_dir={str(fixtures_dir)!r}, partial=True)\n")
    args = ("-p", "no:hypothesispytest", "--tom-model=random")
    first = pytester.runpytest(*args)
    assert first.parseoutcomes() == {"failed": 22, "passed": 5}  # the plain test, 16 questions, 5 coherence groups
    monkeypatch.setenv("FIXED", "1")
    again = pytester.runpytest(*args, "--lf")
    again.stdout.fnmatch_lines(["run-last-failure: rerun previous 22 failures*"])
    outcomes = again.parseoutcomes()
    # the 16 questions and the 2 groups whose questions all failed; 3 groups lost a passing question: partial, skipped
    assert (outcomes["passed"], outcomes["failed"], outcomes["skipped"], outcomes["deselected"]) == (1, 18, 3, 5)
    assert again.ret == pytest.ExitCode.TESTS_FAILED
