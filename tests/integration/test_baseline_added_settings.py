"""A baseline saved before a benchmark setting existed is compared as what runs did then (`BenchmarkOption.before`):
accepted where the run does the same, refused (naming the implied value) where it does not, before any request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ARGS = ("-p", "no:cacheprovider", "--tom-model=random", "--tom-benchmark=simpletom", f"--tom-data-dir={FIXTURES}",
        "--tom-set=simpletom.partial=true")


@pytest.fixture
def old_baseline(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A baseline as a version without `cot_mental_state` and `extra_options` wrote it."""
    monkeypatch.delenv("TOM_DATA_DIR", raising=False)
    assert pytester.runpytest(*ARGS, "--tom-baseline-save=base.json").ret == 0
    path = pytester.path / "base.json"
    data = json.loads(path.read_text())
    for suite in data["suites"]:
        for name in ("cot_mental_state", "extra_options"):
            del suite["settings"][name]
    path.write_text(json.dumps(data))
    return path


def test_a_run_doing_what_runs_did_before_the_settings_existed_is_compared(pytester: pytest.Pytester,
                                                                           old_baseline: Path) -> None:
    result = pytester.runpytest(*ARGS, f"--tom-baseline={old_baseline}")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["gates: all 1 passed", "*PASS simpletom.accuracy:baseline*30 questions*"])


def test_a_run_doing_otherwise_is_refused_naming_the_implied_value(pytester: pytest.Pytester, old_baseline: Path) -> None:
    result = pytester.runpytest(*ARGS, f"--tom-baseline={old_baseline}", "--tom-set=simpletom.extra_options=either")
    assert result.ret == 4
    out = result.stdout.str() + result.stderr.str()
    assert 'setting extra_options: "none" (saved before this setting existed) -> "either"' in out
    assert "passed" not in result.stdout.str()
