"""The headline run: every built-in benchmark under its official protocol, gated, against one model; per benchmark the
requests, tokens in and out, wall time and requests per second, and the total.

Usage:
    python benchmarks/headline.py MODEL_URI [--data-dir DIR] [--sample N] [--benchmarks a,b] [-- PYTEST_ARGS...]
    python benchmarks/headline.py --dry-run [--tokenizer PATH_OR_ID] [--data-dir DIR]

MODEL_URI is any `--tom-model` URI: `vllm:ORG/MODEL`, `openai:http://HOST:PORT/v1?model=NAME`, `hf:PATH`. Each
benchmark runs in its own pytest process (`pytest --tom-benchmark=NAME`, no test file, no response cache) with each
benchmark's default settings, which are its official protocol, and the gates a release candidate would face:
no model errors and at most 10% unreadable answers. The figures come from the run's JSON report (`engine`: requests
sent to the model, and the token usage the backend reports; `random:` and `python:` models report none).

Data: each benchmark's copy under --data-dir (default $TOM_DATA_DIR; the table's data column says `local`), checked
as every run checks it (a partial copy must say so with `-- --tom-set NAME.partial=true`), else the project's fixtures.
A ToMATO copy holding only `tomato_fb.json` runs the false-belief subset (`tomato.subset=fb`); the table says so.

--dry-run sends nothing to a model: each benchmark runs with a stand-in model that answers like `random` and records,
for every request the engine sends, its prompt tokens and its generation budget (`max_new_tokens`, an upper bound on
tokens out). Tokens are counted with --tokenizer (a local folder or a cached hub id; its chat template is applied), or
with the model's own when MODEL_URI is `hf:`/`vllm:` of a local folder; otherwise approximated as characters / 4.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tom.evals import BUILTIN
from pytest_tom.models.random import RandomModel
from pytest_tom.request import Request, Response

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
BENCHMARKS = tuple(BUILTIN)  # every built-in benchmark, in the registry's order
GATES = ("errors<=0", "unparseable<=10%")
# On the fixtures (a few records of each release we wrote ourselves), besides `partial=true`:
FIXTURE_SETTINGS = {"tomvalley": ("contexts=7001-7002",)}
TOKENIZER_ENV = "TOM_HEADLINE_TOKENIZER"
APPROXIMATION = "characters / 4"


# --- the dry run's stand-in model and embedder (imported by the pytest process as python:headline:...) ---------------

class _Counter:
    """Prompt tokens of a request, with the tokenizer named by $TOM_HEADLINE_TOKENIZER, else characters / 4."""

    def __init__(self) -> None:
        name = os.environ.get(TOKENIZER_ENV, "")
        self.tokenizer: Any = None
        if name:
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(name)

    def __call__(self, request: Request) -> int:
        texts = [m.content for m in request.messages] or [request.text]
        if self.tokenizer is None:
            return sum(math.ceil(len(t) / 4) for t in texts)
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if messages and getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
            prompt = len(ids)
        else:
            prompt = sum(len(self.tokenizer(t)["input_ids"]) for t in texts)
        # A log-likelihood request scores each choice after the prompt.
        return prompt + sum(len(self.tokenizer(c, add_special_tokens=False)["input_ids"]) for c in request.choices)


class DryModel(RandomModel):
    """`random`'s answers (so every dependent request is planned as in a real run), each carrying its request's token
    counts as usage: `prompt_tokens` and `max_new_tokens`, which the engine sums into the report."""

    def __init__(self) -> None:
        super().__init__(0)
        self.uri = "python:headline:DryModel"
        self.count = _Counter()

    def fingerprint(self) -> str:
        return "headline-dry-run:v1"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        answers = super().generate(requests)
        return [Response(text=a.text, logprobs=a.logprobs,
                         usage={"prompt_tokens": self.count(r),
                                "max_new_tokens": 0 if r.kind == "loglikelihood" else r.settings.max_new_tokens})
                for a, r in zip(answers, requests, strict=True)]


def dry_embed(texts: Sequence[str]) -> list[list[float]]:
    """FANToM's scoring embedder in a dry run: sentence embeddings are scoring requests, not model requests."""
    return [[1.0, float(len(t))] for t in texts]


# --- running the benchmarks ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    benchmark: str
    data: str
    questions: int
    requests: int
    tokens_in: int
    tokens_out: int
    seconds: float
    gates_passed: int
    gates: int

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def data_for(benchmark: str, data_dir: Path | None) -> tuple[Path, bool, tuple[str, ...]]:
    """The full release when the data folder has it, else the fixtures (a deliberately partial copy); and the settings
    that data needs: a ToMATO copy holding only the false-belief file (`tomato_fb.json`) runs that subset."""
    if data_dir is None or not (data_dir / benchmark).is_dir():
        return FIXTURES, True, ("partial=true", *FIXTURE_SETTINGS.get(benchmark, ()))
    tomato = data_dir / "tomato" / "dataset"
    if benchmark == "tomato" and not (tomato / "tomato.json").is_file() and (tomato / "tomato_fb.json").is_file():
        return data_dir, False, ("subset=fb",)
    return data_dir, False, ()


