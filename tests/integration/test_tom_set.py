"""`--tom-set` and ini `tom_set` in a run; the deprecated `--tom-<bench>-<name>` flags and ini keys (issue 19).

Observed via the languages of the ToMBench questions collected on the bundled
fixtures, so `languages` shows which source won.
"""

from __future__ import annotations

from pathlib import Path

import pytest

BASE = ["--tom-benchmark=tombench", "--collect-only", "-q", "-p", "no:cacheprovider"]


@pytest.fixture
def ini(pytester: pytest.Pytester, fixtures_dir: Path) -> pytest.Pytester:
    pytester.makeini(f"[pytest]\ntom_data_dir = {fixtures_dir}\ntom_set =\n    tombench.partial=true\n    tombench.languages=zh\n")
    return pytester


def _languages(result: pytest.RunResult) -> str:
    """The languages collected, e.g. "en,zh"."""
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    found = {line[len("tombench::tombench["):][:2] for line in result.outlines if line.startswith("tombench::tombench[")}
    return ",".join(sorted(found))


def test_the_command_line_wins_over_the_ini_file_and_a_suite_keyword_over_both(ini: pytest.Pytester,
                                                                                 fixtures_dir: Path) -> None:
    assert _languages(ini.runpytest(*BASE)) == "zh"
    assert _languages(ini.runpytest(*BASE, "--tom-set", "tombench.languages=en")) == "en"
    assert _languages(ini.runpytest(*BASE, "--tom-set=tombench.languages=zh", "--tom-set=tombench.languages=en,zh")) == "en,zh"
    ini.makepyfile(test_tom=f"""
        import pytest_tom
        chinese = pytest_tom.suite("tombench", languages="zh", data_dir={str(fixtures_dir)!r})
        """)
    result = ini.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", "--tom-set=tombench.languages=en")
    assert sum(line.startswith("test_tom.py::chinese::tombench[zh-") for line in result.outlines) == 21
    assert not any("tombench[en-" in line for line in result.outlines)


def test_a_misspelt_name_is_a_usage_error_with_the_nearest_one(ini: pytest.Pytester) -> None:
    result = ini.runpytest(*BASE, "--tom-set=tombench.langauges=en")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: --tom-set tombench.langauges: tombench has no setting 'langauges' "
                                 "(did you mean 'languages'?); its settings: *"])
    ini.makeini("[pytest]\ntom_set = fantm.prompt=cot\n")
    result = ini.runpytest(*BASE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: ini tom_set fantm.prompt: no benchmark 'fantm' (did you mean 'fantom'?)*"])


def test_the_deprecated_flag_still_applies_and_warns_once(ini: pytest.Pytester) -> None:
    # -W error::DeprecationWarning: the notice is no DeprecationWarning, so strict setups keep running on the old flag.
    result = ini.runpytest(*BASE, "--tom-tombench-languages=en", "-W", "error::DeprecationWarning")
    assert _languages(result) == "en"
    text = result.stdout.str()
    assert text.count("--tom-tombench-languages is deprecated") == 1
    result.stdout.fnmatch_lines(["*TomDeprecationWarning: --tom-tombench-languages is deprecated and will be removed in "
                                 "the next release; use --tom-set tombench.languages=en"])
    # The new spelling wins where both name a setting.
    assert _languages(ini.runpytest(*BASE, "--tom-set=tombench.languages=zh", "--tom-tombench-languages=en")) == "zh"


def test_the_deprecated_ini_key_still_applies_and_warns_once(pytester: pytest.Pytester, fixtures_dir: Path) -> None:
    pytester.makeini(f"[pytest]\ntom_data_dir = {fixtures_dir}\ntom_tombench_partial = true\ntom_tombench_languages = zh\n")
    result = pytester.runpytest(*BASE, "--strict-config")  # the key is registered: no "Unknown config option"
    assert _languages(result) == "zh"
    text = result.stdout.str()
    assert text.count("ini key tom_tombench_languages is deprecated") == 1
    assert "Unknown config option" not in text + result.stderr.str()
    result.stdout.fnmatch_lines(["*TomDeprecationWarning: ini key tom_tombench_languages is deprecated and will be "
                                 "removed in the next release; write it as a line of tom_set: tombench.languages=zh"])
    assert _languages(pytester.runpytest(*BASE, "--tom-set=tombench.languages=en")) == "en"  # the command line still wins


def test_no_notice_without_a_deprecated_spelling(ini: pytest.Pytester) -> None:
    result = ini.runpytest(*BASE, "--tom-set=tombench.languages=en")
    assert _languages(result) == "en"
    assert "TomDeprecationWarning" not in result.stdout.str()
