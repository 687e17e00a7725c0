"""What `hf:` and `vllm:` share: turning chat messages into token ids, and a checkpoint's identity. Both must send
byte-identical prompts for one checkpoint, so that a `vllm:` run reproduces an `hf:` run and the template hash means the
same in both reports; that holds only if the code exists once. No torch or transformers import here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError
from pytest_tom.models._chat import ChatFormatter, choose_template
from pytest_tom.models._common import combine, digest_files, file_digest, too_long
from pytest_tom.request import Message

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack")
CONFIG_FILES = ("config.json", "generation_config.json", "model.safetensors.index.json", "pytorch_model.bin.index.json")
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json", "vocab.txt",
    "merges.txt", "tokenizer.model", "spiece.model", "chat_template.jinja", "chat_template.json",
)


class TokenizedChat:
    """A tokenizer plus the `chat_template=` and `system=` options: the exact token ids a model sees."""

    def __init__(self, tokenizer: Any, *, chat_template: str | None, system: str) -> None:
        self.tokenizer = tokenizer
        own = getattr(tokenizer, "chat_template", None)
        template, source = choose_template(chat_template, own if isinstance(own, str) else None)
        self.template = template
        self.formatter = ChatFormatter(template=template, source=source, renderer=self._apply_template, system=system)

    def _apply_template(self, messages: list[dict[str, str]], continue_final: bool) -> str:
        # The tokenizer's own Jinja environment, so an override file renders exactly like a built-in template.
        return self.tokenizer.apply_chat_template(  # type: ignore[no-any-return]
            messages, chat_template=self.template, tokenize=False, add_generation_prompt=not continue_final,
            continue_final_message=continue_final)

    def encode_prompt(self, messages: Sequence[Message]) -> tuple[int, ...]:
        text = self.formatter.render(messages)
        # A rendered template already holds BOS and friends; plain prompts get the tokenizer's own.
        ids = self.tokenizer(text, add_special_tokens=self.formatter.plain)["input_ids"]
        return tuple(int(i) for i in ids)

    def encode_generate(self, messages: Sequence[Message], max_new_tokens: int, limit: int | None) -> tuple[int, ...]:
        """Prompt ids of a generate request; ValueError when prompt and answer do not fit `limit` positions."""
        ids = self.encode_prompt(messages)
        if limit and len(ids) + max_new_tokens > limit:
            raise ValueError(too_long(len(ids), max_new_tokens, limit))
        return ids

    @property
    def model_max_length(self) -> int | None:
        """The tokenizer's context length, unless it is transformers' "no limit" placeholder."""
        n = getattr(self.tokenizer, "model_max_length", None)
        return n if isinstance(n, int) and 0 < n < 10**7 else None

    def encode_choice(self, choice: str) -> tuple[int, ...]:
        """A choice is tokenised alone, so its tokens never depend on the prompt's last characters."""
        return tuple(int(i) for i in self.tokenizer(choice, add_special_tokens=False)["input_ids"])

    def encode_loglikelihood(self, messages: Sequence[Message],
                             choices: Sequence[str]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
        """(prompt ids, one continuation per choice) of a log-likelihood request; ValueError if it cannot be scored."""
        ids = self.encode_prompt(messages)
        if not choices:
            raise ValueError("a loglikelihood request needs at least one choice")
        if not ids:
            raise ValueError("cannot score a continuation of an empty prompt")
        conts = [self.encode_choice(c) for c in choices]
        for k, cont in enumerate(conts):
            if not cont:
                raise ValueError(f"choice {k} ({choices[k]!r}) tokenises to nothing")
        return ids, conts


def local_fingerprint(folder: Path, *, gguf_file: str | None = None, full: bool = False) -> dict[str, Any]:
    """Digests of everything in a checkpoint folder that changes answers (of a GGUF checkpoint, its one file)."""
    if gguf_file:
        return {"weights": {gguf_file: file_digest(folder / gguf_file, full=full)}}
    weights = [p for p in folder.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES) and "training_args" not in p.name]
    return {"weights": digest_files(weights, full=full),
            "config": digest_files((folder / n for n in CONFIG_FILES), full=True),
            "tokenizer": digest_files((folder / n for n in TOKENIZER_FILES), full=True)}


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
