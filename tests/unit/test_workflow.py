"""The example GitHub Actions workflow (examples/ci/tom-gate.yml) is valid and uses options that exist.

Nobody runs the example on GitHub as part of our CI, so these tests are what keeps it from
rotting: it is validated against the GitHub workflow schema that check-jsonschema ships (a
`dev` dependency; no network), its shell scripts are parsed by bash, its expressions refer
to step ids and variables it defines, and every `--tom-*` flag of its pytest lines is one
that `pytest --help` lists.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_tom.gates.thresholds import parse_threshold

WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "ci" / "tom-gate.yml"
GATE_OPTIONS = {"--tom-threshold", "--tom-baseline", "--tom-baseline-save", "--tom-compare-fail", "--tom-markdown"}


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def triggers(wf: dict[str, Any]) -> dict[str, Any]:
    # YAML 1.1 (PyYAML) reads the key `on` as the boolean True.
    on = wf["on"] if "on" in wf else wf.get(True)  # type: ignore[call-overload]
    assert isinstance(on, dict), "the workflow's `on:` must be a mapping"
    return on


def steps(wf: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return list(wf["jobs"][job]["steps"])


def uses(step: dict[str, Any]) -> str:
    return str(step.get("uses", "")).split("@")[0]


def pytest_lines(wf: dict[str, Any]) -> list[list[str]]:
    """The pytest commands of every run step, as argument lists."""
    out = []
    for job in wf["jobs"]:
        for step in steps(wf, job):
            for line in str(step.get("run", "")).splitlines():
                args = shlex.split(line)
                if args[:1] == ["pytest"] or args[:3] == ["python", "-m", "pytest"]:
                    out.append(args)
    return out


def tom_flags(args: list[str]) -> dict[str, list[str]]:
    flags: dict[str, list[str]] = {}
    for arg in args:
        if arg.startswith("--tom-"):
            name, _, value = arg.partition("=")
            flags.setdefault(name, []).append(value)
    return flags


# -- linting --------------------------------------------------------------------------------------


def test_schema_valid() -> None:
    """check-jsonschema's vendored GitHub workflow schema: unknown keys, missing runs-on, bad triggers.

    A workflow linter from PyPI that runs offline: actionlint's PyPI wrapper downloads its binary
    from GitHub when it is built, which a machine without that access cannot do. CI installs
    `dev`, so there the linter must run: only a local environment without it may skip.
    """
    if importlib.util.find_spec("check_jsonschema") is None:
        if os.environ.get("CI"):
            pytest.fail("check-jsonschema is missing: CI installs pytest-tom[dev], which includes it")
        pytest.skip("check-jsonschema is not installed (pip install -e '.[dev]')")
    proc = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_run_scripts_parse_in_bash(workflow: dict[str, Any]) -> None:
    for job in workflow["jobs"]:
        for step in steps(workflow, job):
            if "run" not in step:
                continue
            script = re.sub(r"\$\{\{.*?\}\}", "EXPR", str(step["run"]))  # what the runner substitutes first
            proc = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True, timeout=30)
            assert proc.returncode == 0, f"{job} / {step.get('name', step)}: {proc.stderr}"


def test_expressions_name_defined_steps_and_variables(workflow: dict[str, Any]) -> None:
    """`steps.ID.outputs` must name an earlier step of the same job; `env.X` a variable the workflow sets."""
    env = set(workflow.get("env", {}))
    for job in workflow["jobs"]:
        seen: set[str] = set()
        for step in steps(workflow, job):
            text = yaml.safe_dump(step)
            for ref in re.findall(r"steps\.([A-Za-z0-9_-]+)\.outputs", text):
                assert ref in seen, f"{job}: steps.{ref} is used before (or without) a step with id {ref}"
            for var in re.findall(r"\benv\.([A-Za-z0-9_]+)", text):
                assert var in env, f"{job}: env.{var} is not set at the workflow level"
            if "id" in step:
                seen.add(str(step["id"]))


# -- what the workflow does -----------------------------------------------------------------------


def test_triggers_and_jobs(workflow: dict[str, Any]) -> None:
    on = triggers(workflow)
    assert {"pull_request", "workflow_dispatch", "push"} <= set(on)
    assert on["push"]["branches"] == ["main"]
    assert workflow["permissions"] == {"contents": "read"}
    assert "push" in workflow["jobs"]["gate"]["if"] and "!=" in workflow["jobs"]["gate"]["if"]
    refresh = workflow["jobs"]["refresh-baseline"]
    assert "refs/heads/main" in refresh["if"] and refresh["permissions"] == {"contents": "write"}


def test_gate_job_restores_runs_and_uploads(workflow: dict[str, Any]) -> None:
    gate = steps(workflow, "gate")
    names = [uses(s) for s in gate]
    for action in ("actions/checkout", "actions/setup-python", "actions/cache/restore", "actions/cache/save",
                   "actions/upload-artifact"):
        assert action in names, action
    restore = gate[names.index("actions/cache/restore")]
    assert "~/.cache/pytest-tom" in restore["with"]["path"]
    key = restore["with"]["key"]
    assert "PYTEST_TOM_VERSION" in key and "steps.key.outputs.model" in key  # pytest-tom version + model revision
    assert "hashFiles('checkpoint/**')" in gate[[s.get("id") for s in gate].index("key")]["run"]
    # The gate runs after the restore; the cache save and the upload run whatever the gate decided.
    run_at = next(i for i, s in enumerate(gate) if "--tom-baseline=" in str(s.get("run", "")))
    assert names.index("actions/cache/restore") < run_at < names.index("actions/upload-artifact")
    for action in ("actions/cache/save", "actions/upload-artifact"):
        assert gate[names.index(action)]["if"] == "always()"
    assert gate[names.index("actions/upload-artifact")]["with"]["path"] == "tom-report.json"
    assert "pytest-tom[hf]" in next(s["run"] for s in gate if s.get("name") == "Install")


def test_gate_command(workflow: dict[str, Any]) -> None:
    gate_runs = [tom_flags(a) for a in pytest_lines(workflow) if "--tom-baseline" in tom_flags(a)]
    assert len(gate_runs) == 1
    flags = gate_runs[0]
    assert flags["--tom-model"] == ["hf:./checkpoint"]
    assert flags["--tom-baseline"] == ["tom-baseline.json"]
    assert flags["--tom-compare-fail"] == ["tombench.accuracy:0.02", "tombench.ability.*:0.05"]
    assert flags["--tom-report"] == ["tom-report.json"]
    assert flags["--tom-markdown"] == ["$GITHUB_STEP_SUMMARY"]  # shlex keeps the variable for the shell
    for rule in flags["--tom-threshold"]:
        parse_threshold(rule)  # raises on a rule the plugin would refuse


def test_refresh_job_saves_and_commits_the_baseline(workflow: dict[str, Any]) -> None:
    refresh = steps(workflow, "refresh-baseline")
    saves = [tom_flags(a) for a in pytest_lines({"jobs": {"r": {"steps": refresh}}})]
    assert [f.get("--tom-baseline-save") for f in saves] == [["tom-baseline.json"]]
    assert "--tom-baseline" not in saves[0]  # it stores the new main model; it compares with nothing
    commit = next(s for s in refresh if "git push" in str(s.get("run", "")))
    assert "git add tom-baseline.json" in commit["run"] and "git diff --cached --quiet" in commit["run"]
    assert "if" not in commit  # only after a successful save: a failed run keeps the old baseline


# -- the flags exist ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def help_flags(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every `--tom-*` flag that the installed plugin registers, as `pytest --help` prints them."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path_factory.mktemp("help"))
    assert proc.returncode == 0, proc.stderr
    return set(re.findall(r"(--tom-[a-z0-9-]+)", proc.stdout))


def used_flags(wf: dict[str, Any]) -> set[str]:
    return {flag for args in pytest_lines(wf) for flag in tom_flags(args)}


def test_general_flags_exist(workflow: dict[str, Any], help_flags: set[str]) -> None:
    assert used_flags(workflow) - GATE_OPTIONS - help_flags == set()


def test_gate_flags_exist(workflow: dict[str, Any], help_flags: set[str]) -> None:
    assert used_flags(workflow) & GATE_OPTIONS == GATE_OPTIONS
    assert GATE_OPTIONS - help_flags == set()
