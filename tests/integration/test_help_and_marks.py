"""Help and names as a newcomer meets them: `pytest --help`, marks under --strict-markers, summary labels, extras.

Issue 9: the help listed three of eight model schemes and placeholders such as
`SAMPLE`; the plugin registered ~74 generic marks (`full`, `list`, `en`) in every
repo that installed it, so a typo'd `@pytest.mark.full` passed --strict-markers;
the summary showed per-question and per-ability numbers side by side unlabelled;
`[all]` pulled test tooling and a server into model repos.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pytest_tom.models import BUILTIN, USAGE
from pytest_tom.options import model_help

REPO = Path(__file__).resolve().parents[2]
QUIET = ("-p", "no:cacheprovider")


def _flat(result: pytest.RunResult) -> str:
    """The output with argparse's line wrapping undone."""
    return " ".join(result.stdout.str().split())


# --- help ---------------------------------------------------------------------------------------------


def test_every_builtin_scheme_has_a_usage_line() -> None:
    assert set(USAGE) == set(BUILTIN)


def test_a_third_party_scheme_is_listed_too() -> None:
    text = model_help({**BUILTIN, "toy": "pkg.toy:make"})
    assert "toy:... (a third-party backend)" in text
    assert all(USAGE[s] in text for s in BUILTIN)


def test_help_lists_every_scheme_every_benchmark_and_says_what_each_option_takes(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*QUIET, "--help")
    assert result.ret == 0
    text = _flat(result)
    group = text[text.index("pytest-tom: theory-of-mind benchmarks as tests:"):re.search(r"\[pytest\] (configuration |ini-)options", text).start()]  # type: ignore[union-attr]  # pytest 9 / 8
    for scheme in BUILTIN:
        assert USAGE[scheme].split(" ")[0] in group, scheme  # e.g. "openai:MODEL[?base_url=URL&concurrency=N..]"
    for form in ("hf:ID|DIR|FILE.gguf", "smollm2 = hf:smollm2", "openai:MODEL[?base_url=URL", "vllm:ID|DIR",
                 "random[:SEED]", "replay:REPORT.json", "python:MODULE:CALLABLE"):
        assert form in group, form
    assert "available: bigtom, fantom, hitom, mmtomqa, opentom, simpletom, tomato, tombench, tomvalley" in group
    for flag in ("--tom-model=URI", "--tom-benchmark=NAMES", "--tom-sample=N", "--tom-seed=N", "--tom-report=PATH",
                 "--tom-data-dir=DIR", "--tom-cache-dir=DIR", "--tom-batch-size=N", "--tom-max-errors=N",
                 "--tom-set=BENCH.NAME=VALUE", "`pytest --tom-set list` lists every benchmark's settings"):
        assert flag in group, flag
    assert not re.search(r"--tom-[a-z-]+=(MODEL|BENCHMARK|SAMPLE|SEED|REPORT|DATA_DIR|CACHE_DIR|BATCH_SIZE|MAX_ERRORS)\b", group)


def test_help_shows_few_pytest_tom_options_and_no_per_benchmark_flag(pytester: pytest.Pytester) -> None:
    """Issue 19: 85 `--tom-*` options and 404 lines of ini twins made `pytest --help` 1,298 lines long."""
    result = pytester.runpytest(*QUIET, "--help")
    options = [line.split()[0] for line in result.outlines if line.startswith("  --tom-")]
    ini_keys = [line.split()[0] for line in result.outlines if line.startswith("  tom_")]
    assert 20 <= len(options) <= 29, options  # 27 with --tom-reference, 28 with --tom-html, 29 with --tom-judge
    assert len(ini_keys) == len(options), ini_keys  # the deprecated ini keys are not registered for --help
    for bench in ("tombench", "fantom", "simpletom", "tomato", "tomvalley"):
        assert f"--tom-{bench}-" not in result.stdout.str() and f"tom_{bench}_" not in result.stdout.str(), bench
    text = _flat(result)
    ini = text[text.index("tom_model (string):"):]
    assert "Same as --tom-model." in ini and "Schemes:" not in ini  # the ini twin points to its flag


def test_tom_set_list_shows_what_each_setting_takes_and_its_default(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*QUIET, "--tom-set", "list")
    assert result.ret == 0
    text = result.stdout.str()
    for setting in ("tombench.prompt=vanilla|cot  (default: vanilla)", "tombench.tries=N", "fantom.contexts=short|full",
                    "fantom.partial=true|false", "fantom.fact_f1_threshold=X", "tombench.source_url=URL",
                    "tomato.subset=", "simpletom.intervention=", "tomvalley.protocol="):
        assert setting in text, setting
    assert "(default: )" not in text  # an empty default reads "(default: (empty))"
    assert "collected" not in text  # it lists and exits, as --markers does


