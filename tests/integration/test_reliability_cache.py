"""The cache and the engine under the faults a user meets (issue 8), each run as a user would run it.

A damaged cache file stops the run once, before any model call; a read-only cache is read, never
written, and never makes the engine ask twice; a run stopped by SIGTERM, SIGINT or kill -9 keeps
every answer it received; a failure inside the engine is one ERROR per question of the planning
unit, never a re-plan per item. Every test counts the model calls exactly: the model below writes
one line per conversation it is asked.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REQUESTS = 180
"""Unique requests of the bundled ToMBench fixtures (42 questions, 5 shuffled tries, shared prompts)."""
EN_REQUESTS = 90
"""Those of the English half (`-k en-`)."""

LOGGING_MODEL = r"""
import os
import time

def answer(batch, settings):
    block_after = int(os.environ.get("TOM_TEST_BLOCK_AFTER", "-1"))
    log = os.environ["TOM_TEST_CALL_LOG"]
    out = []
    for conversation in batch:
        with open(log, "a") as f:
            f.write("call\n")
        if block_after >= 0:
            with open(log) as f:
                calls = sum(1 for _ in f)
            if calls > block_after:
                while not os.path.exists(log + ".never"):  # blocks until a signal ends the run
                    time.sleep(0.005)
        out.append("[[B]]")
    return out

