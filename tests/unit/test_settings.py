"""`--tom-set BENCH.NAME=VALUE` and ini `tom_set`: parsing, checking against the registry, the listing."""

from __future__ import annotations

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.evals import Registry
from pytest_tom.settings import Setting, deprecation, legacy_flag, listing, parse_entries, parse_entry, resolve

REGISTRY = Registry()
NAMES = REGISTRY.names()


def _resolve(*raw: str) -> dict[str, dict[str, str]]:
    return resolve(parse_entries(raw, "--tom-set"), REGISTRY.get, NAMES)


@pytest.mark.parametrize(("raw", "want"), [
    ("tombench.prompt=cot", ("tombench", "prompt", "cot")),
    (" fantom.embedder = minilm ", ("fantom", "embedder", "minilm")),
    ("tombench.max-new-tokens=64", ("tombench", "max_new_tokens", "64")),  # the old flag's dashes read as underscores
    ("tombench.languages=en,zh", ("tombench", "languages", "en,zh")),
    ("fantom.source_url=https://x.org/a?b=c", ("fantom", "source_url", "https://x.org/a?b=c")),  # only the first '=' splits
    ("tombench.sha256=", ("tombench", "sha256", "")),
])
def test_an_entry_is_bench_dot_name_equals_value(raw: str, want: tuple[str, str, str]) -> None:
    s = parse_entry(raw)
    assert (s.benchmark, s.name, s.value) == want


@pytest.mark.parametrize("raw", ["tombench", "tombench.prompt", "prompt=cot", ".prompt=cot", "tombench.=cot", "=cot"])
def test_a_malformed_entry_says_the_form(raw: str) -> None:
    with pytest.raises(TomConfigError, match=r"expected BENCH\.NAME=VALUE, e\.g\. tombench\.prompt=cot .*--tom-set list"):
        parse_entry(raw)


def test_ini_lines_skip_blanks_and_comments_and_keep_their_origin() -> None:
    entries = parse_entries(["tombench.prompt=cot\n\n# a comment\nfantom.prompt=cot", "tomato.runs=3"], "ini tom_set")
    assert [(e.benchmark, e.name, e.value) for e in entries] == [
        ("tombench", "prompt", "cot"), ("fantom", "prompt", "cot"), ("tomato", "runs", "3")]
    assert {e.origin for e in entries} == {"ini tom_set"}


def test_settings_are_grouped_per_benchmark_and_a_later_entry_wins() -> None:
    got = _resolve("tombench.prompt=cot", "fantom.embedder=none", "tombench.prompt=vanilla", "tombench.tries=1")
    assert got == {"tombench": {"prompt": "vanilla", "tries": "1"}, "fantom": {"embedder": "none"}}


def test_an_unknown_benchmark_names_the_nearest_and_every_one() -> None:
    with pytest.raises(TomConfigError) as err:
        _resolve("tombnch.prompt=cot")
    assert str(err.value) == ("--tom-set tombnch.prompt: no benchmark 'tombnch' (did you mean 'tombench'?); "
                              "available: bigtom, fantom, hitom, mmtomqa, opentom, simpletom, tomato, tombench, tomvalley")


def test_an_unknown_setting_names_the_nearest_and_the_benchmarks_settings() -> None:
    with pytest.raises(TomConfigError, match=r"^--tom-set tombench\.promt: tombench has no setting 'promt' "
                                             r"\(did you mean 'prompt'\?\); its settings: languages, prompt, tries, "):
        _resolve("tombench.promt=cot")
    with pytest.raises(TomConfigError) as err:  # nothing close: no guess
        _resolve("fantom.zzzz=1")
    assert "did you mean" not in str(err.value) and "its settings: contexts, aggregation" in str(err.value)


@pytest.mark.parametrize(("raw", "message"), [
    ("tombench.prompt=fancy", "--tom-set: tombench setting prompt='fancy': 'fancy' is not one of vanilla, cot"),
    ("tombench.tries=two", "--tom-set: tombench setting tries='two': expected int"),
    ("tombench.languages=en,fr", "--tom-set: tombench setting languages='en,fr': 'fr' is not one of en, zh"),
])
def test_values_are_checked_by_the_setting_itself(raw: str, message: str) -> None:
    with pytest.raises(TomConfigError) as err:
        _resolve(raw)
    assert str(err.value) == message


def test_values_stay_strings_as_from_any_other_source() -> None:
    assert _resolve("tombench.tries=2", "fantom.fact_f1_threshold=0.7") == {
        "tombench": {"tries": "2"}, "fantom": {"fact_f1_threshold": "0.7"}}


def test_the_listing_is_generated_from_every_registered_setting() -> None:
    classes = REGISTRY.loadable()
    text = "\n".join(listing(classes))
    for cls in classes:
        assert f"\n{cls.name}:\n" in text
        for opt in cls.options:
            assert f"  {cls.name}.{opt.name}=" in text, (cls.name, opt.name)
    assert "  tombench.prompt=vanilla|cot  (default: vanilla)" in text
    assert "  tombench.tries=N  (default: " in text


def test_a_deprecation_notice_names_the_replacement() -> None:
    assert legacy_flag("tombench", "max_new_tokens") == "--tom-tombench-max-new-tokens"
    assert deprecation("tombench", "max_new_tokens", "64", ini=False) == (
        "--tom-tombench-max-new-tokens is deprecated and will be removed in the next release; "
        "use --tom-set tombench.max_new_tokens=64")
    assert deprecation("fantom", "prompt", "cot", ini=True).endswith("write it as a line of tom_set: fantom.prompt=cot")
    assert Setting("a", "b", "c", "x").origin == "x"


def test_a_misspelt_suite_keyword_names_the_nearest_setting_too() -> None:
    with pytest.raises(TomConfigError, match=r"tombench has no setting 'promt' \(did you mean 'prompt'\?\); known settings: "):
        REGISTRY.get("tombench")({"promt": "cot"})
