"""The generated reference (docs/gen_reference.py) against the code it documents.

Each expectation comes from the running plugin, never from a list written here: the options and ini keys `pytest --help`
prints, the marks `pytest --markers` adds when pytest-tom is loaded, the benchmarks' settings, the model options the URI
parser accepts, the hooks pluggy knows, the robustness strategies, the schema files, and the metric keys of a real
`--tom-report` run on the fixtures. A plugin registered in a test adds an option, a benchmark with marks, settings and a
metric, and a backend: each appears once the reference is generated again.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_tom import Benchmark, BenchmarkOption, GenerationSettings, Message, Outcome, Record, Request, Sample, Story
from pytest_tom.errors import TomConfigError
from pytest_tom.evals import Registry
from pytest_tom.framework.base import Facet
from pytest_tom.framework.metric import Metric
from pytest_tom.models import SchemeRegistry
from pytest_tom.models.mock import MockModel
from pytest_tom.robustness import resolve

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "docs" / "gen_reference.py"

SLOW = pytest.mark.slow  # each starts pytest or the fixture runs (the page fixture about 10 s, a fixture report 15 s)


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The reference as the standalone script writes it."""
    out = tmp_path_factory.mktemp("reference")
    done = subprocess.run([sys.executable, str(GENERATOR), str(out)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0 and "did not run" not in done.stderr, done.stderr  # every benchmark ran on the fixtures
    return {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.md")}


def pytest_run(tmp_path: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    """`pytest ARGS` in an empty folder with an empty ini file: what the plugin alone registers."""
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", str(tmp_path), "-p", "no:cacheprovider",
                           *args], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode in ok, done.stdout + done.stderr
    return done.stdout


def sections(page: str) -> dict[str, str]:
    """`## heading` -> its text, up to the next `## `."""
    parts = re.split(r"^## ", page, flags=re.M)[1:]
    return {p.split("\n", 1)[0].strip(): p for p in parts}


@SLOW
def test_every_option_and_ini_key_of_pytest_help_is_listed_and_nothing_else(pages: dict[str, str], tmp_path: Path) -> None:
    shown = pytest_run(tmp_path, "--help")
    flags = set(re.findall(r"^\s+(--tom-[a-z-]+)", shown, flags=re.M))
    inis = set(re.findall(r"^\s+(tom_[a-z_]+) \(", shown, flags=re.M))
    assert flags and inis
    current = pages["options.md"].split("## Deprecated spellings")[0]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(--tom-[a-z-]+)` \| `(tom_[a-z_]+)` \|", current, flags=re.M)}
    assert set(rows) == flags, "every visible flag, and only those"
    assert set(rows.values()) == inis, "each with its ini key, and every ini key --help lists"


@SLOW
def test_every_benchmark_setting_is_listed_with_its_default_and_choices(pages: dict[str, str]) -> None:
    page = pages["options.md"]
    for cls in Registry().loadable():
        for opt in cls.options:
            row = re.search(rf"^\| `{cls.name}\.{opt.name}` \|(.*)$", page, flags=re.M)
            assert row is not None, f"{cls.name}.{opt.name}"
            if opt.default:
                assert f"`{opt.default}`" in row.group(1)
            for choice in opt.choices:
                assert choice.replace("_", "\\_") in row.group(1)


@SLOW
def test_every_mark_pytest_tom_registers_is_listed_under_its_benchmarks(pages: dict[str, str], tmp_path: Path) -> None:
    def marks(*args: str) -> set[str]:
        return set(re.findall(r"^@pytest\.mark\.([A-Za-z0-9_]+):", pytest_run(tmp_path, "--markers", *args), flags=re.M))

    ours = marks("--tom-model=random") - marks("-p", "no:tom")
    assert ours
    by_section = sections(pages["marks.md"])
    listed = {m for text in by_section.values() for m in re.findall(r"^\| `([A-Za-z0-9_]+)` \|", text, flags=re.M)}
    assert ours == listed
    for cls in Registry().loadable():
        for mark in cls.mark_docs:
            assert f"| `{mark}` |" in by_section[cls.name], f"{cls.name}: {mark}"


def flatten(tree: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[str]:
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            yield from flatten(value, (*prefix, key))
        else:
            yield ".".join((*prefix, key))


@SLOW
def test_every_metric_key_of_a_fixture_run_report_is_listed(pages: dict[str, str], tmp_path: Path) -> None:
    gen = load_generator()
    names = Registry().names()
    settings = [f"--tom-set={b}.partial=true" for b in names] + [
        f"--tom-set={b}.{k}={v}" for b, given in gen.FIXTURE_SETTINGS.items() for k, v in given.items()]
    pytest_run(tmp_path, "-q", f"--tom-benchmark={','.join(names)}", f"--tom-model={gen.FIXTURE_MODEL}",
               f"--tom-data-dir={REPO / 'fixtures'}", *settings, "--tom-no-cache", f"--tom-report={tmp_path / 'r.json'}",
               ok=(0, 1))  # random answers fail items
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    by_section = sections(pages["metrics.md"])
    assert {s["benchmark"] for s in report["suites"]} == set(names)
    for suite in report["suites"]:
        keys = list(flatten(suite["metrics"]))
        assert keys
        missing = [k for k in keys if f"`{k}`" not in by_section[suite["benchmark"]]]
        assert not missing, f"{suite['benchmark']}: {missing[:5]}"


@SLOW
def test_every_model_scheme_and_each_option_its_parser_accepts_is_listed(pages: dict[str, str]) -> None:
    by_section = sections(pages["models.md"])
    registry = SchemeRegistry()
    checked = 0
    for scheme in registry:
        text = by_section[f"`{scheme}:`"]
        try:  # the URI parser names its options when it refuses an unknown one
            registry.check(f"{scheme}:x?zz_no_such_option=1")
            registry.make(f"{scheme}:x?zz_no_such_option=1")
        except TomConfigError as exc:
            known = re.search(r"unknown option 'zz_no_such_option'; known: (.*)$", str(exc))
            if known:
                checked += 1
                for name in known.group(1).split(", "):
                    assert f"| `{name}` |" in text, f"{scheme}: {name}"
        except Exception:  # noqa: BLE001 - a scheme that takes no options fails on the target instead
            pass
    assert checked, "no scheme's options were checked"


@SLOW
def test_every_hook_and_strategy_is_listed(pages: dict[str, str], pytestconfig: pytest.Config) -> None:
    hooks = [n for n in vars(pytestconfig.pluginmanager.hook) if n.startswith("pytest_tom_")]
    assert hooks
    assert {f"`{h}`" for h in hooks} == set(sections(pages["hooks.md"]))
    listed = set(re.findall(r"^\| `([a-z_]+)` \|", pages["strategies.md"], flags=re.M))
    assert listed == {s.name for s in resolve("all")}


@SLOW
def test_every_field_of_the_shipped_schemas_is_listed(pages: dict[str, str]) -> None:
    def names(node: Any) -> Iterator[str]:
        if isinstance(node, Mapping):
            yield from node.get("properties", {})
            for child in node.values():
                yield from names(child)
        elif isinstance(node, list):
            for child in node:
                yield from names(child)

    files = sorted((REPO / "pytest_tom" / "schema").glob("*.json"))
    assert files
    for file in files:
        schema = json.loads(file.read_text(encoding="utf-8"))
        section = next(text for head, text in sections(pages["report-schema.md"]).items() if f"`{file.name}`" in head)
        for name in set(names(schema)):
            assert re.search(rf"`[^`]*\b{re.escape(name)}` \|", section), f"{file.name}: {name}"


class Toy(Benchmark[None]):
    """A benchmark a plugin registers: one setting, a facet table with marks, one typed metric."""

    name = "toyref"
    description = "Toy reference benchmark."
    options = (BenchmarkOption("level", "low", "How hard the toy questions are.", choices=("low", "high")),)
    facets = (Facet("shade", marks={"toyref_dark": "Toy questions in the dark.", "toyref_light": "Toy questions in the light."}),)

    def load(self, source: Any) -> list[Sample[None]]:
        return [Sample(benchmark=self.name, id="q0", context=Story("A toy."), question="Yes?", choices=(), gold="yes",
                       characters=(), facets={"shade": "dark"}, marks=("toyref", "toyref_dark"), extra=None, source="toy")]

    def program(self, sample: Sample[None]) -> Any:
        (r,) = yield [Request(messages=(Message("user", sample.question),), settings=GenerationSettings(max_new_tokens=4))]
        return Record(benchmark=self.name, sample_id=sample.id, outcome=Outcome.CORRECT, facets=dict(sample.facets),
                      parsed=r.text, gold=sample.gold, responses=(r.text,))

    def metrics(self, records: Any) -> list[Metric]:
        return [Metric(("toy_score",), 1.0, "toy score", "rate", "Toy table 1")]


class ToyPlugin:
    """A third-party plugin: an option with its ini key, a benchmark, a model scheme."""

    def pytest_addoption(self, parser: pytest.Parser) -> None:
        group = parser.getgroup("tom")
        group.addoption("--tom-toy-extra", dest="tom_toy_extra", default=None, metavar="N", help="A toy option: 50%% of N.")
        parser.addini("tom_toy_extra", help="Same as --tom-toy-extra.", default=None)
        group.addoption("--tom-toy-flag", dest="tom_toy_flag", action="store_true", help="A toy flag.")
        parser.addini("tom_toy_flag", help="Same as --tom-toy-flag.", type="bool", default=False)

    def pytest_tom_add_benchmarks(self, registry: Registry) -> None:
        registry.add(Toy)  # type: ignore[arg-type]

    def pytest_tom_add_backends(self, registry: SchemeRegistry) -> None:
        registry.add("toymodel", lambda spec: MockModel())


@SLOW
def test_what_a_plugin_adds_appears_with_no_hand_edit(pages: dict[str, str]) -> None:
    before = pages
    after = load_generator().generate(plugins=[ToyPlugin()])
    assert "--tom-toy-extra" not in before["options.md"] and "toyref" not in before["marks.md"]
    assert "| `--tom-toy-extra` | `tom_toy_extra` | unset | N (ini: string) | A toy option: 50% of N. |" in after["options.md"]
    assert "| `--tom-toy-flag` | `tom_toy_flag` | `false` | flag (ini: bool) | A toy flag. |" in after["options.md"]
    assert "| `toyref.level` | `low` | str | low, high | How hard the toy questions are. |" in after["options.md"]
    marks = sections(after["marks.md"])["toyref"]
    assert "| `toyref` | Toy reference benchmark. |" in marks
    assert "| `toyref_dark` | Toy questions in the dark. |" in marks and "| `toyref_light` |" in marks
    metrics = sections(after["metrics.md"])["toyref"]
    assert "### Toy table 1" in metrics and "| `toy_score` | toy score | rate |" in metrics
    assert "| `accuracy` |" in metrics  # its gate metrics
    assert "## `toymodel:`" in after["models.md"] and "A third-party backend." in after["models.md"]


@pytest.mark.parametrize("text", ["a|b <c> *d* _e_ [f](g) \\h & i", "use `x|y` or ``a`b`` as written", "10% <=0.3 **"])
def test_a_cell_renders_exactly_its_text(text: str) -> None:
    """Help texts are prose with code spans: a table cell shows them as written, in MkDocs' Markdown (tables on)."""
    markdown = pytest.importorskip("markdown")
    from html.parser import HTMLParser

    gen = load_generator()
    rendered = markdown.markdown(gen.table(["Prose", "Code"], [[gen.esc(text), gen.code(text)]]), extensions=["tables"])

    class Cells(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.cells: list[str] = []
            self.inside = False

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            if tag == "td":
                self.inside, self.cells = True, [*self.cells, ""]

        def handle_endtag(self, tag: str) -> None:
            self.inside = self.inside and tag != "td"

        def handle_data(self, data: str) -> None:
            if self.inside:
                self.cells[-1] += data

    cells = Cells()
    cells.feed(rendered)
    prose = re.sub(r"(`+) ?(.*?) ?\1", r"\2", text)  # what a reader sees: code spans without their backticks
    assert cells.cells == [prose, text], rendered
