"""Shared plumbing of the real backends: URI options, file fingerprints, cache folders. Only the standard library is
imported here, so `import pytest_tom` stays free of torch, transformers, openai and vllm until a scheme that needs them
is used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from pytest_tom.errors import TomConfigError
from pytest_tom.request import Request, Response

MiB = 1024 * 1024

_FLAGS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
_NUMBERS: dict[str, tuple[Callable[[str], Any], str]] = {"int": (int, "an integer"), "float": (float, "a number")}


@dataclass(frozen=True, slots=True)
class Option:
    """One `?key=value` option a scheme accepts; `kind` is "str", "int", "float" or "bool"."""

    name: str
    kind: str = "str"
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] = ()

    def convert(self, scheme: str, raw: str) -> Any:
        where = f"--tom-model {scheme}:...?{self.name}={raw}"
        if self.kind in _NUMBERS:
            convert, what = _NUMBERS[self.kind]
            try:
                return convert(raw)
            except ValueError:
                raise TomConfigError(f"{where}: expected {what}") from None
        if self.kind == "bool":
            if (flag := _FLAGS.get(raw.strip().lower())) is None:
                raise TomConfigError(f"{where}: expected true or false")
            return flag
        if self.choices and raw not in self.choices:
            raise TomConfigError(f"{where}: expected one of {', '.join(self.choices)}")
        return raw


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed `scheme:TARGET?key=value&...` model URI."""

    scheme: str
    target: str
    options: Mapping[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.options[name]


def parse_spec(scheme: str, spec: str, options: Sequence[Option], *, forbidden: Mapping[str, str] | None = None) -> Spec:
    """Split `spec` into target and typed, URL-decoded options; an unknown option fails (never a silent default)."""
    target, sep, query = spec.partition("?")
    known = {o.name: o for o in options}
    values: dict[str, Any] = {o.name: o.default for o in options}
    if sep:
        for key, raw in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
            if forbidden and key in forbidden:
                raise TomConfigError(f"--tom-model {scheme}:...?{key}=: {forbidden[key]}")
            opt = known.get(key)
            if opt is None:
                raise TomConfigError(f"--tom-model {scheme}:{target}?{key}=...: unknown option {key!r}; "
                                     f"known: {', '.join(sorted(known))}")
            values[key] = opt.convert(scheme, raw)
    return Spec(scheme=scheme, target=target.strip(), options=values)


_DRIVE = re.compile(r"^[A-Za-z]:([\\/]|$)")


def looks_local(target: str) -> bool:
    """True when `target` can only be a path on disk (a missing one is then a usage error, not a hub lookup per item);
    a bare 'dir/sub' stays a hub id, as it cannot be told from ORG/NAME ('./dir/sub' can).
    """
    t = target.strip()
    return (t.startswith(("/", "~", ".", "\\")) or bool(_DRIVE.match(t)) or "\\" in t or t.count("/") > 1)


def require_existing(target: str, *, uri: str) -> None:
    """Raise a `TomConfigError` naming the resolved path if a local-looking `target` is missing (before any import)."""
    path = Path(target.strip()).expanduser()
    if not looks_local(target) or path.exists():
        return
    kind = "file" if path.suffix.lower() == ".gguf" else "folder"
    hint = "; a hub id is NAME or ORG/NAME"
    if "\\" in target and os.sep != "\\":
        hint += "; backslashes are not path separators on this system"
    raise TomConfigError(f"--tom-model {uri}: no such {kind}: {os.path.abspath(path)} (the target is a local path{hint})")


def models_root() -> Path:
    """Where converted checkpoints live: $TOM_MODEL_DIR (CI keeps those across runs), else beside the response cache."""
    if value := os.environ.get("TOM_MODEL_DIR"):
        return Path(value).expanduser()
    if value := os.environ.get("TOM_CACHE_DIR"):
        return Path(value).expanduser() / "models"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-tom" / "models"


def file_digest(path: Path, *, full: bool = False, sample: int = MiB) -> str:
    """A content hash of one file, independent of its mtime and name. Sampled (default): size and first, middle, last
    MiB, milliseconds for 16 GB (retraining alters the header or samples); a same-size edit elsewhere needs `full=True`.
    """
    size = path.stat().st_size
    h = hashlib.sha256()
    with path.open("rb") as fh:
        if full or size <= 3 * sample:
            h.update(b"full\0")
            for block in iter(lambda: fh.read(4 * MiB), b""):
                h.update(block)
        else:
            h.update(f"sampled:{size}:{sample}\0".encode())
            for offset in (0, (size - sample) // 2, size - sample):
                fh.seek(offset)
                h.update(fh.read(sample))
    return h.hexdigest()


def digest_files(paths: Iterable[Path], *, full: bool = False) -> dict[str, str]:
    return {p.name: file_digest(p, full=full) for p in sorted(paths) if p.is_file()}


def combine(parts: Mapping[str, Any]) -> str:
    """One sha256 over a mapping, stable across key order."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def loglikelihood_response(choices: Sequence[str], logprobs: Sequence[float], counts: Sequence[int], *,
                           prompt_tokens: int, usage: Mapping[str, int] | None = None) -> Response:
    """The answer to a log-likelihood request, alike in every backend: `text` is the best choice (first on a tie)."""
    scores = tuple(float(lp) for lp in logprobs)
    best = max(range(len(scores)), key=scores.__getitem__)
    spend = {"prompt_tokens": int(prompt_tokens), "scored_tokens": int(sum(counts))}
    spend.update(usage or {})
    return Response(text=choices[best], logprobs=scores, choice_tokens=tuple(int(n) for n in counts), usage=spend)


class ChoiceScores:
    """Collects the per-choice scores of log-likelihood requests and answers a request once all its choices are in."""

    def __init__(self, requests: Sequence[Request]) -> None:
        self.requests = requests
        self._got: dict[int, dict[int, tuple[float, int] | str]] = {}

    def add(self, index: int, choice: int, score: tuple[float, int] | str, prompt_tokens: int) -> Response | None:
        """Record (log-probability, tokens) or an error for one choice; the request's response when it was the last."""
        got = self._got.setdefault(index, {})
        got[choice] = score
        request = self.requests[index]
        if len(got) < len(request.choices):
            return None
        del self._got[index]
        ordered = [got[k] for k in range(len(got))]
        pairs = [s for s in ordered if not isinstance(s, str)]
        if len(pairs) < len(ordered):
            return Response(error=next(s for s in ordered if isinstance(s, str)))
        return loglikelihood_response(request.choices, [lp for lp, _ in pairs], [n for _, n in pairs],
                                      prompt_tokens=prompt_tokens)


def too_long(prompt_tokens: int, new_tokens: int, limit: int) -> str:
    """Why a request is not sent: a backend would silently cut the prompt (or the answer) to fit its context."""
    return (f"prompt of {prompt_tokens:,} tokens + {new_tokens:,} new tokens exceeds the model's {limit:,} positions; "
            "not sent, because truncating it would silently drop part of the prompt or the answer (use a model with a "
            "longer context, or a smaller generation budget or shorter prompts where the benchmark offers them)")


def cut_at_stops(text: str, stop: Sequence[str] = (), stop_after: Sequence[str] = ()) -> str:
    """The answer as a backend that halts at the first stop string it completes returns it: `stop` strings are cut with
    what follows (OpenAI), `stop_after` ones kept; so per-token backends and APIs return the same text.
    """
    best: tuple[int, int] | None = None  # (end of the first completed stop string, cut position)
    for strings, keep in ((stop, False), (stop_after, True)):
        for s in strings:
            i = text.find(s) if s else -1
            if i >= 0:
                end = i + len(s)
                candidate = (end, end if keep else i)
                if best is None or candidate < best:
                    best = candidate
    return text if best is None else text[: best[1]]


def dtype_kwarg(transformers: Any, value: Any) -> dict[str, Any]:
    """Pass a dtype as transformers >= 4.56 wants (`dtype=`) or as older releases (>= 4.47) want (`torch_dtype=`)."""
    try:
        major, minor = (int(x) for x in str(transformers.__version__).split(".")[:2])
    except ValueError:
        return {"dtype": value}
    return {"dtype": value} if (major, minor) >= (4, 56) else {"torch_dtype": value}
