"""A conftest for pytester runs that keeps every record the run produced, through the public hook
`pytest_tom_results_ready` (so the end-to-end tests also exercise that hook), and its reader."""

from __future__ import annotations

import json

import pytest

from pytest_tom.record import Record

RECORDS_HOOK = '''
import json
from pathlib import Path


def pytest_tom_results_ready(session, results):
    with open(Path(__file__).with_name("records.jsonl"), "a") as f:
        for r in results.values():
            f.write(json.dumps(r.to_dict()) + "\\n")
'''


def read_records(pytester: pytest.Pytester) -> list[Record]:
    """Every record the hook wrote, in the order the run gave them."""
    return [Record.from_dict(json.loads(line)) for line in (pytester.path / "records.jsonl").read_text().splitlines()]
