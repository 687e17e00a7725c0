"""A plain run prints a bounded amount: the first failures of each group, one line for the rest (issue 19)."""

from __future__ import annotations

import pytest

UNREADABLE = """
import pytest

@pytest.fixture(scope="session")
def tom_model():
    return lambda batch, settings: ["I cannot tell."] * len(batch)
"""
"""A model whose every answer is unreadable: every selected question fails."""

EN = ["-m", "en and not coherence", "--tom-set=tombench.tries=1", "--tom-progress=off", "--tom-no-cache"]
"""The 21 English questions of the fixtures; four abilities have four or more of them."""

MORE = "*pytest-tom: 4 more failures not shown (first 3 per group shown)*"


@pytest.fixture
def failing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(UNREADABLE)


def _headers(result: pytest.RunResult) -> list[str]:
    """The failure headers (`____ tombench: <id> ____`) of the FAILURES section."""
    return [line.strip("_ ") for line in result.outlines if line.startswith("___") and "tombench: " in line]


def _short(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("FAILED ")]


def test_the_first_three_failures_per_group_are_shown_then_one_line_per_group(
    pytester: pytest.Pytester, tom_args: list[str], failing: None
) -> None:
    result = pytester.runpytest(*tom_args, *EN)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=21)  # every item still fails: only the listing is bounded
    headers = _headers(result)
    assert len(headers) == 17 and len(_short(result)) == 17
    assert sum("false_belief_task" in h for h in headers) == 9  # three each of three false-belief abilities
    result.stdout.fnmatch_lines([
        MORE,
        "tombench en / Location false beliefs: 1 more failed (3 shown above)",
        "tombench en / Faux pas: 1 more failed (3 shown above)",
        "to see all 21 failures here: -v (or --tom-detail=full); --tom-report=PATH writes every answer to a JSON report",
        "*pytest-tom summary*",
        "*21 failed*",
    ])


@pytest.mark.parametrize("how", [["-v"], ["--tom-detail=full"]], ids=["-v", "detail-full"])
def test_v_or_full_detail_shows_every_failure(
    pytester: pytest.Pytester, tom_args: list[str], failing: None, how: list[str]
) -> None:
    result = pytester.runpytest(*tom_args, *EN, *how)
    result.assert_outcomes(failed=21)
    assert len(_headers(result)) == 21 and len(_short(result)) == 21
    assert "not shown" not in result.stdout.str()


def test_q_shows_one_per_group_and_the_report_is_named(pytester: pytest.Pytester, tom_args: list[str], failing: None) -> None:
    result = pytester.runpytest(*tom_args, *EN, "-q", "--tom-report=r.json")
    result.assert_outcomes(failed=21)
    assert len(_short(result)) == 7  # seven abilities, one each
    result.stdout.fnmatch_lines([
        "*pytest-tom: 14 more failures not shown (first 1 per group shown)*",
        "tombench en / Location false beliefs: 3 more failed (1 shown above)",
        f"to see all 21 failures here: -v (or --tom-detail=full); every answer is in the --tom-report JSON "
        f"({pytester.path / 'r.json'})",
    ])


def test_tb_no_and_r_keep_their_meaning(pytester: pytest.Pytester, tom_args: list[str], failing: None) -> None:
    short_only = pytester.runpytest(*tom_args, *EN, "--tb=no")
    assert "FAILURES" not in short_only.stdout.str() and len(_short(short_only)) == 17
    short_only.stdout.fnmatch_lines([MORE])
    nothing = pytester.runpytest(*tom_args, *EN, "--tb=no", "-rN")
    nothing.assert_outcomes(failed=21)
    assert not _short(nothing) and "not shown" not in nothing.stdout.str()
    lines = pytester.runpytest(*tom_args, *EN, "--tb=line")
    assert sum("fixtures" in line or ".jsonl:" in line for line in lines.outlines) == 17


def test_under_xdist_the_controller_bounds_the_listing(pytester: pytest.Pytester, tom_args: list[str], failing: None) -> None:
    pytest.importorskip("xdist")
    result = pytester.runpytest(*tom_args, *EN, "-n", "2")
    result.assert_outcomes(failed=21)
    assert len(_short(result)) == 17
    result.stdout.fnmatch_lines([MORE])
