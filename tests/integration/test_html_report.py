"""--tom-html end to end: a gated two-benchmark run (ToMBench and Hi-ToM on the bundled fixtures) against a baseline saved
by another model, so questions flip; its page, the same page rebuilt from the JSON report by `python -m pytest_tom html`,
opened in a real headless Chromium (Debian's, driven by Playwright; no browser download): no console error, no request
but the file itself, every chart drawn, the item and flip filters working, a screenshot kept as a CI artifact. Also:
pytest-html's summary gains the metrics, and --tom-html without matplotlib is a usage error before any model request.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.html_cells import read_block

pytest.importorskip("matplotlib")

# Imported at collection, so the modules stay in sys.modules across pytester's in-process runs (each run drops the
# modules it imported itself; a patch by dotted name could then land on a stale module object the run never uses).
from pytest_tom.output import html as html_output  # noqa: E402
from pytest_tom.output.html import charts  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH: apt-get install chromium "
                                                             "(.ci/run installs it)")


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tom-benchmark=tombench,hitom",
           f"--tom-data-dir={FIXTURES}", "--tom-set=tombench.partial=true", "--tom-set=hitom.partial=true",
           "--tom-no-cache", *args, str(cwd)]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Baseline from `random:1`, then the example's word-overlap model gated on it and on a threshold; the page of the
    run, and the page rebuilt from its JSON report.
    """
    work = tmp_path_factory.mktemp("html")
    shutil.copy(REPO / "examples" / "my_model.py", work / "my_model.py")
    saved = _pytest(work, "--tom-model=random:1", "--tom-baseline-save=baseline.json")
    assert "baseline written" in saved.stdout, saved.stdout + saved.stderr
    start = time.perf_counter()
    run = _pytest(work, "--tom-model=python:my_model:overlap_baseline", "--tom-baseline=baseline.json",
                  "--tom-threshold=tombench.accuracy:lower>=0.1", "--tom-report=report.json", "--tom-html=run.html")
    seconds = time.perf_counter() - start
    assert "gates: all 3 passed" in run.stdout and "pytest-tom: ERROR" not in run.stdout, run.stdout + run.stderr
    rebuilt = subprocess.run([sys.executable, "-m", "pytest_tom", "html", "report.json", "-o", "rebuilt.html"], cwd=work,
                             capture_output=True, text=True, check=False)
    assert rebuilt.returncode == 0, rebuilt.stderr
    return {"dir": work, "report": json.loads((work / "report.json").read_text(encoding="utf-8")), "seconds": seconds}


@pytest.mark.slow
def test_the_page_of_the_run_is_the_page_rebuilt_from_its_report(gated: dict[str, Any]) -> None:
    run, rebuilt = (gated["dir"] / name for name in ("run.html", "rebuilt.html"))
    assert run.read_bytes() == rebuilt.read_bytes()
    text = run.read_text(encoding="utf-8")
    report = gated["report"]
    flips = [(f["id"], key) for g in report["gates"] for key in ("right_to_wrong", "wrong_to_right")
             for f in (g.get("details") or {}).get(key) or ()]
    assert flips and len(read_block(text, "flips").rows) == 1 + len(flips)  # each flipped question, once
    assert [r[0] for r in read_block(text, "items").rows[1:]] == [i["qid"] for i in report["items"] if i["suite"] == "hitom"]
    assert all(i.get("prompt") for i in report["items"])  # the report holds what the item table shows
    assert text.count("Paired differences from the baseline") == 2  # one per suite with a baseline gate
    print(f"page {len(text.encode()):,} bytes, run {gated['seconds']:.1f} s")


