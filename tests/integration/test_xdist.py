"""pytest-xdist: a partial selection skips consistency tests like one process (the run modes agree: test_run_modes.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("xdist")


@pytest.mark.slow
def test_a_partial_selection_under_xdist_skips_consistency_tests_like_one_process(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    args = [*tom_args, "--tom-model=random:1", "--tom-no-cache", "-m", "en and fbt and not second_order_beliefs", "-rs", "--tb=no"]
    single = pytester.runpytest_subprocess(*args)
    multi = pytester.runpytest_subprocess(*args, "-n", "2")
    # xdist's controller does not count the workers' deselections
    assert {k: v for k, v in single.parseoutcomes().items() if k != "deselected"} == multi.parseoutcomes()
    assert multi.parseoutcomes()["skipped"] == 2
    multi.stdout.fnmatch_lines(["*only 4 of 6 questions are selected*"])
