"""--tom-reference in pytest-html's report (`--html`), end to end on the bundled ToMBench fixtures with the seeded `random`
model: the summary section's "pytest-tom" block has the published rows beside the run's values, as the Markdown has
them, in one process and under xdist (where only the controller writes the page); without the option there is none.
"""

from __future__ import annotations

import json

import pytest
from helpers.html_cells import read_block

pytest.importorskip("pytest_html")

SOURCE = "Chen et al. 2024 (ToMBench, ACL 2024), Table 2"
NOTE = "no published GPT-4-1106 row for tombench with tries=5 (published: tries=1)"


@pytest.fixture
def run(pytester: pytest.Pytester, tom_args: list[str]):
    def go(*args: str) -> pytest.RunResult:
        return pytester.runpytest(*tom_args, "--tom-model=random", "--tom-no-cache", "-p", "pytest_html",
                                  "--html=report.html", "--self-contained-html", *args)

    return go


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_html_summary_has_the_published_rows_beside_the_run_values(run, pytester: pytest.Pytester,
                                                                        xdist: list[str]) -> None:
    if xdist:
        pytest.importorskip("xdist")
    report = pytester.path / "report.json"
    result = run(*xdist, "--tom-reference=chatglm3-6b,GPT-4-1106", f"--tom-report={report}")
    assert "pytest-tom: ERROR" not in result.stdout.str()
    block = read_block((pytester.path / "report.html").read_text(encoding="utf-8"))
    assert block.found
    assert block.texts["h3"] == ["pytest-tom"] and block.texts["h4"] == ["Published rows beside tombench"]
    assert block.rows[0] == ["model", "metric", "this run", "published", "source"]
    assert ["ChatGLM3-6B", "tombench en (paper aggregation): task AVG", "27.1", "40.3", SOURCE] in block.rows
    assert block.texts["li"] == [NOTE]
    # one row per published row of the JSON report, each with the report's source
    rows = json.loads(report.read_text(encoding="utf-8"))["suites"][0]["reference"]["rows"]
    assert sorted((r[0], r[4]) for r in block.rows[1:]) == sorted((r["model"], r["source"]) for r in rows)


def test_without_the_option_the_html_has_no_block(run, pytester: pytest.Pytester) -> None:
    run()
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "Summary" in page and not read_block(page).found
