"""Sybil set-up that runs the code blocks of README.md, CONTRIBUTING.md and docs/ (tests/docs/test_doc_examples.py).

Each document gets a *workspace*: a temporary folder that stands for "your repository", with a copy of the
project's fixtures and examples, a `pytest.ini` that points pytest-tom at the fixtures (`tom_data_dir`, and
`partial=true` for every benchmark, as the fixtures are deliberately partial releases), and its own response
cache. In it:

- a ```python block whose first line is a file name comment (`# conftest.py`, `# tests/test_tom.py`) is a file the
  page asks you to write: it is compiled and written there, so the shell blocks after it run against it;
- any other ```python block runs as Python, in one namespace per document (Sybil's), from the workspace;
- an ```output block right after a ```bash block shows what that command prints: each of its lines must be printed,
  in that order (leading and trailing spaces aside; `...` stands for any text, and a line that is only `...` for
  lines left out);
- a ```bash block runs in bash in the workspace, with this interpreter's `pytest` and `python` first on PATH and
  this checkout's `pytest_tom` importable. Every command must exit 0, except that pytest's 1 (some tests failed)
  is accepted where it only means that the chance model answered questions wrong: outside GATED pages, whose
  commands are gate runs and must pass.

Shell blocks do not depend on one another (each test runs only its own block), but every file and Python block
before it in the same document is run first, so a page reads top to bottom as a user would follow it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from sybil import Example, Sybil
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.markdown import CodeBlockParser, SkipParser

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = ("tombench", "fantom", "simpletom", "tomvalley", "tomato", "hitom")
FILE_COMMENT = re.compile(r"#\s*([\w./-]+\.(?:py|toml|ini|cfg|json|yml|yaml))\s*(?::.*)?$")
TIMEOUT_S = 240
# Pages whose commands are gate runs (or the README's): a red gate there is a broken example, so exit 1 fails too.
GATED = {"README.md", "docs/index.md", "docs/tutorial.md", "docs/how-to/thresholds.md", "docs/how-to/baselines.md",
         "docs/how-to/caching.md", "docs/how-to/xdist.md", "docs/how-to/own-model.md"}

PYTEST_INI = "\n".join([
    "[pytest]",
    "pythonpath = .",  # as in a repo whose tests import its own modules (python:models:fn below)
    "tom_data_dir = fixtures",
    "tom_set =",
    *(f"    {name}.partial=true" for name in BENCHMARKS),
    "    tomvalley.contexts=7001-7002",  # the two contexts the fixture holds
    # "your repository" has its own tests only: the copied fixtures/examples are run when a command names them.
    "norecursedirs = fixtures examples .tom-cache",
    "",
])


def documents() -> list[Path]:
    """Every page whose examples must run: the README, CONTRIBUTING.md and the whole docs/ tree."""
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]


def workspace(namespace: dict[str, Any]) -> Path:
    """The document's stand-in repository, made on first use (the test puts its tmp_path in the namespace)."""
    if "__workspace__" not in namespace:
        root: Path = namespace["__tmp_path__"] / "repo"
        root.mkdir()
        shutil.copytree(REPO / "fixtures", root / "fixtures")
        shutil.copytree(REPO / "examples", root / "examples")
        (root / "pytest.ini").write_text(PYTEST_INI)
        namespace["__workspace__"] = root
    ws: Path = namespace["__workspace__"]
    return ws


def is_target(example: Example) -> bool:
    """Only the block the test is about runs its shell command; earlier files and Python blocks are set-up."""
    return bool(example.region.start == example.namespace["__target__"])


class ShellBlock:
    """Runs a ```bash block; a non-zero exit fails the test with the block's line and the output's tail."""

    def __call__(self, example: Example) -> None:
        if not is_target(example):
            return
        ws = workspace(example.namespace)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TOM_DATA_DIR", "PYTEST_", "COLUMNS"))}
        env.update({
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])]),
            "TOM_CACHE_DIR": str(ws / ".tom-cache"),
            "COLUMNS": "100",
        })
        source = str(example.parsed)
        page = Path(example.path).relative_to(REPO).as_posix()
        tolerated = 0 if page in GATED else 1
        # Each failing command stops the block unless its status is tolerated (trap ERR sees every command).
        guard = f"trap 'status=$?; [ $status -le {tolerated} ] || exit $status' ERR\n"
        run = subprocess.run(["bash", "-o", "pipefail", "-c", guard + source + "\n:"], cwd=ws, env=env,
                             capture_output=True, text=True, timeout=TIMEOUT_S)
        if run.returncode != 0:
            raise AssertionError(f"{example.path}:{example.line}: exit status {run.returncode}\n$ {source}\n"
                                 f"{run.stdout[-4000:]}\n{run.stderr[-3000:]}")
        example.namespace["__last_output__"] = run.stdout + run.stderr


def shown_lines_missing(shown: str, printed: str) -> list[str]:
    """The lines of an output block that the run did not print, in order (`...` matches any text)."""
    out = [line.strip() for line in printed.splitlines()]
    missing, at = [], 0
    for line in (s.strip() for s in shown.splitlines()):
        if not line or line == "...":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in line.split("...")))
        hit = next((i for i in range(at, len(out)) if pattern.fullmatch(out[i])), None)
        if hit is None:
            missing.append(line)
        else:
            at = hit + 1
    return missing


class OutputBlock:
    """Checks an ```output block against the output of the shell block the test just ran (else does nothing)."""

    def __call__(self, example: Example) -> None:
        printed = example.namespace.pop("__last_output__", None)
        if printed is None:
            return
        missing = shown_lines_missing(str(example.parsed), printed)
        if missing:
            raise AssertionError(f"{example.path}:{example.line}: the page shows lines the command did not print:\n"
                                 + "\n".join(missing) + "\n--- printed:\n" + printed[-5000:])


class PythonBlock:
    """Writes a file block into the workspace, or runs a Python block in the document's namespace."""

    def __init__(self) -> None:
        self.python = PythonEvaluator()

    def __call__(self, example: Example) -> None:
        source = str(example.parsed)
        first = source.splitlines()[0] if source.strip() else ""
        name = FILE_COMMENT.fullmatch(first.strip())
        if name:
            compile(source, name.group(1), "exec")  # a file the page shows must at least be valid Python
            target = workspace(example.namespace) / name.group(1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source)
            return
        workspace(example.namespace)
        cwd = os.getcwd()
        os.chdir(example.namespace["__workspace__"])
        try:
            self.python(example)
        finally:
            os.chdir(cwd)


SHELL = ShellBlock()
PYTHON = PythonBlock()
OUTPUT = OutputBlock()
SYBIL = Sybil(
    parsers=[SkipParser(), CodeBlockParser(language="bash", evaluator=SHELL),
             CodeBlockParser(language="python", evaluator=PYTHON), CodeBlockParser(language="output", evaluator=OUTPUT)],
)


def code_examples(path: Path) -> list[Example]:
    """The runnable blocks of one page, in order (skip directives are not examples of their own)."""
    return [e for e in SYBIL.parse(path) if e.region.evaluator in (SHELL, PYTHON)]
