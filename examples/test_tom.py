"""A model repo's theory-of-mind regression suite: copy this file into your tests/.

Each module-level suite becomes one test per question (plus one per story for the
coherence assertion). Select with marks, e.g. ``pytest -m "tombench and belief and en"``.
"""

from __future__ import annotations

from pathlib import Path

import pytest_tom

# The project's own small fixtures (21 ToMBench questions per language that we wrote in the
# official format), named explicitly so this file runs the same wherever it is started, even
# with $TOM_DATA_DIR set. The fixtures are a deliberately partial release, hence partial=True.
# In your repo, drop data_dir= and partial= to run the real release from --tom-data-dir or
# $TOM_DATA_DIR (or fetch it with --tom-download).
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# The official protocol (vanilla prompt, 5 shuffled tries, majority vote), English items.
# Add languages="en,zh" for the Chinese half too.
tombench = pytest_tom.suite("tombench", data_dir=FIXTURES, languages="en", partial=True)

# A quick English check for every commit: one try each on a stratified sample of 10 questions.
tombench_quick = pytest_tom.suite("tombench", data_dir=FIXTURES, languages="en", tries=1, sample=10, seed=1, partial=True)
