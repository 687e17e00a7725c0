"""Where pytest-tom's items stand for pytest: their place (the suite's module and line), and node ids comparable with
the ids pytest reads back from its cache (the items are named `bench[id]` without a pytest parametrization).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest


class CacheComparableId:
    """Mixin for a `pytest.Item` named `name[params]` by hand. pytest 9.2 compares structured node ids: it builds an
    item's from its name alone (params None), but parses a cached `--lf`/`--ff` failure's string into name and params,
    so the two never match and `--lf` runs everything, or silently leaves out a question that still fails when another
    test's failure matched (pytest-dev/pytest#15045). The id offered here is the parsed form of the same string; pytest
    versions without structured ids are unaffected.
    """

    @functools.cached_property
    def id(self) -> Any:  # noqa: A003 - pytest's name
        node_id = super().id  # type: ignore[misc]
        parse = getattr(type(node_id), "parse", None)
        return parse(str(node_id)) if parse is not None else node_id


def place(item: pytest.Item) -> tuple[Path, int]:
    """Where pytest places a suite's item (`reportinfo`): its suite collector's `place` and 0-based `line`."""
    return getattr(item.parent, "place", item.path), getattr(item.parent, "line", 0)
