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
#
# The gates make this a gate run: wrong answers are recorded (shown as `wrong`), and the run
# passes or fails on the gates alone. These are the bar a tiny model can meet: no model errors,
# at most 10% unreadable answers, and accuracy not shown to be below a random guess (the upper
# end of its interval at least 25%). For a real model, set a real bar, e.g.
# "accuracy:lower>=0.6", or compare with the release you replace (--tom-baseline).
tombench = pytest_tom.suite(
    "tombench", data_dir=FIXTURES, languages="en", partial=True,
    gates=["errors<=0", "unparseable<=10%", "accuracy:upper>=0.25"],
)

# A quick English check for every commit: one try each on a stratified sample of 10 questions.
tombench_quick = pytest_tom.suite("tombench", data_dir=FIXTURES, languages="en", tries=1, sample=10, seed=1, partial=True)
