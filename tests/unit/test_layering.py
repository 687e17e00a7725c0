"""Pure layers never import pytest, so benchmarks, models and the engine work without it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "pytest_tom"
PURE = sorted(
    [p for p in (PKG / "benchmarks").glob("*.py")]
    + [p for p in (PKG / "models").glob("*.py")]
    + [PKG / n for n in ("engine.py", "cache.py", "stats.py", "types.py", "errors.py", "data.py", "suite.py")]
)
HEAVY = {"torch", "transformers", "openai", "vllm", "sentence_transformers", "numpy"}


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", PURE, ids=lambda p: p.relative_to(PKG).as_posix())
def test_pure_modules_import_neither_pytest_nor_heavy_sdks_at_top_level(path: Path) -> None:
    imports = _top_level_imports(path)
    assert "pytest" not in imports and "_pytest" not in imports
    assert not imports & HEAVY, f"{path.name} imports {imports & HEAVY} at module level; import them lazily"


def test_importing_the_package_stays_light() -> None:
    import subprocess
    import sys

    code = "import sys, pytest_tom, pytest_tom.plugin; print(sorted(m for m in ('torch','transformers','openai','vllm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
