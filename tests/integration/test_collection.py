"""Collection: no-file and module suites, node ids, marks, options, sampling, inertness."""

from __future__ import annotations

from pathlib import Path

import pytest


def _ids(result: pytest.RunResult) -> list[str]:
    return [line.strip() for line in result.outlines if "tombench" in line and "[" in line and " " not in line.strip()]


def test_the_plugin_is_inert_unless_asked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ordinary():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*pytest-tom summary*")


def test_cli_mode_collects_every_question_and_story_with_stable_ids(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--collect-only", "-q")
    ids = _ids(result)
    assert len(ids) == 42 + 10
    assert "tombench::tombench[en-false_belief_task-0001]" in ids
    assert "tombench::tombench[zh-hidden_emotions-0002]" in ids
    assert "tombench::tombench_coherence[en-false_belief_task-story002]" in ids
    again = pytester.runpytest(*tom_args, "--collect-only", "-q")
    assert _ids(again) == ids


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("tombench and belief and en", 12),
        ("tombench and zh and two_choice", 3),
        ("faux_pas and en", 4),
        ("second_order_beliefs", 8),
        ("extra", 4),
        ("coherence and zh", 5),
        ("sst and not coherence", 4),
    ],
)
def test_marks_select_exactly_the_matching_items(pytester: pytest.Pytester, tom_args: list[str], expr: str, expected: int) -> None:
    result = pytester.runpytest(*tom_args, "--collect-only", "-q", "-m", expr, "--strict-markers")
    assert result.ret == 0
    assert len(_ids(result)) == expected


def test_belief_selection_is_exactly_the_belief_questions(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    ids = _ids(pytester.runpytest(*tom_args, "--collect-only", "-q", "-m", "tombench and belief and en"))
    assert all(i.startswith("tombench::tombench[en-false_belief_task-") for i in ids)


def test_markers_and_help_explain_themselves(pytester: pytest.Pytester) -> None:
    markers = pytester.runpytest("--markers", "--tom-benchmark=tombench")  # facet marks are registered where pytest-tom runs
    markers.stdout.fnmatch_lines(["@pytest.mark.tombench: ToMBench items*", "@pytest.mark.location_false_beliefs: *", "@pytest.mark.coherence: *"])
    help_ = pytester.runpytest("--help")
    help_.stdout.fnmatch_lines(["*--tom-model=URI*", "*--tom-sample=N*", "*--tom-set=BENCH.NAME=VALUE*", "*tom_report*"])


def test_module_suites_carry_their_own_settings(pytester: pytest.Pytester, fixtures_dir: Path) -> None:
    pytester.makepyfile(
        test_tom=f"""
        import pytest_tom
        quick = pytest_tom.suite("tombench", languages="en", tries=1, data_dir={str(fixtures_dir)!r}, partial=True)
        both = pytest_tom.suite("tombench", prompt="cot", data_dir={str(fixtures_dir)!r}, partial=True)
        """
    )
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    lines = [line for line in result.outlines if line.startswith("test_tom.py::")]
    assert "test_tom.py::quick::tombench[en-false_belief_task-0001]" in lines
    assert sum(line.startswith("test_tom.py::quick::tombench[") for line in lines) == 21
    assert sum(line.startswith("test_tom.py::both::tombench[") for line in lines) == 42


def test_ini_options_work_like_flags(pytester: pytest.Pytester, fixtures_dir: Path) -> None:
    pytester.makeini(f"[pytest]\ntom_benchmark = tombench\ntom_data_dir = {fixtures_dir}\ntom_set =\n    tombench.languages=zh\n"
                     "    tombench.partial=true\n")
    assert len(_ids(pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider"))) == 21 + 5


def test_sample_is_stratified_deterministic_and_drawn_after_marks(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    first = _ids(pytester.runpytest(*tom_args, "--collect-only", "-q", "--tom-sample=10", "--tom-seed=3"))
    second = _ids(pytester.runpytest(*tom_args, "--collect-only", "-q", "--tom-sample=10", "--tom-seed=3"))
    assert first == second and len([i for i in first if "coherence" not in i]) == 10
    other = _ids(pytester.runpytest(*tom_args, "--collect-only", "-q", "--tom-sample=10", "--tom-seed=4"))
    assert other != first
    en = _ids(pytester.runpytest(*tom_args, "--collect-only", "-q", "--tom-sample=5", "-m", "en and not coherence"))
    assert len(en) == 5 and all("[en-" in i for i in en)


def test_cli_items_are_addressable_by_node_id(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    """Regression test: `pytest "tombench[...]"` failed with "path cannot contain [] parametrization"."""
    ids = ["tombench[en-false_belief_task-0001]", "tombench::tombench[zh-hidden_emotions-0002]",
           "tombench_coherence[en-false_belief_task-story002]"]
    result = pytester.runpytest(*tom_args, "--collect-only", "-q", *ids)
    assert _ids(result) == ["tombench::tombench[en-false_belief_task-0001]", "tombench::tombench_coherence[en-false_belief_task-story002]",
                            "tombench::tombench[zh-hidden_emotions-0002]"]
    bare = pytester.runpytest(f"--tom-data-dir={tom_args[1].split('=', 1)[1]}", "--tom-set=tombench.partial=true", "-p",
                              "no:cacheprovider", "--collect-only", "-q", "tombench")
    assert len(_ids(bare)) == 42 + 10


def test_unknown_benchmark_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--tom-benchmark=tombnech")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown benchmark 'tombnech'; available: *tombench*"])


def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-sample=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = pytester.runpytest(*tom_args, "--tom-set=tombench.prompt=fancy", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # checked before any data is read
    result.stderr.fnmatch_lines(["*--tom-set: tombench setting prompt='fancy': 'fancy' is not one of vanilla, cot*"])


def test_missing_data_is_a_usage_error_that_says_what_to_do(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={tmp_path}", "--tom-model=random")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ToMBench data not found*--tom-download*"])


def test_malformed_data_names_file_record_and_field(pytester: pytest.Pytester, fixtures_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "tombench" / "data"
    data.mkdir(parents=True)
    src = (fixtures_dir / "tombench" / "data" / "Strange Story Task.jsonl").read_text(encoding="utf-8")
    (data / "Strange Story Task.jsonl").write_text(src.replace('"答案\\nANSWER": "C"', '"答案\\nANSWER": "Q"'), encoding="utf-8")
    result = pytester.runpytest("--tom-benchmark=tombench", f"--tom-data-dir={tmp_path}", "--tom-model=random")
    result.stderr.fnmatch_lines(["*Strange Story Task.jsonl, record line 2, field '答案\\nANSWER': gold answer 'Q' is not a letter A-D*"])