@pytest.fixture(scope="module")
def browser() -> Any:
    if CHROMIUM is None:
        pytest.skip("no chromium binary on PATH: apt-get install chromium (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM)
        yield chromium
        chromium.close()


def _open(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    """The page opened from disk, with every request it made and every console error or uncaught exception."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, requests, errors


def _shown(page: Any, table: str) -> int:
    return int(page.eval_on_selector_all(f"table.{table} > tbody > tr", "rows => rows.filter(r => !r.hidden).length"))


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("name", ["run.html", "rebuilt.html"])
def test_the_page_opens_offline_with_every_chart_drawn(gated: dict[str, Any], browser: Any, name: str,
                                                       tmp_path: Path) -> None:
    path = gated["dir"] / name
    page, requests, errors = _open(browser, path)
    assert requests == [path.as_uri()] and errors == []
    charts = page.eval_on_selector_all("figure.chart svg", "svgs => svgs.map(s => { const b = s.getBoundingClientRect(); "
                                       "return [b.width, b.height, s.querySelectorAll('path').length]; })")
    tables = sum(1 for s in gated["report"]["suites"] for t in s["tables"] if t["by"])
    assert len(charts) == tables + 2  # a chart per facet table, and the differences of each suite's baseline gate
    assert all(w > 100 and h > 50 and paths > 5 for w, h, paths in charts), charts
    out = Path(os.environ.get("TOM_ARTIFACTS_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out / f"tom-html-{name}.png"), full_page=True)
    assert (out / f"tom-html-{name}.png").stat().st_size > 10_000
    page.close()


@pytest.mark.slow
@needs_chromium
def test_the_item_and_flip_filters_work_in_the_browser(gated: dict[str, Any], browser: Any) -> None:
    report = gated["report"]
    page, _, errors = _open(browser, gated["dir"] / "rebuilt.html")
    suite = page.locator("#suite-tombench")
    items = suite.locator(".filterable", has=page.locator("table.items"))
    tombench = [i for i in report["items"] if i["suite"] == "tombench"]
    assert items.locator(".count").inner_text() == f"{len(tombench)} of {len(tombench)} shown"
    items.locator("input.search").fill("zh-false_belief")
    wanted = [i for i in tombench if "zh-false_belief" in i["qid"]]
    assert wanted and items.locator(".count").inner_text() == f"{len(wanted)} of {len(tombench)} shown"
    items.locator("input.search").fill("")
    items.locator("select.key").select_option("correct")
    right = sum(i["outcome"] == "correct" for i in tombench)
    assert items.locator(".count").inner_text() == f"{right} of {len(tombench)} shown"
    visible = page.eval_on_selector_all("#suite-tombench table.items > tbody > tr",
                                        "rows => rows.filter(r => !r.hidden).map(r => r.dataset.key)")
    assert visible == ["correct"] * right

    [gate] = [g for g in report["gates"] if g["name"] == "tombench.accuracy:baseline"]
    worse, better = gate["details"]["right_to_wrong"], gate["details"]["wrong_to_right"]
    flips = suite.locator(".filterable", has=page.locator("table.flips"))
    total = len(worse) + len(better)
    assert _shown(page, "flips") == total and worse and better
    flips.locator("select.key").select_option("right → wrong")
    assert flips.locator(".count").inner_text() == f"{len(worse)} of {total} shown"
    flips.locator("input.search").fill(worse[0]["id"])
    assert flips.locator(".count").inner_text() == f"1 of {total} shown"
    assert errors == []
    page.close()


@pytest.mark.slow
def test_pytest_html_gets_the_metrics_table(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    pytest.importorskip("pytest_html")
    result = pytester.runpytest(*tom_args, "--tom-model=random", "--tom-no-cache", "-p", "pytest_html",
                                "--html=report.html", "--self-contained-html")
    assert "pytest-tom: ERROR" not in result.stdout.str()
    block = read_block((pytester.path / "report.html").read_text(encoding="utf-8"), "pytest-tom-metrics")
    assert block.found and block.texts["h4"] == ["Metrics of tombench"]
    assert block.rows[0] == ["table", "metric", "value"]
    assert any(row[1] == "task AVG" for row in block.rows[1:]), block.rows


def test_without_matplotlib_tom_html_is_a_usage_error_before_any_model_request(
        pytester: pytest.Pytester, tom_args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charts, "available", lambda: False)
    result = pytester.runpytest(*tom_args, "--tom-model=random", "--tom-html=page.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tom-html=page.html: matplotlib is not installed*pip install 'pytest-tom[[]html[]]'*"])
    assert "collected" not in result.stdout.str() and not (pytester.path / "page.html").exists()


def test_a_page_that_cannot_be_written_is_one_error_line_and_a_failed_run(
        pytester: pytest.Pytester, tom_args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_tom.run.setup import REPORT_NOT_WRITTEN

    def full(path: Path, report: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(html_output, "write_html", full)
    result = pytester.runpytest(*tom_args, "--tom-model=random", "--tom-threshold=tombench.accuracy>=0", "--tom-html=page.html",
                                "--tom-report=report.json")
    result.stdout.fnmatch_lines(["pytest-tom: ERROR: the HTML report was not written to *page.html: No space left on device"])
    assert result.ret == REPORT_NOT_WRITTEN and (pytester.path / "report.json").exists()  # the JSON report still is
