"""Turning chat messages into the exact text (and, for `hf:` and `vllm:`, token ids) a model sees: a wrong template is
the commonest way numbers stop matching the papers. The model's own template (or a Jinja file, or none); system folded
into the first user turn when the template drops or rejects it; a hash with a probe rendering, so a changed template
changes the cache fingerprint. `hf:` and `vllm:` share `TokenizedChat` and the checkpoint identity, so that a `vllm:` run
reproduces an `hf:` run only if the code exists once. No torch or transformers import here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError
from pytest_tom.models._common import Option, combine, digest_files, file_digest, too_long
from pytest_tom.request import Message, Request

# (messages, continue_final_message, add_generation_prompt) -> prompt text; the two flags are never both true.
Renderer = Callable[[list[dict[str, str]], bool, bool], str]

PLAIN_SEPARATOR = "\n\n"
_SYS_PROBE = "<<pytest-tom system probe 5c1e>>"
_USER_PROBE = "<<pytest-tom user probe 9b2d>>"
SYSTEM_MODES = ("auto", "fold", "keep")
# Shared by every backend that renders a chat template itself (`hf:`, `vllm:`, `openai:` with a template file).
GENERATION_PROMPT = Option(
    "generation_prompt", kind="bool", default=True,
    help="true: end the prompt with the template's assistant header; false: render exactly "
         "apply_chat_template(messages), as ToMBench's and ToMATO's local runners do")
# The options of `hf:` and `vllm:` that say how prompts are tokenised and the checkpoint identified, alike in both.
TOKENIZED_OPTIONS = (
    Option("chat_template", default="auto", help="auto (the tokenizer's), none (plain concatenation) or a Jinja file"),
    Option("system", default="auto", help="auto (fold only if the template drops or rejects system), fold, keep",
           choices=SYSTEM_MODES),
    Option("revision", default=None, help="hub revision (branch, tag or commit)"),
    Option("trust_remote_code", kind="bool", default=False),
    Option("fingerprint", default="sampled", help="sampled (size + first/middle/last MiB) or full (hash every byte)",
           choices=("sampled", "full")),
    GENERATION_PROMPT,
)


def read_template_file(path: str | Path) -> str:
    """Read a Jinja chat template; a `chat_template.json` / tokenizer_config-style JSON also works."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TomConfigError(f"chat_template={path}: cannot read the template file: {exc.strerror or exc}") from None
    if p.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TomConfigError(f"chat_template={path}: invalid JSON ({exc.msg})") from None
        template = data.get("chat_template") if isinstance(data, dict) else None
        if not isinstance(template, str):
            raise TomConfigError(f"chat_template={path}: the JSON file has no string 'chat_template' field")
        return template
    return text


def jinja_renderer(template: str, special_tokens: dict[str, str] | None = None) -> Renderer:
    """Render a chat template without a tokenizer (completions endpoint) in an environment mirroring transformers'."""
    try:
        import jinja2
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:  # jinja2 ships with transformers and with most installs
        raise TomConfigError(f"a chat_template file needs jinja2: pip install jinja2 ({exc})") from exc

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    compiled = env.from_string(template)
    tokens = dict(special_tokens or {})

    def render(messages: list[dict[str, str]], continue_final: bool, generation_prompt: bool) -> str:
        text = compiled.render(messages=messages, add_generation_prompt=generation_prompt, **tokens)
        if continue_final and messages:
            # Mirror transformers: cut everything the template adds after the final message.
            last = messages[-1]["content"]
            idx = text.rfind(last)
            if idx >= 0:
                text = text[: idx + len(last)]
        return text

    return render


