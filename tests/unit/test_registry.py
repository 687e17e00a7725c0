"""The one lazy registry behind benchmarks, model schemes and robustness strategies."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from typing import Any

import pytest

from pytest_tom import registry as registry_module
from pytest_tom.errors import TomConfigError
from pytest_tom.evals import Registry
from pytest_tom.models import SchemeRegistry
from pytest_tom.registry import LazyRegistry


def test_a_target_is_imported_on_first_use_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "json.tool", raising=False)
    reg: LazyRegistry[Any] = LazyRegistry("thing", {"tool": "json.tool:main", "dumps": "json:dumps"})
    assert "json.tool" not in sys.modules and reg.names() == ["dumps", "tool"]
    import json

    assert reg.get("dumps") is json.dumps
    assert "json.tool" not in sys.modules, "only the name asked for is imported"
    assert callable(reg.get("tool")) and "json.tool" in sys.modules


def test_entry_points_join_the_builtins_which_win_a_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [EntryPoint("extra", "json:loads", "my.group"), EntryPoint("dumps", "json:loads", "my.group")]
    monkeypatch.setattr(registry_module, "entry_points", lambda group: [e for e in found if e.group == group])
    reg: LazyRegistry[Any] = LazyRegistry("thing", {"dumps": "json:dumps"}, "my.group")
    import json

    assert list(reg) == ["dumps", "extra"] and reg.get("extra") is json.loads and reg.get("dumps") is json.dumps
    assert reg.is_builtin("dumps") and not reg.is_builtin("extra")


def test_add_registers_or_replaces_and_is_no_longer_builtin() -> None:
    reg: LazyRegistry[Any] = LazyRegistry("thing", {"dumps": "json:dumps"})
    reg.get("dumps")
    reg.add("dumps", len)
    reg.add("mine", "json:loads")
    assert reg.get("dumps") is len and not reg.is_builtin("dumps") and "mine" in reg


def test_an_unknown_name_lists_the_known_and_the_nearest() -> None:
    reg: LazyRegistry[Any] = LazyRegistry("thing", {"rename": "json:dumps", "permute": "json:loads"})
    with pytest.raises(TomConfigError, match=r"^unknown thing 'renam'; known: permute, rename \(did you mean rename\?\)$"):
        reg.get("renam")
    with pytest.raises(TomConfigError, match=r"^unknown thing 'zzz'; known: permute, rename$"):
        reg.get("zzz")


def test_the_three_registries_share_it() -> None:
    with pytest.raises(TomConfigError, match=r"unknown benchmark 'tombnech'; available: .*\(did you mean tombench\?\)"):
        Registry().get("tombnech")
    with pytest.raises(TomConfigError, match=r"unknown scheme 'randm'.*\(did you mean random\?\)"):
        SchemeRegistry().make("randm:1")
    from pytest_tom.robustness import resolve

    with pytest.raises(TomConfigError, match=r"unknown robustness strategy 'permut'.*\(did you mean permute\?\)"):
        resolve("permut")
