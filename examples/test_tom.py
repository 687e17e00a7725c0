"""A model repo's theory-of-mind regression suite: copy this file into your tests/.

Each module-level suite becomes one test per question (plus one per story for the
coherence assertion). Select with marks, e.g. ``pytest -m "tombench and belief and en"``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest_tom

# Real data via TOM_DATA_DIR; the project's own small fixtures otherwise. The fixtures are a
# deliberately partial release, so they say partial=True (a full release needs no flag).
DATA = os.environ.get("TOM_DATA_DIR") or Path(__file__).resolve().parent.parent / "fixtures"
PARTIAL = not os.environ.get("TOM_DATA_DIR")

# The official protocol (vanilla prompt, 5 shuffled tries, majority vote), English items.
# Add languages="en,zh" for the Chinese half too.
tombench = pytest_tom.suite("tombench", data_dir=DATA, languages="en", partial=PARTIAL)

# A quick English check for every commit: one try each on a stratified sample of 10 questions.
tombench_quick = pytest_tom.suite("tombench", data_dir=DATA, languages="en", tries=1, sample=10, seed=1, partial=PARTIAL)
