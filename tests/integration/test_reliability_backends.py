"""Issue 8, model backends: a bad model path or a misbehaving API, hit the way a user hits it.

* `hf:`/`vllm:` with a local-looking path that does not exist: one usage error
  naming the resolved folder, before any item runs (it used to be a hub lookup
  that failed on every item);
* `openai:` answers that are no answers: a content filter or an empty
  completion is an error asked once per run and never cached, a proxy's HTML
  page or a choice without `message` is a malformed response retried to the
  limit; the local server counts every request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.fault_server import CONTENT_FILTERED, LOGIN_PAGE, NO_MESSAGE, OK, FaultServer, Received, finish

MISSING = [
    ("hf", "{tmp}/no/such/model", "{tmp}/no/such/model"),
    ("hf", "./checkpoints/step-4000", "{cwd}/checkpoints/step-4000"),
    ("hf", "~/models/mine", "{home}/models/mine"),
    ("hf", "../sibling", "{parent}/sibling"),
    ("hf", "C:\\models\\mine", "{cwd}/C:\\models\\mine"),
    ("hf", "models/org/name", "{cwd}/models/org/name"),
    ("vllm", "./checkpoints/step-4000", "{cwd}/checkpoints/step-4000"),
    ("vllm", "{tmp}/no/such/model", "{tmp}/no/such/model"),
]


@pytest.mark.parametrize(("scheme", "target", "resolved"), MISSING,
                         ids=["hf-abs", "hf-dot", "hf-home", "hf-parent", "hf-windows", "hf-nested", "vllm-dot", "vllm-abs"])
def test_a_missing_local_model_folder_is_one_usage_error_before_any_item(
    pytester: pytest.Pytester, tom_args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    scheme: str, target: str, resolved: str,
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    where = {"tmp": str(tmp_path), "cwd": str(pytester.path), "home": str(home), "parent": str(pytester.path.parent)}
    target, resolved = target.format(**where), resolved.format(**where)
    result = pytester.runpytest(*tom_args, f"--tom-model={scheme}:{target}", "-m", "en")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    message = f"pytest-tom: --tom-model {scheme}:{target}: no such folder: {resolved} (the target is a local path"
    assert message in output
    assert output.count("no such folder") == 1, "one error for the run, not one per item"
    assert "collected" not in output, "checked at session start, before any item is collected"
    assert "ERROR tombench" not in output and "OSError" not in output


def test_a_missing_vllm_tokenizer_folder_is_the_same_usage_error(pytester: pytest.Pytester, tom_args: list[str]) -> None:
    result = pytester.runpytest(*tom_args, "--tom-model=vllm:org/name?tokenizer=./tok", "-m", "en")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-tom: --tom-model vllm:org/name?tokenizer=./tok: no such folder: {pytester.path / 'tok'} *"])
    assert "collected" not in result.stdout.str()


# -- openai: answers that are no answers ------------------------------------------------------------

FAULTS = {
    # story keyword -> (the fault, prompts with it under `-m en` and one try)
    "cookies": (CONTENT_FILTERED, 6),
    "candy box": (finish("", "length"), 6),
    "curtains": (LOGIN_PAGE, 4),
    "Xiao Hua": (NO_MESSAGE, 2),
}
OK_PROMPTS = 3  # the persuasion and strange stories


def fault_for(r: Received):  # type: ignore[no-untyped-def]
    for keyword, (fault, _) in FAULTS.items():
        if keyword in r.prompt:
            return fault
    return OK


def by_story(received: list[Received]) -> dict[str, int]:
    counts = {k: 0 for k in [*FAULTS, "ok"]}
    for r in received:
        counts[next((k for k in FAULTS if k in r.prompt), "ok")] += 1
    return counts


@pytest.mark.slow
def test_filtered_empty_and_malformed_api_answers_are_errors_never_cached_answers(
    pytester: pytest.Pytester, tom_args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    retries = 2
    with FaultServer(fault_for) as server:
        # backoff=0: the retries come at once (a subprocess cannot be handed the unit tests' fake clock).
        uri = f"openai:gpt-test?base_url={server.base_url}&max_retries={retries}&backoff=0"
        args = [*tom_args, f"--tom-model={uri}", "--tom-set=tombench.tries=1", "-m", "en", f"--tom-cache-dir={tmp_path / 'c'}",
                "-rE", "--tb=line", "--tom-detail=full"]  # every erroring item listed: the counts below are per item
        runs = []
        for name in ("first.json", "second.json"):
            before = len(server.received)
            result = pytester.runpytest_subprocess(*args, f"--tom-report={name}")
            runs.append((result, by_story(server.received[before:]), json.loads((pytester.path / name).read_text())))

    attempts = retries + 1
    for n, (result, sent, report) in enumerate(runs):
        # Filtered and empty: asked once per run, not retried; malformed: retried to the limit; answers: cached.
        assert sent == {"cookies": 6, "candy box": 6, "curtains": 4 * attempts, "Xiao Hua": 2 * attempts,
                        "ok": OK_PROMPTS if n == 0 else 0}, f"run {n + 1}"
        outcomes = result.parseoutcomes()
        assert outcomes["errors"] == 18 + 3, "18 questions, plus the coherence tests of the 3 of their stories that have one"
        assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == OK_PROMPTS + 2, "3 questions, 2 coherence tests"
        out = result.stdout.str()
        url = server.base_url
        assert out.count(f"content filter: {url} withheld the answer (finish_reason='content_filter', no text)") >= 6
        assert out.count(f"empty completion from {url} (finish_reason='length'): the token budget (max_tokens=64)") >= 6
        assert out.count(f"malformed response from {url}: expected JSON with choices[0].message.content, "
                         'got text/html: "<!DOCTYPE html>') >= 4
        assert out.count(f"malformed response from {url}: expected JSON with choices[0].message.content, "
                         "got a choice without message (finish_reason='stop') (gave up after 3 attempts)") >= 2
        assert "AttributeError" not in out
        stats = report["model"]["stats"]
        assert (stats["content_filter"], stats["empty"], stats["malformed"], stats["errors"]) == (6, 6, 6 * attempts, 18)
        assert not any(r.get("text") == "" for r in report.get("responses", {}).values()), "no empty answer recorded"
