"""ToMValley's robustness: its one question shape, rephrased."""

import re

from pytest_tom.robustness.base import Perturbable

PERTURBABLE = Perturbable(rephrasings=(
    (re.compile(r"^What is the (belief|emotion|intention|action) of (.+?) in scenario (\d+)\?$"),
     r"In scenario \3, what is the \1 of \2?"),
))
