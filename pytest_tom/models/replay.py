"""`replay:PATH`: answers recorded earlier (a `--tom-report` JSON or a JSONL of key/text lines), for CI without a model.
A request that was not recorded is an error, never a guess: a stale recording must fail loudly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from pytest_tom.errors import TomConfigError, TomDataError
from pytest_tom.models.base import Model
from pytest_tom.request import Request, Response


class ReplayModel(Model):
    batch_size = 4096

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uri = f"replay:{path}"
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise TomConfigError(f"--tom-model replay:{path}: cannot read: {exc.strerror}") from exc
        self._fp = hashlib.sha256(raw).hexdigest()
        self.answers: dict[str, dict[str, object]] = {}
        text = raw.decode("utf-8")
        if text.lstrip().startswith("{") and '"schema_version"' in text[:2000]:
            responses = json.loads(text).get("responses")
            if not isinstance(responses, dict):
                raise TomDataError("report has no responses table", path=path, field="responses")
            self.answers = {key: rec for key, rec in responses.items() if isinstance(rec, dict)}
        else:
            for lineno, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TomDataError(f"invalid JSON: {exc.msg}", path=path, record=f"line {lineno}") from None
                if not isinstance(rec, dict) or "key" not in rec:
                    raise TomDataError("missing", path=path, record=f"line {lineno}", field="key")
                self.answers[str(rec["key"])] = rec

    def fingerprint(self) -> str:
        return f"replay:{self._fp}"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        out = []
        for r in requests:
            rec = self.answers.get(r.key)
            if rec is None:
                out.append(Response(error=f"no recorded answer for request {r.key[:12]} in {self.path}"))
            elif rec.get("error"):
                out.append(Response(error=str(rec["error"])))
            else:
                lp = rec.get("logprobs")
                out.append(Response(text=rec.get("text"), logprobs=tuple(lp) if isinstance(lp, list) else None))  # type: ignore[arg-type]
        return out


def make(spec: str) -> ReplayModel:
    if not spec:
        raise TomConfigError("--tom-model replay:PATH needs the path of a recorded report or JSONL file")
    return ReplayModel(Path(spec).expanduser())
