"""Typed readers of one field of a JSON release record, each failing with the file, the record and the field. A value a
user edited wrongly must stop the run saying where it is (`file x.jsonl, record line 2, field 'OPTION-B': wrong type:
expected text, got int 7`), never become a different item. Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_tom.errors import TomDataError


def shown(value: Any) -> str:
    """A value's repr, cut to 60 characters: enough to recognise it in a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def wrong_type(expected: str, value: Any) -> str:
    """The message for a value of the wrong JSON type, naming the type (a number is not a missing option)."""
    return f"wrong type: expected {expected}, got {type(value).__name__} {shown(value)}"


def _error(message: str, key: str, path: Path, record: str, where: str) -> TomDataError:
    return TomDataError(message, path=path, record=record, field=f"{where}.{key}" if where else key)


def text(rec: Mapping[str, Any], key: str, path: Path, record: str, where: str = "") -> str:
    """A non-empty text field (returned as written); missing, blank or non-text is an error."""
    value = rec.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise _error("missing or empty text", key, path, record, where)
    if not isinstance(value, str):
        raise _error(wrong_type("text", value), key, path, record, where)
    return value


def integer(rec: Mapping[str, Any], key: str, path: Path, record: str, allowed: Collection[int] = (),
            where: str = "") -> int:
    """An integer field (a JSON bool is not one), one of `allowed` when given."""
    value = rec.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or (allowed and value not in allowed):
        expected = f"one of {', '.join(map(str, allowed))}" if allowed else "an integer"
        raise _error(f"expected {expected}, got {shown(value)}", key, path, record, where)
    return value


def flag(rec: Mapping[str, Any], key: str, path: Path, record: str, where: str = "") -> bool:
    """A JSON boolean (a 0/1 or a "true" is not one: an edited copy must not flip a condition silently)."""
    value = rec.get(key)
    if not isinstance(value, bool):
        raise _error(f"expected true or false, got {shown(value)}", key, path, record, where)
    return value


def keys(rec: Any, expected: Collection[str], path: Path, record: str) -> Mapping[str, Any]:
    """A record that is an object with exactly the `expected` keys (a misspelt or extra key is an edit, not data)."""
    got = sorted(rec) if isinstance(rec, Mapping) else [type(rec).__name__]
    if got != sorted(expected):
        raise TomDataError(f"expected exactly the keys {', '.join(sorted(expected))}; got {', '.join(got)}", path=path,
                           record=record)
    return rec  # type: ignore[no-any-return]


def one_of(rec: Mapping[str, Any], key: str, path: Path, record: str, allowed: Collection[str], where: str = "",
           what: str = "") -> str:
    """A text field from a closed vocabulary (a scenario, an accessibility); `what` names the vocabulary."""
    value = rec.get(key)
    if value not in allowed:
        expected = what or " or ".join(repr(a) for a in allowed)
        raise _error(f"expected {expected}, got {shown(value)}", key, path, record, where)
    return str(value)


def names(rec: Mapping[str, Any], key: str, path: Path, record: str, where: str = "") -> tuple[str, ...]:
    """A list of non-empty texts (character names)."""
    value = rec.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _error("expected a list of character names", key, path, record, where)
    return tuple(value)


def obj(rec: Mapping[str, Any], key: str, path: Path, record: str, where: str = "") -> Mapping[str, Any]:
    """A nested JSON object."""
    value = rec.get(key)
    if not isinstance(value, Mapping):
        raise _error(f"expected an object, got {type(value).__name__}", key, path, record, where)
    return value


def objects(rec: Mapping[str, Any], key: str, path: Path, record: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each object of a list of nested JSON objects, with its path in the record (`beliefQAs[0]`) for messages."""
    value = rec.get(key)
    if not isinstance(value, list):
        raise TomDataError("expected a list", path=path, record=record, field=key)
    for j, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise TomDataError("expected an object", path=path, record=record, field=f"{key}[{j}]")
        yield f"{key}[{j}]", item
