"""Turning chat messages into the exact text a model sees: a wrong template is the commonest way numbers stop matching
the papers. The model's own template (or a Jinja file, or none); system folded into the first user turn when the
template drops or rejects it; a hash with a probe rendering, so a changed template changes the cache fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomConfigError
from pytest_tom.request import Message

Renderer = Callable[[list[dict[str, str]], bool], str]  # (messages, continue_final_message) -> prompt text

PLAIN_SEPARATOR = "\n\n"
_SYS_PROBE = "<<pytest-tom system probe 5c1e>>"
_USER_PROBE = "<<pytest-tom user probe 9b2d>>"
SYSTEM_MODES = ("auto", "fold", "keep")


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

    def render(messages: list[dict[str, str]], continue_final: bool) -> str:
        text = compiled.render(messages=messages, add_generation_prompt=not continue_final, **tokens)
        if continue_final and messages:
            # Mirror transformers: cut everything the template adds after the final message.
            last = messages[-1]["content"]
            idx = text.rfind(last)
            if idx >= 0:
                text = text[: idx + len(last)]
        return text

    return render


class ChatFormatter:
    """Renders `Message`s with a chat template (or plain concatenation) and knows its own hash."""

    def __init__(self, *, template: str | None, source: str, renderer: Renderer | None, system: str = "auto") -> None:
        if system not in SYSTEM_MODES:
            raise TomConfigError(f"system={system}: expected one of {', '.join(SYSTEM_MODES)}")
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
            text = self.renderer(probe, False)
        except Exception:  # templates reject a system role by raising (raise_exception)
            text = None
        if text is not None and _SYS_PROBE in text:
            return True, text
        folded = [{"role": "user", "content": f"{_SYS_PROBE}{PLAIN_SEPARATOR}{_USER_PROBE}"}]
        try:
            return False, self.renderer(folded, False)
        except Exception as exc:
            raise TomConfigError(f"chat template ({self.source}) cannot render a single user message: {exc}") from None

    def hash(self) -> str:
        """Identity of the whole rendering, for the fingerprint and the report."""
        parts = {"template": self.template, "probe": self.probe, "fold": self.fold,
                 "separator": PLAIN_SEPARATOR if self.plain else None}
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        role = "n/a" if self.plain else ("folded into the first user turn" if self.fold else "native")
        return {"source": self.source, "hash": self.hash(), "system_role": role, "system_mode": self.system_mode}

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text; a final assistant message is continued rather than closed (prefill)."""
        if self.renderer is None:
            return PLAIN_SEPARATOR.join(m.content for m in messages)
        msgs = fold_system(messages) if self.fold else [m.to_dict() for m in messages]
        continue_final = bool(msgs) and msgs[-1]["role"] == "assistant"
        return self.renderer(msgs, continue_final)


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
