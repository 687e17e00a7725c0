"""The pytest11 entry point of pytest-tom: its module-level hooks and the `tom_model` fixture live in the run layer
(`pytest_tom.run.setup`); pytest finds them here.
"""

from __future__ import annotations

from pytest_tom.run.setup import (
    pytest_addhooks,
    pytest_addoption,
    pytest_cmdline_main,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_load_initial_conftests,
    pytest_pycollect_makeitem,
    tom_model,
)

__all__ = ["pytest_addhooks", "pytest_addoption", "pytest_cmdline_main", "pytest_collection_modifyitems", "pytest_configure",
           "pytest_load_initial_conftests", "pytest_pycollect_makeitem", "tom_model"]
