"""Is an `hf:` / `vllm:` target a model at all? Decided once, before any item: transformers asks the hub with retries
(a typo offline cost ~50 s and a traceback per item), so a target that is no folder, file, alias or cached model is
checked here (offline, or one short hub request) and fails as one `TomConfigError` naming the nearest candidates.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from pytest_tom.errors import TomConfigError
from pytest_tom.models._common import looks_local, parse_spec, require_existing
from pytest_tom.models.hf.gguf import SMOLLM2_ALIASES
from pytest_tom.suggest import did_you_mean, nearest

HUB_TIMEOUT = 5.0  # Seconds the one hub request may take; an answer from the hub API takes well under one.

_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_MAX_LISTED = 2000  # Folder entries looked at for suggestions, so a huge working directory costs no time.


def check_hf(spec: str, *, uri: str) -> None:
    """The `hf:` check: `spec` is the part after `hf:`; GGUF options are left to the backend."""
    from pytest_tom.models.hf import OPTIONS

    parsed = parse_spec("hf", spec, OPTIONS)
    if not (parsed["gguf_file"] or parsed["convert"]):
        check_target(parsed.target, uri=uri, scheme="hf", aliases=SMOLLM2_ALIASES)


def check_vllm(spec: str, *, uri: str) -> None:
    """The `vllm:` check (vLLM resolves a name that is no folder through the hub as transformers does)."""
    from pytest_tom.models.vllm import OPTIONS

    parsed = parse_spec("vllm", spec, OPTIONS)
    if parsed["tokenizer"]:
        require_existing(str(parsed["tokenizer"]), uri=uri)
    if os.environ.get("VLLM_USE_MODELSCOPE", "").lower() not in ("1", "true"):  # else ids name ModelScope models
        check_target(parsed.target, uri=uri, scheme="vllm")


def check_target(target: str, *, uri: str, scheme: str, aliases: Sequence[str] = ()) -> None:
    """Raise one `TomConfigError` with suggestions unless `target` names a folder, file, alias, cached or hub model."""
    t = target.strip()
    if not t or Path(t).expanduser().exists() or t.lower() in aliases:
        return  # an empty target gets the backend's own message
    folders = folder_candidates(t)
    if looks_local(t):
        try:
            require_existing(t, uri=uri)
        except TomConfigError as exc:
            raise TomConfigError(_with_hint(str(exc), nearest(t, folders), scheme)) from None
        return
    cache = hub_cache_dir()
    if (cached := cached_model_ids(cache)) is None or t in cached:
        return  # a cached model, or no huggingface_hub (it comes with transformers and vLLM): the backend reports that
    if (offline := offline_variable()) is not None:
        why = f"{offline} is set, so the hub was not asked"
    else:
        verdict, why = ask_hub(t)
        if verdict in ("exists", "unknown"):
            return
    candidates = [*aliases, *cached, *folders]
    message = (f"--tom-model {uri}: {t!r} is no model folder, file, alias or model in the local hub cache "
               f"({cache}), and {why}")
    raise TomConfigError(_with_hint(message, nearest(t, candidates), scheme))


def _with_hint(message: str, found: Sequence[str], scheme: str) -> str:
    hint = did_you_mean(f"{scheme}:{name}" for name in found)
    return f"{message}; {hint}" if hint else message


def offline_variable() -> str | None:
    """The name of the set HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE variable (huggingface_hub's truth values), or None."""
    return next((n for n in _OFFLINE_VARIABLES if os.environ.get(n, "").upper() in ("1", "ON", "YES", "TRUE")), None)


def hub_cache_dir() -> Path:
    """Where huggingface_hub keeps downloaded repos, read from the environment now (it reads it once, at import)."""
    value = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if not value:
        home = os.environ.get("HF_HOME") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
        value = os.path.join(home, "hub")
    return Path(os.path.expandvars(os.path.expanduser(value)))


def cached_model_ids(cache: Path) -> list[str] | None:
    """The model repo ids in the hub cache `cache` (none when it does not exist; None without huggingface_hub)."""
    try:
        from huggingface_hub import scan_cache_dir
        from huggingface_hub.utils import CacheNotFound  # type: ignore[attr-defined]  # see _ask_hub
    except ImportError:
        return None
    try:
        info = scan_cache_dir(cache)
    except (CacheNotFound, OSError):
        return []
    return sorted(repo.repo_id for repo in info.repos if repo.repo_type == "model")


def folder_candidates(target: str) -> list[str]:
    """Folders and .gguf files beside where `target` would be, written as the target is (`models/x`, `./x`)."""
    raw = target.strip().rstrip("/\\")
    parent_text, sep, _ = raw.replace("\\", "/").rpartition("/")
    parent = Path(parent_text or ("/" if sep else ".")).expanduser()
    prefix = f"{parent_text}/" if sep else ""
    try:
        with os.scandir(parent) as entries:
            return [prefix + e.name for e in itertools.islice(entries, _MAX_LISTED)
                    if not e.name.startswith(".") and (e.is_dir() or e.name.endswith(".gguf"))]
    except OSError:
        return []


def ask_hub(repo_id: str) -> tuple[str, str]:
    """(verdict, words) after one hub request: "exists", "missing", "unreachable" or "unknown" (let the backend try);
    run in a daemon thread given `HUB_TIMEOUT` s in all, since a hanging name lookup escapes the HTTP timeout.
    """
    answer: list[tuple[str, str]] = []
    thread = threading.Thread(target=lambda: answer.append(_ask_hub(repo_id)), name="pytest-tom-hub-check", daemon=True)
    thread.start()
    thread.join(HUB_TIMEOUT + 0.5)
    if answer:
        return answer[0]
    return "unreachable", (f"the hub ({_endpoint()}) did not answer within {HUB_TIMEOUT:g} s; for a hub model check "
                           "the network, or set HF_HUB_OFFLINE=1 to use the cache only")


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _ask_hub(repo_id: str) -> tuple[str, str]:
    # huggingface_hub.utils has exported these in every release transformers >= 4.47 accepts (`errors` came later).
    from huggingface_hub import HfApi
    from huggingface_hub.utils import (  # type: ignore[attr-defined]
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        validate_repo_id,
    )

    try:
        validate_repo_id(repo_id)
    except ValueError:
        return "missing", "it is no valid hub id (NAME or ORG/NAME) either"
    endpoint = _endpoint()
    try:
        HfApi(endpoint=endpoint).model_info(repo_id, timeout=HUB_TIMEOUT)
    except GatedRepoError:
        return "exists", "a gated model"
    except RepositoryNotFoundError:
        return "missing", f"the hub ({endpoint}) has no model {repo_id!r} (or it is private and no token is set)"
    except HfHubHTTPError:
        return "unknown", "the hub answered with an error"
    except Exception as exc:  # noqa: BLE001 - no answer at all: DNS, refused connection, timeout, proxy
        first_line = (str(exc).strip().splitlines() or ["no answer"])[0]
        return "unreachable", (f"the hub ({endpoint}) is unreachable ({type(exc).__name__}: {first_line}); "
                               "for a hub model check the network, or set HF_HUB_OFFLINE=1 to use the cache only")
    return "exists", "on the hub"
