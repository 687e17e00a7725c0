"""Shared test helpers: the repo's fixtures folder, real data when available, a clean cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy  # noqa: F401 - see below
import pytest
import scipy.special  # noqa: F401

# pytester's in-process runs restore sys.modules after each run, and numpy refuses a second
# import in one process; imported here, before any run, they stay loaded (the gates use them).

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

from helpers.heartbeat import Heartbeat  # noqa: E402 - tests/ is on sys.path (rootdir conftest)

_HEARTBEAT = Heartbeat()


def pytest_configure(config: pytest.Config) -> None:
    _HEARTBEAT.open()  # pytest's capture is suspended here: stderr is the terminal (or CI's log)


def pytest_unconfigure(config: pytest.Config) -> None:
    _HEARTBEAT.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """Long tests (setup, call and teardown) say they are still running (see helpers/heartbeat.py)."""
    with _HEARTBEAT.around(item.nodeid):
        return (yield)


@pytest.fixture
def fixtures_dir() -> Path:
    """The benchmark fixtures shipped with the project (written by us, in each official format)."""
    return FIXTURES


@pytest.fixture
def real_data_dir() -> Path:
    """The real benchmark data ($TOM_DATA_DIR); tests that need it skip when it is unset."""
    value = os.environ.get("TOM_DATA_DIR")
    if not value or not Path(value).is_dir():
        pytest.skip("TOM_DATA_DIR is not set to the real benchmark data")
    return Path(value)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never let a test read or write the user's real response cache."""
    monkeypatch.setenv("TOM_CACHE_DIR", str(tmp_path_factory.mktemp("tom-cache")))


@pytest.fixture
def tom_args(fixtures_dir: Path) -> list[str]:
    """Arguments that run ToMBench on the bundled fixtures without a test file (a deliberately partial release)."""
    return ["--tom-benchmark=tombench", f"--tom-data-dir={fixtures_dir}", "--tom-set=tombench.partial=true", "-p", "no:cacheprovider"]


ORACLE_CONFTEST = """
import sys
sys.path.insert(0, {helpers!r})
from pathlib import Path
import pytest
from helpers.tombench_oracle import Oracle

WRONG = {wrong!r}
GARBLE = {garble!r}

@pytest.fixture(scope="session")
def tom_model():
    return Oracle(Path({data!r}), wrong=WRONG, garble=GARBLE)
"""


@pytest.fixture
def oracle_conftest_for(pytester: pytest.Pytester):
    """Write a conftest.py whose tom_model override knows the gold answers of a data folder."""

    def write(data: Path, wrong: tuple[str, ...] = (), garble: tuple[str, ...] = ()) -> None:
        pytester.makeconftest(ORACLE_CONFTEST.format(helpers=str(REPO / "tests"), wrong=wrong, garble=garble, data=str(data)))

    return write


@pytest.fixture
def oracle_conftest(oracle_conftest_for, fixtures_dir: Path):
    """Write a conftest.py whose tom_model override knows the gold answers of the bundled fixtures."""

    def write(wrong: tuple[str, ...] = (), garble: tuple[str, ...] = ()) -> None:
        oracle_conftest_for(fixtures_dir, wrong, garble)

    return write
