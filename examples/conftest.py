"""A model repo's conftest.py: hand pytest-tom your own model object.

`--tom-model=URI` still wins when given, so the same suite runs against an API,
an HF checkpoint or a recorded replay in CI.
"""

from __future__ import annotations

import pytest
from my_model import overlap_baseline

import pytest_tom


@pytest.fixture(scope="session")
def tom_model(request: pytest.FixtureRequest):
    if request.config.getoption("tom_model"):
        return pytest_tom.model_from_config(request.config)
    return overlap_baseline
