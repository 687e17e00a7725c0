"""Architecture rules: pure layers never import pytest, no import circles, no oversized modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "pytest_tom"
ALL = sorted(PKG.rglob("*.py"))
RUN_LAYER = {"plugin.py", "options.py", "hookspecs.py"}
"""Modules allowed to import pytest: the hooks, the options, and the run layer (pytest_tom/run/)."""
PURE = [p for p in ALL if p.relative_to(PKG).parts[0] != "run" and p.name not in RUN_LAYER]
HEAVY = {"torch", "transformers", "openai", "vllm", "sentence_transformers", "numpy", "xdist"}
MAX_LINES = 500


def _module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_level_imports(path: Path) -> set[str]:
    """Modules imported when `path` is imported: module level, not under TYPE_CHECKING, not inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            names.add(mod)
            names.update(f"{mod}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("path", PURE, ids=lambda p: p.relative_to(PKG).as_posix())
def test_pure_modules_import_neither_pytest_nor_heavy_sdks_at_top_level(path: Path) -> None:
    roots = {n.split(".")[0] for n in _top_level_imports(path)}
    assert "pytest" not in roots and "_pytest" not in roots, f"{path.name} imports pytest; only pytest_tom/run may"
    assert not roots & HEAVY, f"{path.name} imports {roots & HEAVY} at module level; import them lazily"


def test_there_are_no_import_circles() -> None:
    modules = {_module(p): p for p in ALL}
    graph = {m: {n for n in _top_level_imports(p) if n in modules and n != m} for m, p in modules.items()}
    # A package's __init__ importing its own submodules is not a circle its submodules can trip on.
    for m in graph:
        graph[m] = {n for n in graph[m] if not n.startswith(m + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(PKG).as_posix())
def test_no_module_is_oversized(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PKG)} has {lines} lines; split it (house rule: ~{MAX_LINES})"


def test_importing_the_package_stays_light() -> None:
    code = ("import sys, pytest_tom, pytest_tom.plugin; "
            "print(sorted(m for m in ('torch','transformers','openai','vllm','sentence_transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