def pytest_command(benchmark: str, model: str, data: Path, settings: Sequence[str], report: Path, *,
                   sample: int | None, extra: Sequence[str]) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no", "--tom-progress=off",
           f"--tom-benchmark={benchmark}", f"--tom-model={model}", f"--tom-data-dir={data}", "--tom-no-cache",
           f"--tom-report={report}", *(f"--tom-threshold={benchmark}.{gate}" for gate in GATES)]
    cmd += [f"--tom-set={benchmark}.{setting}" for setting in settings]
    if sample:
        cmd.append(f"--tom-sample={sample}")
    return cmd + list(extra)


def run_one(benchmark: str, model: str, data_dir: Path | None, workdir: Path, env: dict[str, str], *,
            sample: int | None, dry: bool, extra: Sequence[str]) -> Row:
    data, partial, settings = data_for(benchmark, data_dir)
    report = workdir / f"{benchmark}.json"
    extra = [*extra, "--tom-set=fantom.embedder=python:headline:dry_embed"] if dry and benchmark == "fantom" else extra
    cmd = pytest_command(benchmark, model, data, settings, report, sample=sample, extra=extra)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    (workdir / f"{benchmark}.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode not in (0, 1) or not report.is_file():  # 1: a gate failed; anything else: no run
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise SystemExit(f"headline: {benchmark} did not run (exit {proc.returncode}):\n{tail}")
    result = json.loads(report.read_text(encoding="utf-8"))
    engine, usage = result["engine"], result["engine"].get("usage", {})
    gates = result.get("gates", [])
    label = "fixtures" if partial else " ".join(["local", *(s for s in settings if not s.startswith("partial"))])
    return Row(benchmark, label, engine["questions"], engine["model_requests"],
               usage.get("prompt_tokens", 0), usage.get("max_new_tokens" if dry else "completion_tokens", 0), seconds,
               sum(bool(g["passed"]) for g in gates), len(gates))


def table(rows: Sequence[Row], *, dry: bool) -> str:
    out_name = "max tokens out" if dry else "tokens out"
    head = ["benchmark", "data", "questions", "requests", "tokens in", out_name]
    head += [] if dry else ["wall s", "requests/s", "gates"]

    def cells(r: Row) -> list[str]:
        base = [r.benchmark, r.data, f"{r.questions:,}", f"{r.requests:,}", f"{r.tokens_in:,}", f"{r.tokens_out:,}"]
        return base if dry else [*base, f"{r.seconds:.1f}", f"{r.rate:.2f}", f"{r.gates_passed}/{r.gates} passed"]

    total = Row("total", "all", sum(r.questions for r in rows), sum(r.requests for r in rows),
                sum(r.tokens_in for r in rows), sum(r.tokens_out for r in rows), sum(r.seconds for r in rows),
                sum(r.gates_passed for r in rows), sum(r.gates for r in rows))
    body = [cells(r) for r in [*rows, total]]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    line = lambda row: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))  # noqa: E731
    return "\n".join([line(head), *(line(b) for b in body[:-1]), "-" * len(line(head)), line(body[-1])])


def tokenizer_for(model: str, given: str | None) -> str | None:
    if given:
        return given
    scheme, _, rest = model.partition(":")
    path = Path(rest.split("?", 1)[0]).expanduser()
    return str(path) if scheme in ("hf", "vllm") and path.is_dir() and (path / "tokenizer_config.json").is_file() else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     usage="%(prog)s [options] [MODEL_URI] [-- PYTEST_ARGS...]")
    parser.add_argument("model", nargs="?", help="a --tom-model URI (vllm:, openai:URL, hf:); not used by --dry-run")
    data_dir = os.environ.get("TOM_DATA_DIR")
    parser.add_argument("--data-dir", type=Path, default=Path(data_dir) if data_dir else None)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    parser.add_argument("--sample", type=int, help="a stratified sample of N questions per benchmark (--tom-sample)")
    parser.add_argument("--dry-run", action="store_true", help="count requests and tokens; no model is asked")
    parser.add_argument("--tokenizer", help="dry run: count tokens with this tokenizer (folder or cached hub id)")
    parser.add_argument("--keep", type=Path, help="keep each benchmark's JSON report and pytest log in this folder")
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    argv, pytest_args = argv[:cut], argv[cut + 1 :]  # after --: passed to every pytest run
    args = parser.parse_args(argv)
    if not args.dry_run and not args.model:
        parser.error("give a model URI, or --dry-run")
    names = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent), env.get("PYTHONPATH")) if p)
    model = args.model or ""
    counted_with = APPROXIMATION
    if args.dry_run:
        tokenizer = tokenizer_for(model, args.tokenizer)
        if tokenizer:
            env[TOKENIZER_ENV] = counted_with = tokenizer
        model = "python:headline:DryModel"
    with tempfile.TemporaryDirectory(prefix="tom-headline-") as tmp:
        workdir = args.keep or Path(tmp)  # a folder with no pytest configuration: only the named benchmark is collected
        workdir.mkdir(parents=True, exist_ok=True)
        rows = []
        for name in names:
            rows.append(run_one(name, model, args.data_dir, workdir, env, sample=args.sample, dry=args.dry_run,
                                extra=pytest_args))
            print(f"headline: {name} done in {rows[-1].seconds:.1f} s", file=sys.stderr, flush=True)
    print(f"model: {'(dry run: no model; tokens counted with ' + counted_with + ')' if args.dry_run else args.model}")
    print(table(rows, dry=args.dry_run))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