class ChatFormatter:
    """Renders `Message`s with a chat template (or plain concatenation) and knows its own hash. Without
    `generation_prompt` the render stops after the last turn, as `apply_chat_template(messages)` does by default: the
    model then writes its own role header (ToMBench's and ToMATO's local runners prompt that way).
    """

    def __init__(self, *, template: str | None, source: str, renderer: Renderer | None, system: str = "auto",
                 generation_prompt: bool = True) -> None:
        if system not in SYSTEM_MODES:
            raise TomConfigError(f"system={system}: expected one of {', '.join(SYSTEM_MODES)}")
        if template is None and not generation_prompt:
            raise TomConfigError("generation_prompt=false needs a chat template: without one (chat_template=none, or a "
                                 "model that has none) prompts are plain text, with no assistant header to leave out")
        self.generation_prompt = generation_prompt
        self.template = template
        self.source = source  # "tokenizer", "file:<path>" or "none" (plain concatenation).
        self.renderer = renderer if template is not None else None
        self.system_mode = system
        self.probe = ""
        self.system_supported: bool | None = None
        if self.renderer is not None:
            self.system_supported, self.probe = self._probe_system()
        self.fold = self.renderer is not None and (system == "fold" or (system == "auto" and not self.system_supported))

    @property
    def plain(self) -> bool:
        return self.renderer is None

    def _probe_system(self) -> tuple[bool, str]:
        """Does the template keep a system message? Render one and look for its text."""
        assert self.renderer is not None
        probe = [{"role": "system", "content": _SYS_PROBE}, {"role": "user", "content": _USER_PROBE}]
        try:
            text = self.renderer(probe, False, self.generation_prompt)
        except Exception:  # templates reject a system role by raising (raise_exception)
            text = None
        if text is not None and _SYS_PROBE in text:
            return True, text
        folded = [{"role": "user", "content": f"{_SYS_PROBE}{PLAIN_SEPARATOR}{_USER_PROBE}"}]
        try:
            return False, self.renderer(folded, False, self.generation_prompt)
        except Exception as exc:
            raise TomConfigError(f"chat template ({self.source}) cannot render a single user message: {exc}") from None

    def hash(self) -> str:
        """Identity of the whole rendering, for the fingerprint and the report."""
        parts = {"template": self.template, "probe": self.probe, "fold": self.fold,
                 "separator": PLAIN_SEPARATOR if self.plain else None}
        if not self.generation_prompt:  # only then, so the default's hashes (and cache keys) stay as they were
            parts["generation_prompt"] = False
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        role = "n/a" if self.plain else ("folded into the first user turn" if self.fold else "native")
        return {"source": self.source, "hash": self.hash(), "system_role": role, "system_mode": self.system_mode,
                "generation_prompt": self.generation_prompt}

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text; a final assistant message is continued (prefill), even without `generation_prompt`."""
        if self.renderer is None:
            return PLAIN_SEPARATOR.join(m.content for m in messages)
        msgs = fold_system(messages) if self.fold else [m.to_dict() for m in messages]
        continue_final = bool(msgs) and msgs[-1]["role"] == "assistant"
        return self.renderer(msgs, continue_final, self.generation_prompt and not continue_final)


def fold_system(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Move each system message's text to the front of the next user turn (blank-line separated)."""
    out: list[dict[str, str]] = []
    pending: list[str] = []
    for m in messages:
        if m.role == "system":
            pending.append(m.content)
            continue
        if pending and m.role == "user":
            out.append({"role": "user", "content": PLAIN_SEPARATOR.join([*pending, m.content])})
            pending = []
        else:
            out.append(m.to_dict())
    if pending:  # system text with no user turn after it becomes the user turn
        out.append({"role": "user", "content": PLAIN_SEPARATOR.join(pending)})
    return out


def choose_template(option: str | None, own_template: str | None) -> tuple[str | None, str]:
    """Resolve `chat_template=` (auto: the model's own, else plain; none: plain; else a file) to (template, source)."""
    value = (option or "auto").strip()
    if value == "none":
        return None, "none"
    if value == "auto":
        return (own_template, "tokenizer") if own_template else (None, "none")
    return read_template_file(value), f"file:{Path(value).expanduser()}"


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack")
CONFIG_FILES = ("config.json", "generation_config.json", "model.safetensors.index.json", "pytorch_model.bin.index.json")
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json", "vocab.txt",
    "merges.txt", "tokenizer.model", "spiece.model", "chat_template.jinja", "chat_template.json",
)