answer.tom_fingerprint = "reliability-logging-model"
"""


_POPULATED: dict[str, bytes] = {}


class Workdir:
    """A folder with the logging model, and a way to run pytest there and count its calls."""

    def __init__(self, root: Path, tom_args: list[str]) -> None:
        self.root = root
        self.cache = root / "cache"
        self.log = root / "calls.log"
        (root / "logging_model.py").write_text(LOGGING_MODEL)
        self.args = [*tom_args, "--tom-model=python:logging_model:answer", f"--tom-cache-dir={self.cache}",
                     "-q", "--tb=short", "-rN"]

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "TOM_TEST_"))}
        env.update(PYTHONPATH=str(self.root), TOM_TEST_CALL_LOG=str(self.log), **extra)
        return env

    def calls(self) -> int:
        """Model calls since the last call of this method."""
        if not self.log.exists():
            return 0
        n = len(self.log.read_text().splitlines())
        self.log.unlink()
        return n

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "pytest", *self.args, *args]

    def populate(self, *args: str) -> None:
        """The cache a first run with `args` leaves (run once per module, then copied)."""
        key = " ".join(args)
        if key not in _POPULATED:
            first = self.run(*args)
            assert first.returncode == 1, first.stdout[-3000:]  # wrong answers fail; nothing errors
            assert self.calls() == (EN_REQUESTS if args else REQUESTS)
            assert not (self.cache / "responses.sqlite3-wal").exists()
            _POPULATED[key] = (self.cache / "responses.sqlite3").read_bytes()
        else:
            self.cache.mkdir(exist_ok=True)
            (self.cache / "responses.sqlite3").write_bytes(_POPULATED[key])

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*args), cwd=self.root, env=self.env(), capture_output=True, text=True,
                              timeout=300, check=False)


def _lock(path: Path) -> None:
    """Make a file or folder read-only for the user running the tests, root included.

    Root writes through permission bits, so as root the file gets the immutable
    attribute instead (`chattr +i`), which nobody can write through.
    """
    if os.geteuid() != 0:
        path.chmod(0o555 if path.is_dir() else 0o444)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: cannot make a file read-only")
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"running as root and chattr +i failed: {done.stderr.strip()}")


def _unlock_all(root: Path) -> None:
    for path in (root, *root.rglob("*")):
        if os.geteuid() == 0 and shutil.which("chattr"):
            subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o777)


@pytest.fixture
def work(tom_args: list[str], tmp_path: Path) -> Iterator[Workdir]:
    root = tmp_path / "work"
    root.mkdir()
    try:
        yield Workdir(root, tom_args)
    finally:
        _unlock_all(root)


def _stored(cache: Path) -> int:
    """Answers in the cache file (read-only folders included, where SQLite needs `immutable`)."""
    db = cache / "responses.sqlite3"
    for uri in (f"{db.as_uri()}?mode=ro", f"{db.as_uri()}?immutable=1"):
        try:
            conn = sqlite3.connect(uri, uri=True)
            try:
                return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
            finally:
                conn.close()
        except sqlite3.OperationalError:
            continue
    raise AssertionError(f"cannot read {db}")


def _stored_or_zero(cache: Path) -> int:
    try:
        return _stored(cache)
    except (AssertionError, sqlite3.Error):
        return 0


# -- a damaged cache file ----------------------------------------------------------------------------------


def _garbage_in_the_middle(path: Path) -> None:
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.seek(size // 2)
        f.write(random.Random(8).randbytes(8192))  # seeded: the same damage every run


def _truncated(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)


def _pure_garbage(path: Path) -> None:
    path.write_bytes(random.Random(0).randbytes(path.stat().st_size))


@pytest.mark.slow
@pytest.mark.parametrize("damage", [_garbage_in_the_middle, _truncated, _pure_garbage],
                         ids=["8KB-garbage-in-the-middle", "truncated", "pure-garbage"])
def test_a_damaged_cache_stops_the_run_once_before_any_model_call(work: Workdir, damage) -> None:
    work.populate()
    db = work.cache / "responses.sqlite3"
    damage(db)

    damaged = work.run()
    out = damaged.stdout + damaged.stderr
    assert damaged.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert work.calls() == 0
    assert out.count("is damaged") == 1
    assert f"pytest-tom: the response cache {db} is damaged (" in out
    assert "--tom-no-cache" in out and f"mv {db} {db}.damaged" in out
    assert "Traceback" not in out and "sqlite3.DatabaseError" not in out


@pytest.mark.slow
def test_an_empty_cache_file_is_a_usage_error_before_any_model_call(work: Workdir) -> None:
    work.cache.mkdir()
    db = work.cache / "responses.sqlite3"
    db.write_bytes(b"")
    env = {**work.env(), "PYTHONPATH": os.pathsep.join((str(work.root), str(Path(__file__).resolve().parents[2])))}
    run = subprocess.run(work.command(), cwd=work.root, env=env, capture_output=True, text=True, timeout=300,
                         check=False)
    out = run.stdout + run.stderr
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert work.calls() == 0
    assert f"ERROR: pytest-tom: the response cache {db} is empty (0 bytes)" in out and "Traceback" not in out


@pytest.mark.slow
def test_the_ways_on_that_the_damaged_cache_message_offers_work(work: Workdir) -> None:
    work.populate()
    db = work.cache / "responses.sqlite3"
    _garbage_in_the_middle(db)
    without = work.run("--tom-no-cache")
    assert without.returncode == 1 and work.calls() == REQUESTS
    db.rename(db.with_name("responses.sqlite3.damaged"))
    fresh = work.run()
    assert fresh.returncode == 1 and work.calls() == REQUESTS
    assert _stored(work.cache) == REQUESTS


@pytest.mark.slow
def test_a_damaged_cache_under_xdist_stops_every_worker_without_an_internal_error(work: Workdir) -> None:
    pytest.importorskip("xdist")
    work.populate()
    _pure_garbage(work.cache / "responses.sqlite3")
    run = work.run("-n", "2")
    out = run.stdout + run.stderr
    assert run.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert work.calls() == 0
    assert "INTERNALERROR" not in out
    assert "Interrupted: pytest-tom: the response cache" in out and "is damaged (file is not a database)" in out
    assert run.stdout.count("\nERROR ") <= 2  # the first item of each worker, then the run stops


# -- a cache that cannot be written ------------------------------------------------------------------------


def _make_read_only(work: Workdir, what: str) -> None:
    if what in ("file", "both"):
        _lock(work.cache / "responses.sqlite3")
    if what in ("folder", "both"):
        _lock(work.cache)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["file", "folder", "both"])
def test_a_read_only_cache_is_read_and_never_multiplies_model_calls(work: Workdir, what: str) -> None:
    work.populate("-k", "en-")
    _make_read_only(work, what)

    run = work.run()
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]  # wrong answers fail; no item errors
    assert work.calls() == REQUESTS - EN_REQUESTS  # the English answers were read, the rest asked once
    assert " error" not in run.stdout.splitlines()[-1]
    assert out.count("cannot be written") == 1
    assert f"TomCacheWarning: pytest-tom: the response cache {work.cache / 'responses.sqlite3'} cannot be written" in out
    assert "the next run will ask them again" in out
    assert "pytest-tom summary" in out
    assert _stored(work.cache) == EN_REQUESTS


@pytest.mark.slow
def test_a_read_only_cache_holding_every_answer_answers_the_run_without_a_warning(work: Workdir) -> None:
    work.populate()
    _make_read_only(work, "both")
    run = work.run()
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert work.calls() == 0
    assert "cannot be written" not in out and "warning" not in run.stdout.splitlines()[-1]


@pytest.mark.slow
def test_a_cache_folder_that_cannot_be_created_runs_from_memory_with_one_warning(work: Workdir) -> None:
    parent = work.root / "locked"
    parent.mkdir()
    _lock(parent)
    work.args = [a for a in work.args if not a.startswith("--tom-cache-dir")] + [f"--tom-cache-dir={parent / 'cache'}"]
    run = work.run()
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert work.calls() == REQUESTS
    assert out.count("cannot be written") == 1 and f"cannot create the folder {parent / 'cache'}" in out


# -- a run stopped in the middle ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["SIGTERM", "SIGINT", "SIGKILL"])
def test_a_stopped_run_keeps_every_answer_it_received(work: Workdir, sig: signal.Signals) -> None:
    answered = 7
    # The run starts as from a terminal, where Ctrl-C is live: a test runner started in the background (nohup, `&`)
    # ignores SIGINT, and its children would inherit that and never stop.
    proc = subprocess.Popen(work.command("--tom-batch-size=1"), cwd=work.root,
                            env=work.env(TOM_TEST_BLOCK_AFTER=str(answered)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    try:
        deadline = time.monotonic() + 120
        # The model logs a call when it starts: the 8th call is blocked, so 7 answers came back.
        while not (work.log.exists() and len(work.log.read_text().splitlines()) > answered):
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the run never reached the blocking call"
            time.sleep(0.01)
        if sig == signal.SIGKILL:
            # Nothing can run after kill -9: it finds on disk what the writer thread committed while
            # the model worked, which is every answer once the model has been busy for a moment.
            while _stored_or_zero(work.cache) < answered:
                assert time.monotonic() < deadline, "the answers never reached the cache"
                time.sleep(0.01)
        proc.send_signal(sig)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert work.calls() == answered + 1
    assert _stored(work.cache) == answered

    resumed = work.run()
    assert resumed.returncode == 1, resumed.stdout[-3000:]
    assert work.calls() == REQUESTS - answered


# -- failures inside the engine ----------------------------------------------------------------------------

BROKEN_CONFTEST = r"""
import os
import pytest
import pytest_tom.engine.engine as engine_module
from pytest_tom.models.base import Model
from pytest_tom.request import Response

