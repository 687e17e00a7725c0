"""benchmarks/headline.py runs every built-in benchmark and prints its table, so the headline cannot rot before a GPU runs it.

Both runs use the fixtures (TOM_DATA_DIR unset): a dry run, and a real run of a tiny random-weight Llama through `hf:`
on a sample, whose token counts come from the backend's own usage.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_tom.evals import BUILTIN

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "headline.py"
ALL = list(BUILTIN)  # every built-in benchmark


def _headline(*args: str, keep: Path) -> list[list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "TOM_DATA_DIR"}  # the fixtures, wherever the suite runs
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    run = subprocess.run([sys.executable, str(SCRIPT), "--keep", str(keep), *args], env=env, capture_output=True,
                         text=True, timeout=1500)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    print(run.stdout)  # the table, for -s
    lines = run.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("benchmark "))
    return [re.split(r"\s{2,}", line.strip()) for line in lines[start:] if not line.startswith("---")]


def _int(cell: str) -> int:
    return int(cell.replace(",", ""))


def _check_totals(rows: list[list[str]], columns: range) -> None:
    for col in columns:
        assert _int(rows[-1][col]) == sum(_int(r[col]) for r in rows[1:-1]), rows[0][col]


@pytest.mark.slow
def test_dry_run_counts_every_benchmark_on_the_fixtures(tmp_path: Path) -> None:
    rows = _headline("--dry-run", keep=tmp_path)
    assert rows[0] == ["benchmark", "data", "questions", "requests", "tokens in", "max tokens out"]
    assert [r[0] for r in rows[1:]] == [*ALL, "total"]
    by = {r[0]: r for r in rows[1:]}
    assert all(by[b][1] == "fixtures" for b in ALL)
    # ToMBench: 42 fixture questions, up to 5 tries each (identical tries are sent once). ToMValley's official protocol
    # asks all questions of a context in one request: the fixtures hold 2 contexts.
    assert _int(by["tombench"][2]) == 42 and 42 < _int(by["tombench"][3]) <= 5 * 42
    assert _int(by["tomvalley"][3]) == 2 and _int(by["tomvalley"][2]) > 2
    assert all(_int(by[b][4]) > _int(by[b][3]) for b in ALL)  # every request has a prompt of several tokens
    _check_totals(rows, range(2, 6))
    # The counts are the engine's, as the run's JSON report holds them.
    report = json.loads((tmp_path / "simpletom.json").read_text())
    assert _int(by["simpletom"][3]) == report["engine"]["model_requests"]
    assert _int(by["simpletom"][4]) == report["engine"]["usage"]["prompt_tokens"]


@pytest.mark.slow
def test_a_sampled_run_through_hf_prints_tokens_time_and_gates(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from helpers.tiny_models import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    config = json.loads((model / "config.json").read_text())
    config["max_position_embeddings"] = 4096  # the character-level tokenizer makes long prompts; rotary positions
    (model / "config.json").write_text(json.dumps(config))
    rows = _headline(f"hf:{model}", "--sample", "2", "--", "--tom-set=fantom.embedder=python:headline:dry_embed",
                     keep=tmp_path / "runs")
    assert rows[0] == ["benchmark", "data", "questions", "requests", "tokens in", "tokens out", "wall s", "requests/s",
                       "gates"]
    assert [r[0] for r in rows[1:]] == [*ALL, "total"]
    for row in rows[1:]:
        assert _int(row[3]) > 0 and float(row[6]) > 0
        assert float(row[7]) == pytest.approx(_int(row[3]) / float(row[6]), rel=0.02, abs=0.01)
        assert re.fullmatch(rf"[0-2]/2 passed|[0-9]+/{2 * len(ALL)} passed", row[8]), row  # 2 gates per benchmark
    # Tokens come from hf:'s usage: a ToMBench request's prompt is hundreds of characters, one token each here.
    assert _int(rows[1][4]) > 100 * _int(rows[1][3]) and _int(rows[1][5]) > 0
    _check_totals(rows, range(2, 6))
