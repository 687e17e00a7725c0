"""The live terminal output: the request bar, its closing line, one-time work, and how they share pytest's lines."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

LOGGING_MODEL = r"""
import os

def answer(batch, settings):
    with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
        log.write("x\n" * len(batch))
    return ["[[B]]" for _ in batch]
answer.tom_fingerprint = "logging-model"
"""

BAR = re.compile(r"pytest-tom: \[[#.]{5,20}\] (\d+)/(\d+) answers, (-|[\d.]+)/s, elapsed ([\d.:]+( s)?), ETA (\?|[\d.:]+( s)?)")
FINAL = re.compile(r"pytest-tom: (\d+)/(\d+) model requests answered in [\d.:]+( s)? \([\d.]+/s\)$")


def screen(text: str) -> list[str]:
    """What a terminal shows for `text`: each carriage return rewrites its line from the left edge."""
    shown = []
    for raw in text.split("\n"):
        line = ""
        for part in raw.split("\r"):
            line = part + line[len(part):]
        shown.append(line.rstrip())
    return shown


def frames(text: str) -> list[str]:
    """Every state of the bar that was drawn (each carriage-return segment)."""
    return [m.group(0) for m in BAR.finditer(text)]


@pytest.fixture
def logging_model(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A `python:` model that appends a line per request it answers to the returned file."""
    pytester.makepyfile(logging_model=LOGGING_MODEL)
    monkeypatch.syspath_prepend(str(pytester.path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(pytester.path), os.environ.get("PYTHONPATH")])))
    log = tmp_path / "calls.log"
    monkeypatch.setenv("TOM_TEST_CALL_LOG", str(log))
    return log


MODEL = ["--tom-model=python:logging_model:answer", "--tom-no-cache", "-m", "en and fbt", "--tb=no"]


def test_the_bar_counts_every_answer_with_rate_elapsed_and_eta_and_hands_the_line_back(
    pytester: pytest.Pytester, tom_args: list[str], logging_model: Path
) -> None:
    result = pytester.runpytest_subprocess(*tom_args, *MODEL, "--tom-progress=on")
    calls = len(logging_model.read_text().splitlines())
    assert calls == 56  # 12 questions x 5 tries, 4 of them the same
    text = (pytester.path / "stdout").read_bytes().decode()  # the raw output, carriage returns kept
    drawn = frames(text)
    assert re.fullmatch(rf"pytest-tom: \[\.+\] 0/{calls} answers, -/s, elapsed 0\.0 s, ETA \?", drawn[0]), drawn[0]
    assert all(int(BAR.fullmatch(f).group(2)) == calls for f in drawn)  # type: ignore[union-attr]
    shown = screen(text)
    final = [i for i, line in enumerate(shown) if FINAL.match(line)]
    assert len(final) == 1 and FINAL.match(shown[final[0]]).group(1, 2) == (str(calls), str(calls))  # type: ignore[union-attr]
    # The test file's prefix is written again below the closing line, and not left behind above it.
    assert re.fullmatch(r"tombench [.F]+ +\[\d+%\]", shown[final[0] + 1]), shown[final[0] - 1: final[0] + 2]
    assert "tombench" not in [line.strip() for line in shown]
    result.assert_outcomes(passed=3, failed=11, deselected=38)


def test_not_on_a_terminal_there_is_no_bar_only_the_closing_line(
    pytester: pytest.Pytester, tom_args: list[str], logging_model: Path
) -> None:
    result = pytester.runpytest(*tom_args, *MODEL)  # pytester's output is not a terminal: --tom-progress=auto
    text = str(result.stdout)
    assert "\r" not in text and not frames(text)
    ours = [line for line in result.outlines if line.startswith("pytest-tom: ")]
    assert len(ours) == 1 and FINAL.match(ours[0]) and ours[0].startswith("pytest-tom: 56/56 model requests answered in ")
    assert len(logging_model.read_text().splitlines()) == 56


def test_off_shows_nothing_live(pytester: pytest.Pytester, tom_args: list[str], logging_model: Path) -> None:
    pytester.makeini("[pytest]\ntom_progress = off\n")
    result = pytester.runpytest(*tom_args, *MODEL)
    assert not [line for line in result.outlines if line.startswith("pytest-tom: ")]
    assert len(logging_model.read_text().splitlines()) == 56