# --- marks --------------------------------------------------------------------------------------------

UNRELATED = """
import pytest

@pytest.mark.full
def test_mine():
    pass
"""


def test_a_repo_that_only_installs_the_plugin_keeps_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine=UNRELATED)
    # A subprocess: pytest's global MARK_GEN remembers marks that earlier in-process runs registered.
    result = pytester.runpytest_subprocess(*QUIET, "--strict-markers")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*'full' not found in `markers` configuration option*"])
    assert len(result.outlines) < 15
    markers = pytester.runpytest(*QUIET, "--markers")
    names = [line.split(":")[0] for line in markers.outlines if line.startswith("@pytest.mark.")]
    assert "@pytest.mark.full" not in names and "@pytest.mark.en" not in names and "@pytest.mark.list" not in names
    markers.stdout.fnmatch_lines(["@pytest.mark.tombench: ToMBench items (Chen et al., 2024). Its other marks (pytest-tom "
                                  "facets) are registered when pytest-tom runs: with --tom-model, --tom-benchmark*"])


def test_where_pytest_tom_runs_markers_lists_and_explains_every_mark(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*QUIET, "--markers", "--tom-model=random")
    result.stdout.fnmatch_lines(["@pytest.mark.full: FANToM full conversation context.",
                                 "@pytest.mark.belief: Belief questions*",
                                 "@pytest.mark.nonliteral: Ability category: Non-Literal Communication."])
    names = {line.split(":")[0] for line in result.outlines if line.startswith("@pytest.mark.")}
    assert len(names) >= 74


def test_the_ini_key_counts_as_running_pytest_tom(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntom_model = random\n")
    pytester.makepyfile(test_mine=UNRELATED)
    result = pytester.runpytest(*QUIET, "--strict-markers", "--collect-only", "-q")
    assert result.ret == 0


def test_marks_select_with_strict_markers_when_a_benchmark_runs(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--strict-markers", "--collect-only", "-q", "-m", "tombench and belief and en")
    assert result.ret == 0
    ids = [line for line in result.outlines if line.startswith("tombench::")]
    assert len(ids) == 12
    assert all(i.startswith("tombench::tombench[en-false_belief_task-") for i in ids)


SUITE_CONFTEST = """
import pytest
import pytest_tom

MODEL = pytest_tom.MockModel()

@pytest.fixture(scope="session")
def tom_model():
    return MODEL

def pytest_sessionfinish(session):
    with open("calls.txt", "w") as f:
        f.write(str(len(MODEL.calls)))
"""


def test_a_suite_in_a_test_module_registers_its_marks_without_any_flag(pytester: pytest.Pytester, fixtures_dir: Path) -> None:
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_tom=f"""
        import pytest_tom
        english = pytest_tom.suite("tombench", languages="en", tries=1, data_dir={str(fixtures_dir)!r}, partial=True)
        """)
    result = pytester.runpytest(*QUIET, "--strict-markers", "-m", "belief", "-q")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 12
    result.stdout.no_fnmatch_line("*not found in `markers`*")
    assert (pytester.path / "calls.txt").read_text() == "12"  # one try per question, nothing else asked


# --- summary labels -----------------------------------------------------------------------------------


def test_the_summary_says_how_each_aggregate_is_computed(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-model=random:0", "-q", "--tom-set=tombench.languages=en")
    result.stdout.fnmatch_lines([
        "  group (acc %: % of the group's questions right)*n  acc %*",
        "  tombench en tasks (% of questions right): *",
        "  tombench en (paper aggregation): task AVG * | ability AVG * | coherent AVG *",
        "    (unweighted means of the task, category and coherent rates below) every task present False",
        "  tombench en categories (unweighted mean of the category's abilities, not per question): *",
    ])


# --- extras -------------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_all_is_the_user_backends_and_dev_is_what_the_tests_need() -> None:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert extras["all"] == ["pytest-tom[hf,openai,embed,html]"]
    dev = " ".join(extras["dev"])
    for tool in ("pytest-tom[serve]", "pytest-xdist", "jsonschema", "hypothesis", "mypy", "ruff", "playwright"):
        assert tool in dev
    from pytest_tom.evals import Registry

    for name in Registry().names():  # the description names every benchmark there is
        assert name in project["description"].lower().replace("-", ""), name  # Hi-ToM is hitom
    for path in (".ci/run", "CONTRIBUTING.md"):
        assert "-e '.[all,dev]'" in (REPO / path).read_text(), path
    readme = (REPO / "README.md").read_text()
    assert "-e '.[all]'" not in readme
