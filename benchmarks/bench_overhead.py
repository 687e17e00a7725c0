"""Per-item overhead of pytest-tom against bare pytest, and collection / cached-replay time for ToMBench.

Usage: TOM_DATA_DIR=../shared/data python benchmarks/bench_overhead.py [--repeat 3]

Both sides run in fresh subprocesses: bare, N trivially parametrized passing tests; tom, as many ToMBench items answered
by a perfect model from a warm cache. Per-item cost is the slope between a small and a full run, which removes start-up
cost. Prints ratios only against baselines measured in the same run; asserts nothing about wall-clock time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFTEST = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from pathlib import Path
    import pytest
    from helpers.tombench_oracle import Oracle

    @pytest.fixture(scope="session")
    def tom_model():
        return Oracle(Path({data!r}))
    """
)


def _time(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return elapsed


def _best(cmd: list[str], cwd: Path, env: dict[str, str], repeat: int) -> float:
    return min(_time(cmd, cwd, env) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--languages", default="en,zh")
    args = parser.parse_args()
    data = Path(os.environ.get("TOM_DATA_DIR") or REPO / "fixtures").resolve()
    print(f"data: {data}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = dict(os.environ, TOM_CACHE_DIR=str(work / "cache"), PYTHONDONTWRITEBYTECODE="1")
        (work / "tom").mkdir()
        (work / "tom" / "conftest.py").write_text(CONFTEST.format(tests=str(REPO / "tests"), data=str(data)))
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no"]
        tom = [*base, "--tom-benchmark=tombench", f"--tom-data-dir={data}", f"--tom-set=tombench.languages={args.languages}"]

        t0 = time.perf_counter()
        out = subprocess.run([*tom, "--collect-only"], cwd=work / "tom", env=env, capture_output=True, text=True)
        collect = time.perf_counter() - t0
        n_items = int(next(line.split()[0] for line in out.stdout.splitlines() if "tests collected" in line))
        small = max(1, n_items // 10)
        print(f"items: {n_items} (small run: {small})")

        _time(tom, work / "tom", env)  # warm the cache: the first run asks the model
        tom_full = _best(tom, work / "tom", env, args.repeat)
        tom_small = _best([*tom, "--tom-sample", str(small)], work / "tom", env, args.repeat)

        bare_dir = work / "bare"
        bare_dir.mkdir()
        for n, name in ((n_items, "test_full.py"), (small, "test_small.py")):
            (bare_dir / name).write_text(f"import pytest\n\n@pytest.mark.parametrize('i', range({n}))\n"
                                         "def test_item(i):\n    pass\n")
        bare_full = _best([*base, "test_full.py"], bare_dir, env, args.repeat)
        bare_small = _best([*base, "test_small.py"], bare_dir, env, args.repeat)
        collect_bare = _best([*base, "--collect-only", "test_full.py"], bare_dir, env, args.repeat)

    # --tom-sample keeps only questions whose stories are complete; count what actually ran in the small run.
    tom_slope = (tom_full - tom_small) / max(1, n_items - small)
    bare_slope = (bare_full - bare_small) / max(1, n_items - small)
    print(f"collection, full ToMBench ({n_items} items): {collect:.2f} s  (bare pytest, same count: {collect_bare:.2f} s)")
    print(f"cached replay, full ToMBench: {tom_full:.2f} s  (bare pytest, same count: {bare_full:.2f} s)")
    print(f"per-item cost: pytest-tom {1e3 * tom_slope:.3f} ms, bare pytest {1e3 * bare_slope:.3f} ms")
    print(f"RATIO per-item overhead (target < 2.0): {tom_slope / bare_slope:.2f}")
    print(f"RATIO whole cached run vs bare run: {tom_full / bare_full:.2f}")


if __name__ == "__main__":
    main()