class TokenizedChat:
    """A tokenizer plus the template options (`chat_template=`, `system=`, `generation_prompt=`): the exact ids sent."""

    def __init__(self, tokenizer: Any, *, chat_template: str | None, system: str, generation_prompt: bool = True) -> None:
        self.tokenizer = tokenizer
        own = getattr(tokenizer, "chat_template", None)
        template, source = choose_template(chat_template, own if isinstance(own, str) else None)
        self.template = template
        self.formatter = ChatFormatter(template=template, source=source, renderer=self._apply_template, system=system,
                                       generation_prompt=generation_prompt)

    def _apply_template(self, messages: list[dict[str, str]], continue_final: bool, generation_prompt: bool) -> str:
        # The tokenizer's own Jinja environment, so an override file renders exactly like a built-in template.
        return self.tokenizer.apply_chat_template(  # type: ignore[no-any-return]
            messages, chat_template=self.template, tokenize=False, add_generation_prompt=generation_prompt,
            continue_final_message=continue_final)

    def encode_prompt(self, messages: Sequence[Message]) -> tuple[int, ...]:
        text = self.formatter.render(messages)
        # A rendered template already holds BOS and friends; plain prompts get the tokenizer's own.
        ids = self.tokenizer(text, add_special_tokens=self.formatter.plain)["input_ids"]
        return tuple(int(i) for i in ids)

    @property
    def model_max_length(self) -> int | None:
        """The tokenizer's context length, unless it is transformers' "no limit" placeholder."""
        n = getattr(self.tokenizer, "model_max_length", None)
        return n if isinstance(n, int) and 0 < n < 10**7 else None

    def encode_choice(self, choice: str) -> tuple[int, ...]:
        """A choice is tokenised alone, so its tokens never depend on the prompt's last characters."""
        return tuple(int(i) for i in self.tokenizer(choice, add_special_tokens=False)["input_ids"])

    def encode_requests(self, requests: Sequence[Request], limit: int | None, *, fit_choices: bool = False,
                        ) -> Iterator[tuple[int, tuple[int, ...], list[tuple[int, ...]] | None, str | None]]:
        """(index, prompt ids, choice ids or None for generate, why it cannot be sent or None) of each request; a
        prompt and its answer must fit `limit` positions (with `fit_choices`, prompt and each choice too).
        """
        for i, r in enumerate(requests):
            try:
                if r.kind not in ("generate", "loglikelihood"):
                    raise ValueError(f"unknown request kind {r.kind!r}")
                ids, conts = self.encode_prompt(r.messages), None
                if r.kind == "loglikelihood":
                    conts = self._encode_choices(ids, r.choices, limit if fit_choices else None)
                elif limit and len(ids) + r.settings.max_new_tokens > limit:
                    raise ValueError(too_long(len(ids), r.settings.max_new_tokens, limit))
            except Exception as exc:
                yield i, (), None, f"{type(exc).__name__}: {exc}"
                continue
            yield i, ids, conts, None

    def _encode_choices(self, ids: tuple[int, ...], choices: Sequence[str], limit: int | None) -> list[tuple[int, ...]]:
        if not choices:
            raise ValueError("a loglikelihood request needs at least one choice")
        if not ids:
            raise ValueError("cannot score a continuation of an empty prompt")
        conts = [self.encode_choice(c) for c in choices]
        for k, cont in enumerate(conts):
            if not cont:
                raise ValueError(f"choice {k} ({choices[k]!r}) tokenises to nothing")
        for k, cont in enumerate(conts):
            if limit and len(ids) + len(cont) > limit:
                raise ValueError(f"prompt + choice {k} ({len(ids) + len(cont)} tokens) exceeds the model's {limit} positions")
        return conts

def local_fingerprint(path: Path, *, full: bool = False) -> dict[str, Any]:
    """Digests of everything in a checkpoint folder that changes answers (of a GGUF file, that file)."""
    if path.is_file():
        return {"weights": {path.name: file_digest(path, full=full)}}
    weights = [p for p in path.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES) and "training_args" not in p.name]
    return {"weights": digest_files(weights, full=full),
            "config": digest_files((path / n for n in CONFIG_FILES), full=True),
            "tokenizer": digest_files((path / n for n in TOKENIZER_FILES), full=True)}


def hub_fingerprint(repo: str, revision: str | None, commit: str | None, *, full: bool = False,
                    download: bool = False) -> dict[str, Any]:
    """A hub model's identity: its snapshot's files (fetched first when `download`), else the commit hash."""
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(repo_id=repo, revision=revision, local_files_only=not download))
        return {"repo": repo, **local_fingerprint(folder, full=full)}
    except Exception as exc:
        if not commit:
            raise TomConfigError(f"cannot fingerprint {repo!r}: not a local folder and no hub snapshot ({exc})") from None
        return {"repo": repo, "commit": commit}


def fingerprint_parts(backend: str, version: int, files: Mapping[str, Any], chat: TokenizedChat,
                      **identity: Any) -> dict[str, Any]:
    """Everything that changes a checkpoint's answers: files, template hash, backend version, and `identity` (dtype...)."""
    return {"backend": f"{backend}-v{version}", "files": dict(files), "template": chat.formatter.hash(), **identity}


def file_hashes(files: Mapping[str, Any]) -> dict[str, str | None]:
    """The report's weights/config/tokenizer hashes (a hub id fingerprinted by commit has only that)."""
    return {
        "weights_hash": combine(files.get("weights", {})) if "weights" in files else files.get("commit"),
        "config_hash": combine(files["config"]) if "config" in files else None,
        "tokenizer_hash": combine(files["tokenizer"]) if "tokenizer" in files else None,
    }
