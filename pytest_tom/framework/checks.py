"""Whole-release checks every loader shares: strict JSON, ids, options, gold, pinned checksums. A release file goes wrong
the same way in every benchmark (a doubled JSON key flips a gold silently, U+2028 splits a JSONL record, two records
share an id, a file was edited since it was pinned); each check raises a `TomDataError` naming file, record and field,
before any model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomDataError
from pytest_tom.fetch import sha256_file

ID_FIELDS = ("id", "q_id", "set_id", "story_id")
"""Fields that name a record in messages, when a whole-file JSON list's record has one."""


def _find(value: Any, doubled: Mapping[int, str], trail: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], str] | None:
    """Where the first dict with a doubled key sits in `value` (its path of keys and indexes), and the key."""
    if id(value) in doubled:
        return trail, doubled[id(value)]
    for k, v in value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ():
        if isinstance(v, (dict, list)) and (hit := _find(v, doubled, (*trail, k))) is not None:
            return hit
    return None


def field_path(trail: Sequence[str | int]) -> str:
    """`("beliefQAs", 0, "correct_answer")` -> "beliefQAs[0].correct_answer"."""
    out = ""
    for part in trail:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def loads(text: str, path: Path, *, record: str | None = None) -> Any:
    """JSON text of one file (or one JSONL line, `record`), refusing an object with a key given twice. A whole-file list
    names the record by index (and id field) and the field by its path in the record.
    """
    doubled: dict[int, str] = {}  # id() of each object with a key given twice -> its first doubled key

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:  # dicts as `json` builds them, remembering doubled keys
        out = dict(items)
        if len(out) != len(items):
            doubled[id(out)] = next(k for i, (k, _) in enumerate(items) if any(k == j for j, _ in items[:i]))
        return out

    try:
        value = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        where = f"at column {exc.colno}" if record is not None else f"at line {exc.lineno}, column {exc.colno}"
        raise TomDataError(f"invalid JSON ({exc.msg} {where})", path=path, record=record) from None
    if doubled:
        hit = _find(value, doubled)
        assert hit is not None  # every remembered dict is part of the value
        trail, key = hit
        if record is None and trail:
            head, trail = trail[0], trail[1:]
            record = _record_name(value, head)
        raise TomDataError(
            f"the key {key!r} is given twice in one object; JSON readers keep only the last copy, so the first would "
            "be dropped silently (a doubled answer key flips the gold): remove one", path=path, record=record,
            field=field_path([*trail, key]))
    return value


def _record_name(value: Any, head: str | int) -> str:
    if isinstance(head, int):
        rec = value[head]
        named = next((f" ({k} {rec[k]!r})" for k in ID_FIELDS if isinstance(rec, dict) and isinstance(rec.get(k), str)), "")
        return f"#{head}{named}"
    return str(head)  # a top-level key names the record as it is (ToMValley: trial50)


def read_text(path: Path) -> str:
    """A release file as text: UTF-8, a leading byte-order mark dropped (valid, if unusual, in a JSON file)."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TomDataError(f"cannot read: {exc}", path=path) from exc


def read_json(path: Path) -> Any:
    """A whole-file JSON release (FANToM, ToMATO, ToMValley): a BOM is accepted, a key given twice is an error."""
    return loads(read_text(path), path)


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    r"""(line number, object) for each non-blank line of a JSON-lines release (SimpleToM, ToMBench). Split at "\n" only:
    `str.splitlines` also splits at U+2028/U+2029/U+0085, valid raw inside a JSON string.
    """
    out = []
    for no, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        rec = loads(line, path, record=f"line {no}")
        if not isinstance(rec, dict):
            raise TomDataError(f"expected a JSON object, got {type(rec).__name__}", path=path, record=f"line {no}")
        out.append((no, rec))
    return out


def distinct_options(texts: Sequence[str], gold: int, path: Path, record: str, fields: Sequence[str], *,
                     gold_only: bool = False) -> None:
    """Options of one question must differ in text (trimmed): with a doubled text the answer is ambiguous. `gold_only`
    refuses only a gold whose text is another option's: ToMBench's release has two questions with a doubled distractor,
    which stay.
    """
    first: dict[str, int] = {}
    for i, text in enumerate(texts):
        j = first.setdefault(text.strip(), i)
        if j == i or (gold_only and gold not in (i, j)):
            continue
        gold_is = " the gold's text" if gold in (i, j) else " the same text"
        raise TomDataError(f"options {fields[j]} and {fields[i]} have{gold_is} {text.strip()!r:.80}: the answer would "
                           "be ambiguous", path=path, record=record, field=fields[i])


def check_sha256(path: Path, expected: str | None, *, benchmark: str, given: bool, partial: bool) -> None:
    """A local file must have its pinned sha256 (or the one the user `given`), unless the copy is `partial`. Counts catch a
    file cut short; only the checksum catches one edited in place with its counts intact.
    """
    if partial or expected is None:
        return
    got = sha256_file(path)
    if got == expected:
        return
    if given:
        raise TomDataError(f"this file has sha256 {got}, not the {expected} given in --tom-set {benchmark}.sha256",
                           path=path)
    raise TomDataError(
        f"this file has sha256 {got}, not the {expected} of the pinned {benchmark} release: it was edited, "
        f"re-serialized or comes from another revision, and its scores would not be the release's. Restore it, give "
        f"its checksum with --tom-set {benchmark}.sha256, or pass --tom-set {benchmark}.partial=true (suite keyword "
        "partial=True) to run a deliberately changed copy", path=path)
