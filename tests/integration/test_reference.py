"""--tom-reference and ref: thresholds end to end, on the bundled ToMBench fixtures with the seeded `random` model: the
published row beside the run's value in the terminal summary, the JSON report and the Markdown; a gate against a
published row that passes and one that fails; a name or a row that does not exist refused before any model request.

`random` (seed 0) scores 27.1% on the fixtures' English task AVG; ChatGLM3-6B's published one is 40.3% (Table 2).
"""

from __future__ import annotations

import json

import pytest

SOURCE = "Chen et al. 2024 (ToMBench, ACL 2024), Table 2"


@pytest.fixture
def run(pytester: pytest.Pytester, tom_args: list[str]):
    def go(*args: str) -> pytest.RunResult:
        return pytester.runpytest(*tom_args, "--tom-model=random", "--tom-no-cache", *args)

    return go


def test_the_published_row_is_beside_the_run_value_in_terminal_report_and_markdown(run, pytester: pytest.Pytester) -> None:
    report, markdown = pytester.path / "report.json", pytester.path / "summary.md"
    result = run("--tom-reference=chatglm3-6b,GPT-4-1106", f"--tom-report={report}", f"--tom-markdown={markdown}")
    result.stdout.fnmatch_lines([
        f"  ChatGLM3-6B as published in {SOURCE} (this run vs published):",
        "    tombench en tasks (% of questions right): pst 0.0 vs 41.0 | fbt 33.3 vs 48.5 | sst 50.0 vs 37.8 | frt 25.0 vs 44.6",
        "    tombench en (paper aggregation): task AVG 27.1 vs 40.3*",
        # GPT-4 was asked once per question in the paper; this run asks five times: its rows are never shown
        "  no published GPT-4-1106 row for tombench with tries=5 (published: tries=1)",
    ])
    assert "GPT-4-1106 as published" not in result.stdout.str()
    suite = json.loads(report.read_text(encoding="utf-8"))["suites"][0]
    ref = suite["reference"]
    assert ref["models"] == ["chatglm3-6b", "GPT-4-1106"]
    assert ref["notes"] == ["no published GPT-4-1106 row for tombench with tries=5 (published: tries=1)"]
    avg = next(r for r in ref["rows"] if r["metric"] == "languages.en.task_avg")
    assert avg == {"model": "ChatGLM3-6B", "metric": "languages.en.task_avg", "value": suite["metrics"]["languages"]["en"]["task_avg"],
                   "published": 0.403, "source": SOURCE, "settings": {"aggregation": "paper", "prompt": "vanilla", "tries": "5"}}
    assert avg["value"] == pytest.approx(0.2708, abs=1e-4)
    assert {r["model"] for r in ref["rows"]} == {"ChatGLM3-6B"}
    text = markdown.read_text(encoding="utf-8")
    assert "### Published rows beside tombench" in text
    assert f"| ChatGLM3-6B | tombench en (paper aggregation): task AVG | 27.1 | 40.3 | {SOURCE} |" in text
    assert "- no published GPT-4-1106 row for tombench with tries=5 (published: tries=1)" in text


def test_without_the_option_nothing_changes(run, pytester: pytest.Pytester) -> None:
    report = pytester.path / "report.json"
    result = run(f"--tom-report={report}")
    assert "as published in" not in result.stdout.str()
    assert "reference" not in json.loads(report.read_text(encoding="utf-8"))["suites"][0]


def test_another_protocol_shows_no_row_and_says_so(run) -> None:
    result = run("--tom-reference=chatglm3-6b", "--tom-set=tombench.tries=1")
    result.stdout.fnmatch_lines(["  no published ChatGLM3-6B row for tombench with tries=1 (published: tries=5)"])
    assert "as published in" not in result.stdout.str()


def test_a_threshold_against_a_published_row_passes_and_another_fails(run, pytester: pytest.Pytester) -> None:
    report = pytester.path / "report.json"
    result = run("--tom-threshold=tombench.languages.en.task_avg>=ref:chatglm3-6b-50%",
                 "--tom-threshold=tombench.languages.en.task_avg>=ref:ChatGLM3-6B", f"--tom-report={report}")
    result.stdout.fnmatch_lines([
        "gates: 1 of 2 failed",
        "  PASS tombench.languages.en.task_avg:point>=ref:ChatGLM3-6B-50%: tombench.languages.en.task_avg = 27.1% meets the "
        f"threshold >= ChatGLM3-6B's published 40.3%, -50% of it: 20.2% ({SOURCE}; aggregation=paper, prompt=vanilla, tries=5)",
        "  FAIL tombench.languages.en.task_avg:point>=ref:ChatGLM3-6B: tombench.languages.en.task_avg = 27.1% misses the "
        f"threshold >= ChatGLM3-6B's published 40.3% ({SOURCE}; aggregation=paper, prompt=vanilla, tries=5)",
    ])
    assert result.ret == 1 and result.parseoutcomes()["failed"] == 1
    gates = json.loads(report.read_text(encoding="utf-8"))["gates"]
    assert [(g["passed"], g["details"]["reference"]["model"], g["details"]["reference"]["source"]) for g in gates] == [
        (True, "ChatGLM3-6B", SOURCE), (False, "ChatGLM3-6B", SOURCE)]


@pytest.mark.parametrize(("args", "message"), [
    (["--tom-reference=gpt-5"], "--tom-reference: no benchmark of this run has a published row for 'gpt-5' "
                                "(names are case-insensitive). Published models: tombench: ChatGLM3-6B, *"),
    (["--tom-threshold=tombench.accuracy>=ref:chatglm3-6b"], "*names no published chatglm3-6b row for 'tombench.accuracy'"
                                                             "*ChatGLM3-6B's rows for tombench name: tombench.languages.zh.task_avg*"),
    (["--tom-threshold=tombench.languages.en.task_avg>=ref:gpt-4-1106"],
     "*no published GPT-4-1106 row for tombench with tries=5 (published: tries=1)"),
])
def test_a_missing_name_or_row_is_a_usage_error_before_any_request(run, args: list[str], message: str) -> None:
    result = run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: {message}"])
    assert "pytest-tom summary" not in result.stdout.str()  # nothing was asked


def test_the_ini_key_works_too(run, pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntom_reference = ChatGLM3-6B\n")
    run().stdout.fnmatch_lines([f"  ChatGLM3-6B as published in {SOURCE} (this run vs published):"])


def test_a_suite_can_gate_on_a_published_row_of_its_own(pytester: pytest.Pytester, fixtures_dir) -> None:
    pytester.makepyfile(test_quick="""
import pytest_tom
quick = pytest_tom.suite("tombench", partial=True, gates=["languages.en.task_avg>=ref:chatglm3-6b-50%"])
""")
    result = pytester.runpytest(f"--tom-data-dir={fixtures_dir}", "--tom-model=random", "--tom-no-cache", "-p",
                                "no:cacheprovider")
    result.stdout.fnmatch_lines(["  PASS quick.languages.en.task_avg:point>=ref:ChatGLM3-6B-50%: *"])
    assert result.ret == 0
    pytester.makepyfile(test_quick="""
import pytest_tom
quick = pytest_tom.suite("tombench", partial=True, gates=["accuracy>=ref:chatglm3-6b"])
""")
    result = pytester.runpytest(f"--tom-data-dir={fixtures_dir}", "--tom-model=random", "--tom-no-cache", "-p",
                                "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-tom: suite *quick gates: the gate 'accuracy>=ref:chatglm3-6b' names no "
                                 "published chatglm3-6b row for 'accuracy'*rows for quick name: languages.zh.task_avg*"])
