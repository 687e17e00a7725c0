"""Every shell and Python example of README.md, CONTRIBUTING.md and docs/ runs, so the pages cannot drift.

An ```output block after a shell block is checked against what the command printed.

Run with Sybil (https://sybil.readthedocs.io): its Markdown lexers find the fenced blocks and the
`<!-- skip: next "reason" -->` directives, it keeps one namespace per page so a later block can use an earlier
one, and it takes our own evaluator for `bash` blocks. pytest-examples runs only Python (and its point is
linting them), and mktestdocs has no skip directive with a reason; both would leave the shell commands, most
of our examples, to a hand-written runner. Sybil's own `pytest_collect_file` only sees files under the conftest
that defines it, and README.md lies outside tests/, so this module asks Sybil to parse each page and makes one
test per block (see helpers/doc_examples.py for the workspace each page runs in).

A block skipped with a reason is one whose point is a real external service, GPU or install; everything else
runs on the fixtures with `random` or a Python-callable model.
"""

from __future__ import annotations

from pathlib import Path
from unittest import SkipTest

import pytest
from helpers.doc_examples import OUTPUT, REPO, SYBIL, code_examples, documents

# Pages whose examples run real end-to-end sessions long enough to belong with the slow tests.
SLOW = {"docs/benchmarks/fantom.md", "docs/how-to/robustness.md", "docs/how-to/thresholds.md", "docs/benchmarks/hitom.md",
        "docs/benchmarks/tomato.md"}


def cases() -> list[object]:
    params = []
    for path in documents():
        rel = path.relative_to(REPO).as_posix()
        for example in code_examples(path):
            marks = [pytest.mark.slow] if rel in SLOW else []
            params.append(pytest.param(rel, example.region.start, id=f"{rel}:{example.line}", marks=marks))
    return params


@pytest.mark.parametrize(("page", "start"), cases())
def test_example(page: str, start: int, tmp_path: Path) -> None:
    document = SYBIL.parse(REPO / page)
    document.namespace.update(__tmp_path__=tmp_path, __target__=start)
    examples = list(document)
    for i, example in enumerate(examples):
        if example.region.start < start:
            try:  # set-up: earlier files, Python blocks and skip directives, as a reader would follow the page
                example.evaluate()
            except SkipTest:
                continue
        elif example.region.start == start:
            example.evaluate()
            shown = examples[i + 1] if i + 1 < len(examples) else None
            if shown is not None and shown.region.evaluator is OUTPUT:
                shown.evaluate()  # what the page says the command prints
            break
