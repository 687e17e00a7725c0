"""The live terminal output, against a stand-in terminal: lines, counts, the prefix handed back, one-time work."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_tom import notice
from pytest_tom.run import progress as progress_module
from pytest_tom.run.progress import Progress, bar_line, final_line, status_text


class Terminal:
    """pytest's terminal writer as far as `Progress` uses it; `out` is everything written."""

    fullwidth = 100

    def __init__(self) -> None:
        self.out = ""

    @property
    def width_of_current_line(self) -> int:
        return len(self.out.rsplit("\n", 1)[-1])

    def write(self, text: str, **markup: bool) -> None:
        self.out += text

    def line(self, text: str = "") -> None:
        self.out += text + "\n"

    def flush(self) -> None:
        pass


class Reporter:
    def __init__(self, start: Path, isatty: bool = True) -> None:
        self.startpath = start
        self.currentfspath: object = None
        self.isatty = isatty


class Config:
    def __init__(self, reporter: Reporter | None, tw: Terminal, worker: bool = False) -> None:
        self.reporter, self.tw = reporter, tw
        self.cleanups: list[Any] = []
        self.pluginmanager = self
        if worker:
            self.workerinput = {"workerid": "gw0", "workercount": 2}

    def get_plugin(self, name: str) -> Any:
        return self.reporter if name == "terminalreporter" else None

    def register(self, plugin: object) -> None:
        pass

    def get_terminal_writer(self) -> Terminal:
        return self.tw

    def add_cleanup(self, fn: Any) -> None:
        self.cleanups.append(fn)


@pytest.fixture
def terminal(tmp_path: Path) -> Any:
    """A Progress on a stand-in terminal whose current line holds pytest's `test_x.py ` prefix; the sink is restored after."""
    tw = Terminal()
    reporter = Reporter(tmp_path)
    reporter.currentfspath = tmp_path / "test_x.py"
    tw.write("\ntest_x.py ")
    config = Config(reporter, tw)
    yield Progress(cast(pytest.Config, config), "on"), tw, reporter
    for fn in config.cleanups:
        fn()


def screen(text: str) -> list[str]:
    shown = []
    for raw in text.split("\n"):
        line = ""
        for part in raw.split("\r"):
            line = part + line[len(part):]
        shown.append(line.rstrip())
    return shown


def test_status_text_has_answers_total_rate_elapsed_and_eta() -> None:
    assert status_text(0, 90, 0.0) == "0/90 answers, -/s, elapsed 0.0 s, ETA ?"
    assert status_text(45, 90, 72.0) == "45/90 answers, 0.62/s, elapsed 1:12, ETA 1:12"
    assert status_text(900, 11842, 3600.0) == "900/11842 answers, 0.25/s, elapsed 1:00:00, ETA 12:09:28"
    assert final_line(90, 90, 151.0) == "pytest-tom: 90/90 model requests answered in 2:31 (0.60/s)"


def test_retries_and_errors_show_beside_the_answers_once_there_are_any() -> None:
    assert status_text(37, 90, 60.0, errors=0, retries=2) == "37/90 answers · 2 retries · 0 errors, 0.62/s, elapsed 1:00, ETA 1:25"
    assert status_text(37, 90, 60.0, errors=1, retries=1).startswith("37/90 answers · 1 retry · 1 error, ")
    assert final_line(88, 90, 151.0, errors=2, retries=1) == \
        "pytest-tom: 88/90 model requests answered in 2:31 (0.58/s); 1 retry, 2 errors"


def test_a_pass_with_errors_ends_when_every_request_has_an_answer_or_an_error(terminal: Any) -> None:
    progress, tw, _ = terminal
    progress(0, 3)
    progress(1, 3)
    progress(1, 3, errors=1, retries=4)
    deadline = time.monotonic() + 5
    while "1/3 answers · 4 retries · 1 error," not in tw.out.rsplit("\r", 1)[-1] and time.monotonic() < deadline:
        time.sleep(0.005)
    assert "1/3 answers · 4 retries · 1 error," in tw.out.rsplit("\r", 1)[-1]
    assert "answered in" not in tw.out  # an error is not an answer, but the pass goes on
    progress(2, 3, errors=1, retries=4)
    assert screen(tw.out)[-2].startswith("pytest-tom: 2/3 model requests answered in ")
    assert screen(tw.out)[-2].endswith("; 4 retries, 1 error")


