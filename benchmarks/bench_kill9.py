"""How many requests a run asks again after `kill -9`, at the default settings and at batch size 1.

Usage: python benchmarks/bench_kill9.py [--repeat 5] [--per-answer-ms 4] [--batch-size 16]

A `python:` model answers the bundled ToMBench fixtures (180 unique requests) at `--per-answer-ms` each, logging `asked`
when it starts a conversation and `answered` when its batch returns. The run is killed with SIGKILL at a seeded random
moment after N answers (N varies, so kills fall anywhere in a batch), then resumed with the same cache. Printed per
kill: answered (returned before it died), stored (in the cache file after the kill), lost (answered - stored) and
re-asked (asked again by the resumed run: the lost answers plus the batch in flight). The README's bound is the largest
re-asked count at the default batch size; timing moves the numbers a little, and nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOTAL = 180
MODEL = """
import os, time

def answer(batch, settings):
    log = os.environ["KILL9_LOG"]
    with open(log, "a") as f:
        f.write("asked\\n" * len(batch))
    time.sleep(len(batch) * float(os.environ["KILL9_PER_ANSWER_S"]))
    with open(log, "a") as f:
        f.write("answered\\n" * len(batch))
    return ["[[B]]"] * len(batch)

answer.tom_fingerprint = "kill9-steady"
"""


def _count(log: Path, word: str) -> int:
    return sum(1 for line in log.read_text().splitlines() if line == word) if log.exists() else 0


def _stored(db: Path) -> int:
    try:
        with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.Error:
        return 0


def one_kill(root: Path, after: int, delay: float, per_answer_s: float, batch_size: int | None) -> dict[str, int]:
    cache, log = root / "cache", root / "calls.log"
    for path in (log, *(cache.glob("*") if cache.exists() else ())):
        path.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tom-benchmark=tombench",
           f"--tom-data-dir={REPO / 'fixtures'}", "--tom-set=tombench.partial=true",
           "--tom-model=python:kill9_model:answer", f"--tom-cache-dir={cache}", "--tom-progress=off"]
    if batch_size:
        cmd.append(f"--tom-batch-size={batch_size}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(root), str(REPO))), "KILL9_LOG": str(log),
           "KILL9_PER_ANSWER_S": str(per_answer_s)}
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _count(log, "answered") < after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.0005)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    asked, answered = _count(log, "asked"), _count(log, "answered")
    stored = _stored(cache / "responses.sqlite3")
    log.unlink(missing_ok=True)
    subprocess.run(cmd, cwd=root, env={**env, "KILL9_PER_ANSWER_S": "0"}, capture_output=True, check=False)
    resumed = _count(log, "asked")
    return {"asked": asked, "answered": answered, "stored": stored, "lost": answered - stored,
            "re-asked": asked + resumed - TOTAL}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="kills per batch size")
    parser.add_argument("--per-answer-ms", type=float, default=4.0)
    parser.add_argument("--batch-size", type=int, action="append",
                        help="batch sizes to measure (default: the model's default, 16, and 1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "kill9_model.py").write_text(MODEL)
        for batch_size in args.batch_size or [0, 1]:
            label = f"--tom-batch-size={batch_size}" if batch_size else "default batch size (16)"
            rows = []
            draw = random.Random(batch_size)
            size = batch_size or 16
            for _ in range(args.repeat):
                after = draw.randrange(16, 140)  # spread over the run...
                delay = draw.uniform(0, size * args.per_answer_ms / 1000)  # ...and over the phase within a batch
                rows.append(one_kill(root, after, delay, args.per_answer_ms / 1000, batch_size or None))
                r = rows[-1]
                print(f"{label}: killed after {r['answered']:3d} answers ({r['asked']:3d} asked): "
                      f"{r['stored']:3d} stored, {r['lost']} lost, {r['re-asked']:2d} re-asked")
            worst = max(r["re-asked"] for r in rows)
            print(f"{label}: re-asked at most {worst} of {TOTAL} over {len(rows)} kills; "
                  f"answers lost at most {max(r['lost'] for r in rows)}")


if __name__ == "__main__":
    main()