def test_a_fully_cached_run_draws_no_bar(pytester: pytest.Pytester, tom_args: list[str], logging_model: Path,
                                         tmp_path: Path) -> None:
    cached = [a for a in MODEL if a != "--tom-no-cache"] + [f"--tom-cache-dir={tmp_path / 'cache'}", "--tom-progress=on"]
    pytester.runpytest(*tom_args, *cached)
    again = pytester.runpytest(*tom_args, *cached)
    assert len(logging_model.read_text().splitlines()) == 56
    assert not frames(str(again.stdout)) and "model requests answered" not in str(again.stdout)


def test_a_wrong_value_is_one_usage_error(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-model=random", "--tom-progress=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tom-progress='sometimes' (ini tom_progress): expected auto, on or off*"])


FAKE_CONVERSION = r"""
import os
import sys
from pathlib import Path

import pytest
import pytest_tom
from pytest_tom.models.hf import gguf as _gguf


def noisy_convert(gguf, out):
    # What transformers and gguf print while de-quantising: tqdm bars on stderr.
    for i in range(4):
        sys.stderr.write(f"\rConverting and de-quantizing GGUF tensors...: {25 * i}%|##| {i}/3")
    sys.stderr.write("\n")
    with open(os.environ["TOM_TEST_CONVERSIONS"], "a") as log:
        log.write("converted\n")
    (out / "config.json").write_text("{}")
    (out / _gguf._MARKER).write_text("{}")


_gguf.convert = noisy_convert


@pytest.fixture(scope="session")
def tom_model(tmp_path_factory):
    gguf = Path(os.environ["TOM_TEST_GGUF"])
    _gguf.ensure_converted(gguf, what="the tiny test GGUF", expect="a moment")
    return pytest_tom.MockModel()
"""


def test_one_time_conversion_is_said_on_screen_and_its_bars_stay_out_of_failure_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gguf = tmp_path / "Tiny.Q4.gguf"
    gguf.write_bytes(b"GGUF not really")
    conversions = tmp_path / "conversions.log"
    monkeypatch.setenv("TOM_TEST_GGUF", str(gguf))
    monkeypatch.setenv("TOM_TEST_CONVERSIONS", str(conversions))
    monkeypatch.setenv("TOM_MODEL_DIR", str(tmp_path / "models"))
    pytester.makeconftest(FAKE_CONVERSION)
    pytester.makepyfile(test_it="def test_fails(tom_model):\n    print('the test own output')\n    assert False\n"
                                "def test_passes(tom_model):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    assert conversions.read_text() == "converted\n"
    (target,) = (tmp_path / "models").iterdir()
    result.stdout.fnmatch_lines([f"pytest-tom: converting the tiny test GGUF once into {target} (a moment)…",
                                 "pytest-tom: converted the tiny test GGUF in * s",
                                 "test_it.py F.*"])
    out = str(result.stdout) + str(result.stderr)
    assert "de-quantizing" not in out
    result.stdout.fnmatch_lines(["*Captured stdout call*", "the test own output"])  # the test's own output is kept

    again = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    again.assert_outcomes(failed=1, passed=1)
    assert conversions.read_text() == "converted\n"  # converted once: the second run says nothing
    assert "converting" not in str(again.stdout)


@pytest.mark.slow
def test_the_bundled_model_is_converted_and_loaded_with_a_word_and_no_captured_bars(
    pytester: pytest.Pytester, tom_args: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from pytest_tom.errors import TomDependencyError
    from pytest_tom.models.hf.gguf import converted_dir_for, smollm2_gguf

    try:
        gguf = smollm2_gguf()
    except TomDependencyError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("TOM_MODEL_DIR", str(tmp_path / "models"))
    target = converted_dir_for(gguf)
    pytester.makepyfile(test_first="def test_fails_after_the_conversion(tom_model):\n    assert False\n")
    # -rA: the captured output of every test is printed, so a bar captured anywhere would show.
    result = pytester.runpytest_subprocess(*tom_args, "--tom-model=hf:smollm2", "--tom-no-cache", "-rA",
                                           "--tom-set=tombench.tries=1", "-k", "first or en-false_belief_task-0001")
    result.stdout.fnmatch_lines([
        f"pytest-tom: converting the bundled SmolLM2-135M-Instruct GGUF once into {target} (about a minute)…",
        "pytest-tom: converted the bundled SmolLM2-135M-Instruct GGUF in *",
        "test_first.py F*",
        "pytest-tom: loading smollm2 on *…",
        "pytest-tom: loaded smollm2 in *",
        "pytest-tom: 1/1 model requests answered in *",
    ])
    out = str(result.stdout) + str(result.stderr)
    assert "%|" not in out and "de-quantizing" not in out.lower() and "Loading weights" not in out
