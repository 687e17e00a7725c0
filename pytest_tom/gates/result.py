"""The decision of one gate, as a value: what the item, the report and the Markdown summary show."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from pytest_tom.stats import Comparison, Estimate


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict with everything needed to explain it without rerunning anything."""

    name: str
    """The gate's id: the rule as written plus the metric it matched, e.g. `tombench.accuracy:lower>=0.3`."""
    kind: str
    """"threshold" or "baseline"."""
    metric: str
    """The full metric name, `<suite>.<metric>` (e.g. `tombench.ability.faux_pas`)."""
    passed: bool
    estimate: Estimate | None
    """The candidate's value with its clustered interval (None when nothing was scored)."""
    message: str
    """One paragraph a user can act on: value, interval, threshold or baseline, n."""
    threshold: float | None = None
    op: str = ""
    bound: str = "point"
    comparison: Comparison | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        est = self.estimate
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "metric": self.metric, "passed": self.passed,
                               "message": self.message, "estimate": None if est is None else dataclasses.asdict(est)}
        if self.threshold is not None:
            out.update(threshold=self.threshold, op=self.op, bound=self.bound)
        if self.comparison is not None:
            d = self.comparison.diff
            out["comparison"] = {**dataclasses.asdict(self.comparison),
                                 "diff": {"point": d.point, "low": d.low, "high": d.high, "method": d.method}}
        if self.details:
            out["details"] = dict(self.details)
        return out
