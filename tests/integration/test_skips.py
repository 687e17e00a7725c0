"""Skips on pytest-tom's items: a skip mark from a test module or a conftest skips them like any test, and pytest-tom's
own skips (a tolerated model error, a partial group, a question without a gold) are reported at the suite, never at
the pytest-tom line that raised them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def module(fixtures_dir: Path, head: str = "") -> str:
    """A test module whose suites sit on lines 5 and 6 (1-based)."""
    return (f"import pytest\nimport pytest_tom\n{head}\n\n"
            f"quick = pytest_tom.suite('tombench', languages='en', tries=1, data_dir={str(fixtures_dir)!r}, partial=True)\n"
            f"zh: object = pytest_tom.suite('tombench', languages='zh', tries=1, data_dir={str(fixtures_dir)!r}, partial=True)\n")


def test_a_skipif_mark_on_a_suite_module_skips_its_items(pytester: pytest.Pytester, fixtures_dir: Path) -> None:
    pytester.makepyfile(test_tom=module(fixtures_dir, "pytestmark = pytest.mark.skipif(True, reason='no GPU here')"))
    result = pytester.runpytest(*QUIET, "--tom-model=random", "-rs")
    assert "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(skipped=26 + 26)  # each language: 21 questions and 5 coherence assertions
    result.stdout.fnmatch_lines(["SKIPPED [[]26[]] test_tom.py:5: no GPU here", "SKIPPED [[]26[]] test_tom.py:6: no GPU here"])
    assert result.ret == pytest.ExitCode.OK
    # under xdist the controller reports the coherence assertions: skipped too, at their suite, as their questions did not run
    spread = pytester.runpytest(*QUIET, "--tom-model=random", "-rs", "-n", "2")
    spread.assert_outcomes(skipped=52)
    spread.stdout.fnmatch_lines(["SKIPPED [[]21[]] test_tom.py:5: no GPU here", "SKIPPED [[]1[]] test_tom.py:6: coherence group *"])


def test_a_conftest_skip_mark_skips_benchmark_items(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    pytester.makeconftest("""
        import pytest

        def pytest_collection_modifyitems(items):
            for item in items:
                if "coherence" in item.keywords:
                    item.add_marker(pytest.mark.skip(reason="coherence is checked nightly"))
        """)
    result = pytester.runpytest(*tom_args, *QUIET, "--tom-model=random", "-m", "en", "-rs")
    assert "INTERNALERROR" not in result.stdout.str()
    assert result.parseoutcomes()["skipped"] == 5
    result.stdout.fnmatch_lines(["SKIPPED [[]5[]] tombench: coherence is checked nightly"])


def test_junit_places_each_item_at_its_suite(pytester: pytest.Pytester, fixtures_dir: Path) -> None:
    pytester.makepyfile(test_tom=module(fixtures_dir))
    pytester.runpytest(*QUIET, "--tom-model=random", "--junitxml=j.xml", "-o", "junit_family=xunit1")
    cases = ET.parse(pytester.path / "j.xml").getroot().iter("testcase")
    lines = {(c.get("file"), c.get("line"), c.get("name", "").split("[")[0]) for c in cases}
    assert lines == {("test_tom.py", "4", "tombench"), ("test_tom.py", "5", "tombench"),  # 0-based, as pytest writes them
                     ("test_tom.py", "4", "tombench_coherence"), ("test_tom.py", "5", "tombench_coherence")}


def test_pytest_toms_own_skips_are_reported_at_the_suite(pytester: pytest.Pytester, fixtures_dir: Path) -> None:
    pytester.makepyfile(test_tom=module(fixtures_dir))
    pytester.makeconftest("""
        import pytest

        @pytest.fixture(scope="session")
        def tom_model():
            def down(batch, settings):
                raise TimeoutError("upstream API timed out")
            return down
        """)
    tolerated = pytester.runpytest(*QUIET, "-m", "en and frt", "--tom-max-errors=10", "-rs")
    tolerated.assert_outcomes(skipped=5)
    tolerated.stdout.fnmatch_lines(["SKIPPED [[]4[]] test_tom.py:5: tolerated by --tom-max-errors=10: model error: TimeoutError*",
                                    "SKIPPED [[]1[]] test_tom.py:5: tolerated by --tom-max-errors=10: *story001: 4 member(s)*"])
    assert "collect.py" not in tolerated.stdout.str()
    # one question of a story selected: its coherence assertion is skipped, never judged on a partial group
    partial = pytester.runpytest(*QUIET, "--tom-model=random", "-k", "quick and (0001 or coherence)", "-rs")
    partial.stdout.fnmatch_lines(["SKIPPED [[]*[]] test_tom.py:5: coherence group * only 1 of * questions are selected*"])
    assert "collect.py" not in partial.stdout.str()