def test_the_bar_fits_the_terminal_and_is_dropped_before_the_numbers() -> None:
    wide = bar_line(45, 90, 72.0, width=120)
    assert wide == "pytest-tom: [##########..........] 45/90 answers, 0.62/s, elapsed 1:12, ETA 1:12"
    narrow = bar_line(45, 90, 72.0, width=72)
    assert len(narrow) < 72 and narrow.startswith("pytest-tom: [#####......] 45/90")
    assert bar_line(45, 90, 72.0, width=55) == "pytest-tom: 45/90 answers, 0.62/s, elapsed 1:12, ETA 1"


def test_a_pass_draws_on_its_own_line_and_hands_the_prefix_back(terminal: Any) -> None:
    progress, tw, reporter = terminal
    prefix = reporter.currentfspath
    for done in range(4):
        progress(done, 3)
    shown = screen(tw.out)
    assert shown[-2].startswith("pytest-tom: 3/3 model requests answered in ")
    assert tw.out.endswith("\ntest_x.py ") and reporter.currentfspath == prefix  # pytest's dots carry on
    assert "test_x.py" not in shown[:-1]  # the bare prefix line was blanked, not left behind


def test_a_burst_of_answers_is_shown_without_waiting_for_the_next_one(terminal: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    progress, tw, _ = terminal
    monkeypatch.setattr(progress_module, "REDRAW_S", 0.02)
    progress(0, 32)
    for done in range(1, 17):  # a batch of 16 answers arrives at once
        progress(done, 32)
    deadline = time.monotonic() + 5
    while "16/32 answers" not in tw.out.rsplit("\r", 1)[-1] and time.monotonic() < deadline:
        time.sleep(0.005)
    assert "16/32 answers" in tw.out.rsplit("\r", 1)[-1]  # the timer redrew the latest count
    progress(32, 32)


def test_one_time_work_prints_above_the_bar(terminal: Any) -> None:
    progress, tw, _ = terminal
    progress(0, 2)
    with notice.step("loading tiny on cpu", "loaded tiny"):
        print("Loading weights: 100%|####|", file=sys.stderr)  # a library's bar: held back
    progress(2, 2)
    shown = [line for line in screen(tw.out) if line]
    assert shown[-4] == "pytest-tom: loading tiny on cpu…"
    assert shown[-3].startswith("pytest-tom: loaded tiny in ") and shown[-3].endswith(" s")
    assert shown[-2].startswith("pytest-tom: 2/2 model requests answered in ")
    assert "Loading weights" not in tw.out


def test_not_a_terminal_gets_plain_lines_and_no_bar(tmp_path: Path) -> None:
    tw = Terminal()
    config = Config(Reporter(tmp_path, isatty=False), tw)
    progress = Progress(cast(pytest.Config, config), "auto")
    try:
        for done in range(11):
            progress(done, 10)
        notice.say("pytest-tom: loading tiny on cpu…")
    finally:
        for fn in config.cleanups:
            fn()
    assert "\r" not in tw.out
    lines = [line for line in tw.out.splitlines() if line]
    assert lines[-2].startswith("pytest-tom: 10/10 model requests answered in ")
    assert lines[-1] == "pytest-tom: loading tiny on cpu…"
    assert tw.out.count("model requests") == 1


@pytest.mark.parametrize(("mode", "worker"), [("off", False), ("on", True), ("auto", True)])
def test_off_and_xdist_workers_show_nothing(tmp_path: Path, mode: str, worker: bool) -> None:
    tw = Terminal()
    config = Config(Reporter(tmp_path), tw, worker=worker)
    progress = Progress(cast(pytest.Config, config), mode)
    try:
        progress(0, 1)
        notice.say("pytest-tom: converting…")
        progress(1, 1)
    finally:
        for fn in config.cleanups:
            fn()
    assert tw.out == ""


def test_a_failing_step_shows_the_held_back_output_next_to_its_error(capsys: pytest.CaptureFixture[str]) -> None:
    said: list[str] = []
    previous = notice.set_sink(said.append)
    try:
        with pytest.raises(RuntimeError, match="disk full"), notice.step("converting x", "converted x"):
            print("tensor 7 of 30", file=sys.stderr)
            raise RuntimeError("disk full")
    finally:
        notice.set_sink(previous)
    assert said == ["pytest-tom: converting x…"]
    assert capsys.readouterr().err == "tensor 7 of 30\n"


def test_one_time_work_before_any_bar_writes_over_the_bare_prefix_on_a_terminal(terminal: Any) -> None:
    progress, tw, reporter = terminal
    prefix = reporter.currentfspath
    notice.say("pytest-tom: converting x once…")
    notice.say("pytest-tom: converted x in 1.0 s")
    assert [line for line in screen(tw.out) if line] == [
        "pytest-tom: converting x once…", "pytest-tom: converted x in 1.0 s", "test_x.py"]
    assert reporter.currentfspath == prefix and tw.out.endswith("test_x.py ")