RUNS = []

class Logged(Model):
    '''Answers [[B]] and logs each request; MODE picks how it misbehaves.'''
    batch_size = 16

    def fingerprint(self):
        return "broken-" + os.environ["MODE"]

    def generate(self, requests):
        with open(os.environ["TOM_TEST_CALL_LOG"], "a") as log:
            log.write("call\n" * len(requests))
        if os.environ["MODE"] == "strings":
            return ["[[B]]" for _ in requests]  # a common mistake: text, not Response objects
        return [Response(text="[[B]]") for _ in requests]

    def stream(self, requests):
        if os.environ["MODE"] == "stream-raises":
            yield from ((i, r) for i, r in enumerate(self.generate(requests[:20])))
            raise ConnectionResetError("the server went away")
        yield from super().stream(requests)

@pytest.fixture(scope="session")
def tom_model():
    if os.environ["MODE"] == "program-raises":
        from pytest_tom.evals.tombench import ToMBench
        program = ToMBench.program
        def broken_program(self, sample):
            if sample.id == "en-false_belief_task-0001":
                raise ValueError("a benchmark bug")
            return program(self, sample)
        ToMBench.program = broken_program
    if os.environ["MODE"] == "engine-raises":
        def broken(self, requests):
            RUNS.append(1)
            with open(os.environ["TOM_TEST_CALL_LOG"] + ".runs", "a") as log:
                log.write("run\n")
            raise RuntimeError("an engine bug")
        engine_module.Engine._answer = broken
    return Logged()
"""


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "calls", "errors", "message"), [
    ("engine-raises", 0, 42, "pytest-tom's engine failed while answering this question: RuntimeError: an engine bug"),
    ("strings", REQUESTS, 42, "model error: the backend answered with a str, not a pytest_tom.Response"),
    ("stream-raises", 20, None, "model error: backend crashed: ConnectionResetError: the server went away"),
    ("program-raises", REQUESTS - 4, None,  # the four requests only that question asks
     "tombench could not build the program of en-false_belief_task-0001: ValueError: a benchmark bug"),
])
def test_a_failure_in_the_engine_or_the_backend_is_recorded_once_for_the_unit(
        work: Workdir, mode: str, calls: int, errors: int | None, message: str) -> None:
    (work.root / "conftest.py").write_text(BROKEN_CONFTEST)
    work.args = [a for a in work.args if not a.startswith("--tom-model")]
    env = work.env(MODE=mode)
    # --tom-detail=full: every erroring item listed (a plain run shows 3 per group), so each is counted once
    run = subprocess.run(work.command("--tb=line", "--tom-detail=full"), cwd=work.root, env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert work.calls() == calls
    runs = Path(str(work.log) + ".runs")
    assert not runs.exists() or len(runs.read_text().splitlines()) == 1  # one engine run, not one per item
    assert message in out
    tail = run.stdout.splitlines()[-1]
    if errors is not None:
        assert f"{errors + 10} errors" in tail, tail  # every question, and each consistency group through them
        assert out.count(message) == errors + 10  # one line per erroring item
    elif mode == "program-raises":
        assert "2 errors" in tail, tail  # the question and its coherence group; the unit was answered once
    else:
        assert " error" in tail and "failed" in tail
