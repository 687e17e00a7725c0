"""The "did you mean" helpers and the model-id check's pure parts (issue 19: typos cost a second, not a minute)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tom.errors import TomConfigError
from pytest_tom.suggest import did_you_mean, expression_words, mark_name, nearest, unknown_marks_line

# -- suggestions ----------------------------------------------------------------------------------------------


def test_nearest_finds_the_close_names_best_first_and_ignores_case() -> None:
    assert nearest("smolm2", ["smollm2", "smollm2-135m-instruct", "gpt2"]) == ["smollm2"]
    assert nearest("Belif", ["belief", "beliefs", "en", "zh"])[:2] == ["belief", "beliefs"]
    assert nearest("xyz", ["belief", "en"]) == []


def test_did_you_mean_lists_one_or_several_and_says_nothing_for_none() -> None:
    assert did_you_mean(["hf:smollm2"]) == "did you mean hf:smollm2?"
    assert did_you_mean(["a", "b", "c"]) == "did you mean a, b or c?"
    assert did_you_mean([]) == ""


@pytest.mark.parametrize(("expression", "words"), [
    ("belif", ["belif"]),
    ("tombench and (belief or en) and not slow", ["tombench", "belief", "en", "slow"]),
    ("not(en)and belief", ["en", "belief"]),
    ("flaky(reruns=3) or a and a", ["flaky", "a"]),
    ("ability.x or en-us", ["ability.x", "en-us"]),
])
def test_expression_words_are_the_marks_an_expression_tests(expression: str, words: list[str]) -> None:
    assert expression_words(expression) == words


def test_mark_name_reads_a_markers_ini_line() -> None:
    assert mark_name("slow: long tests") == "slow"
    assert mark_name("skipif(condition, ..., *, reason=...): skip if ...") == "skipif"
    assert mark_name("belief") == "belief"


def test_unknown_marks_line_names_each_unknown_word_with_its_nearest_marks() -> None:
    marks = {"belief", "en", "tombench", "zh"}
    assert unknown_marks_line("belif", marks) == "pytest-tom: -m 'belif' selects no item: 'belif' is not a mark; did you mean belief?"
    line = unknown_marks_line("tombench and (belif or qqq)", marks)
    assert line == ("pytest-tom: -m 'tombench and (belif or qqq)' selects no item: 'belif' is not a mark; did you mean "
                    "belief?; 'qqq' is not a mark (see pytest --markers)")
    assert unknown_marks_line("tombench and not en", marks) is None


# -- the model-id check ------------------------------------------------------------------------------------------

hub = pytest.importorskip("pytest_tom.models._hub")


@pytest.fixture
def empty_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache, offline, in an empty working directory."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path / "hf" / "hub"


def _cache_repo(cache: Path, repo_id: str) -> None:
    """A repo as huggingface_hub lays it out: blobs, a ref and a snapshot holding a file."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "b1").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    snap = repo / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(repo / "blobs" / "b1")


def test_the_hub_cache_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub.hub_cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    assert hub.hub_cache_dir() == tmp_path / "elsewhere"


def test_offline_is_either_variable_with_huggingface_hubs_truth_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    assert hub.offline_variable() is None
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "yes")
    assert hub.offline_variable() == "TRANSFORMERS_OFFLINE"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    assert hub.offline_variable() is None


def test_folder_candidates_are_written_as_the_target_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / "smollm2-ft").mkdir(parents=True)
    (tmp_path / "models" / "w.gguf").write_text("")
    (tmp_path / "models" / "notes.txt").write_text("")
    (tmp_path / "models" / ".hidden").mkdir()
    assert sorted(hub.folder_candidates("models/smollm-ft")) == ["models/smollm2-ft", "models/w.gguf"]
    assert hub.folder_candidates("modls") == ["models"]
    assert hub.folder_candidates("nowhere/x") == []


def test_a_typo_offline_fails_with_the_alias_and_the_cached_ids(empty_hub: Path) -> None:
    _cache_repo(empty_hub, "HuggingFaceTB/SmolLM2-135M-Instruct")
    with pytest.raises(TomConfigError) as caught:
        hub.check_target("smolm2", uri="hf:smolm2", scheme="hf", aliases=("smollm2",))
    message = str(caught.value)
    assert message.startswith("--tom-model hf:smolm2: 'smolm2' is no model folder, file, alias or model in the local hub cache")
    assert "HF_HUB_OFFLINE is set, so the hub was not asked" in message
    assert message.endswith("did you mean hf:smollm2?")
    with pytest.raises(TomConfigError, match=r"did you mean hf:HuggingFaceTB/SmolLM2-135M-Instruct\?"):
        hub.check_target("HuggingFaceTB/SmolLM2-135M-Instruc", uri="hf:x", scheme="hf")


def test_a_folder_a_file_an_alias_and_a_cached_id_pass_offline(empty_hub: Path) -> None:
    _cache_repo(empty_hub, "org/name")
    Path("mine").mkdir()
    Path("w.gguf").write_text("")
    for target in ("mine", "./mine", "w.gguf", "SmolLM2", "org/name", ""):
        hub.check_target(target, uri=f"hf:{target}", scheme="hf", aliases=("smollm2",))


def test_a_missing_local_path_keeps_its_message_and_gets_the_nearest_folder(empty_hub: Path) -> None:
    Path("checkpoints/step-4000").mkdir(parents=True)
    with pytest.raises(TomConfigError, match=r"no such folder: .*step-400 \(the target is a local path.*\); "
                                             r"did you mean hf:./checkpoints/step-4000\?$"):
        hub.check_target("./checkpoints/step-400", uri="hf:./checkpoints/step-400", scheme="hf")


def test_a_name_that_is_no_hub_id_fails_without_asking(empty_hub: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr("huggingface_hub.HfApi.model_info", lambda *a, **k: pytest.fail("asked the hub"))
    with pytest.raises(TomConfigError, match="no valid hub id"):
        hub.check_target("two words", uri="hf:two words", scheme="hf")
