"""`CacheComparableId`: an item named `name[params]` by hand offers the id pytest parses back from its cache."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_tom.run.nodeids import CacheComparableId


@dataclasses.dataclass(frozen=True)
class Structured:
    """A stand-in for pytest 9.2's NodeId: built from a whole name, or parsed from a string into name and params."""

    path: str
    names: tuple[str, ...]
    params: str | None = None

    @classmethod
    def parse(cls, text: str) -> Structured:
        path, _, tail = text.partition("::")
        name, bracket, params = tail.partition("[")
        return cls(path, tuple(name.split("::")), params.removesuffix("]") if bracket else None)

    def __str__(self) -> str:
        return "::".join((self.path, *self.names)) + (f"[{self.params}]" if self.params is not None else "")


class Node:
    def __init__(self, node_id: object) -> None:
        self._node_id = node_id

    @property
    def id(self) -> object:
        return self._node_id


class Item(CacheComparableId, Node):
    pass


def test_a_hand_named_item_has_the_id_its_cached_string_parses_to() -> None:
    built = Structured("test_tom.py", ("tb", "tombench[en-fbt-0001]"))  # what pytest 9.2 builds from the name alone
    assert built != Structured.parse(str(built))
    assert Item(built).id == Structured.parse("test_tom.py::tb::tombench[en-fbt-0001]")
    assert str(Item(built).id) == str(built)


def test_without_structured_ids_the_id_is_left_alone() -> None:
    assert Item("test_tom.py::tb::tombench[en-fbt-0001]").id == "test_tom.py::tb::tombench[en-fbt-0001]"


def test_on_this_pytest_a_bracketed_item_matches_its_parsed_id() -> None:
    """Whatever pytest is installed: the items' id equals the id of their node id string as pytest parses it."""
    nodeid = pytest.importorskip("_pytest.nodeid", reason="pytest < 9.2 has no structured node ids")
    built = nodeid.NodeId(path="test_tom.py", names=("tb", "tombench[en-fbt-0001]"))
    assert Item(built).id == nodeid.NodeId.parse("test_tom.py::tb::tombench[en-fbt-0001]")
