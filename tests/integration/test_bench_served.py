"""benchmarks/bench_served.py's own logic, cheaply, so it cannot rot: the recording of the plugin's requests, the bare
client sweep, the plugin run and its cached answers, against the fake OpenAI server instead of llama-server."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("openai")

from helpers.fault_server import FaultServer  # noqa: E402

from pytest_tom.request import GenerationSettings, Message, Request  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_served.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_served", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_served"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_benchmark_measures_the_plugin_and_its_ceiling_on_the_plugins_own_requests(
        bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with FaultServer() as server:
        result = bench.main(["--base-url", server.base_url, "--send-stops", "no", "--lm-eval", "none",
                             "--subset", "6", "--parallel", "2", "--select", "",
                             "--tom-set", "tombench.tries=1"])
        bodies = [r.body for r in server.received]
    n = result["requests"]
    assert n > 100  # ToMBench tries and FANToM questions of the fixtures
    assert result["answered"] == {"a": n, "b": n} and result["equal_ab"] == 1.0
    assert result["engine"]["model_requests"] == n and result["engine"]["cache_hits"] == 0  # no cache: all sent
    assert set(result["sweep"]) == {1, 2, 4} and result["best_concurrency"] in result["sweep"]
    assert any(b.get("max_tokens") == 256 for b in bodies) and any(b.get("max_tokens") == 64 for b in bodies)
    out = capsys.readouterr().out
    assert "RATIO b/a" in out and "(b)" in out


def test_lm_eval_documents_are_exactly_the_requests_grouped_by_generation_settings(bench: ModuleType,
                                                                                 tmp_path: Path) -> None:
    tombench = GenerationSettings(max_new_tokens=64, temperature=0.0, stop_after=("[[A]]",))
    fantom = GenerationSettings(max_new_tokens=256, temperature=0.0)
    requests = [Request(messages=(Message("system", "S"), Message("user", "story 1")), settings=tombench),
                Request(messages=(Message("user", "dialogue"),), settings=fantom),
                Request(messages=(Message("system", "S"), Message("user", "story 2")), settings=tombench)]
    tasks = bench.lmeval_tasks(requests, tmp_path)
    assert sorted(map(sorted, tasks.values())) == [[0, 2], [1]]
    for name, indices in tasks.items():
        config = json.loads((tmp_path / f"{name}.yaml").read_text())
        docs = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        assert [(d["system"], d["user"]) for d in docs] == [
            (requests[i].messages[0].content if len(requests[i].messages) == 2 else "", requests[i].messages[-1].content)
            for i in indices]
        s = requests[indices[0]].settings
        gen = config["generation_kwargs"]
        assert gen["max_gen_toks"] == s.max_new_tokens and gen["until"] == [*s.stop, *s.stop_after]
        assert gen["temperature"] == 0.0 and config["description"] == "{{system}}"
