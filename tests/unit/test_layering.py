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


def _every_import(path: Path, known: set[str]) -> set[str]:
    """Package modules that `path` imports anywhere: module level, inside functions, under TYPE_CHECKING.

    An import of a package counts as an import of its `__init__`; `from pkg import name` counts as an
    import of `pkg.name` when that is a module of the package, else of `pkg`.
    """
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                stem = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # the longest package module the import names
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: every set of two or more modules that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = []
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work.append((root, sorted(graph[root])))
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop(0)
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, sorted(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _only_package_and_its_submodules(component: list[str], graph: dict[str, set[str]]) -> bool:
    """A package's __init__ re-exporting its submodules, which import the package back: not a circle to break."""
    members = set(component)
    related = all(w.startswith(m + ".") or m.startswith(w + ".") for m in component for w in graph[m] & members)
    return related and any(o.startswith(m + ".") for m in component for o in component)


def test_there_are_no_import_circles() -> None:
    """Every import counts, even inside a function or under TYPE_CHECKING: hiding one does not break a circle."""
    modules = {_module(p): p for p in ALL}
    graph = {m: _every_import(p, set(modules)) for m, p in modules.items()}
    circles = [c for c in _strongly_connected(graph) if not _only_package_and_its_submodules(c, graph)]
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.relative_to(PKG).as_posix())
def test_no_module_is_oversized(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PKG)} has {lines} lines; split it (house rule: ~{MAX_LINES})"


def test_importing_the_package_stays_light() -> None:
    code = ("import sys, pytest_tom, pytest_tom.plugin; "
            "print(sorted(m for m in ('torch','transformers','openai','vllm','sentence_transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_the_unit_test_tree_mirrors_the_package() -> None:
    """Each folder of tests/unit is a package of pytest_tom, so a module's tests are where its path says."""
    tests = Path(__file__).resolve().parent
    folders = [d.relative_to(tests) for d in tests.rglob("*") if d.is_dir() and d.name != "__pycache__"]
    strays = [str(d) for d in folders if not (PKG / d / "__init__.py").is_file()]
    assert not strays, f"test folders with no matching pytest_tom package: {strays}"
