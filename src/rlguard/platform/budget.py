"""A job's GPU-hour budget: its pace projected to its end, checked at each eval it reports; past
the budget the job is stopped as a stop rule stops it (early_stopped, its best checkpoint
delivered), with the projection as the decision's evidence. The pace is measured from the job's
first eval on (GPU-hours per unit of progress since then), not from its start: start-up (imports,
loading the model, a first eval at step 0) is paid once, and counted in a pace it would make
a run look far dearer early than it is. A job that reports no evals has no pace to project: it
is stopped once it has spent its budget (`Spent`), checked by the scheduling loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RULE = "budget"


def decision_rule(budget_gpu_hours: float) -> dict[str, Any]:
    """A budget stop's rule, params and shadow, as its stored decision names them."""
    return {"rule": RULE, "params": {"budget_gpu_hours": budget_gpu_hours}, "shadow": False}


@dataclass(frozen=True)
class Mark:
    """GPU-hours used (all attempts) when the job reported an eval at `progress`."""

    gpu_hours: float
    progress: float


@dataclass(frozen=True)
class Projection:
    now: Mark  # this eval's
    since: Mark  # the first eval's: the pace is measured from there
    budget_gpu_hours: float

    @property
    def projected_gpu_hours(self) -> float:
        now, since = self.now, self.since
        pace = (now.gpu_hours - since.gpu_hours) / (now.progress - since.progress)
        return now.gpu_hours + pace * (1.0 - now.progress)

    @property
    def over(self) -> bool:
        return self.projected_gpu_hours > self.budget_gpu_hours

    def reason(self) -> str:
        return (
            f"projected {self.projected_gpu_hours:.4g} GPU-h ({self.now.gpu_hours:.4g} GPU-h at "
            f"progress {self.now.progress:.3g}, at its pace since progress "
            f"{self.since.progress:.3g}) passes the budget of {self.budget_gpu_hours:.4g} GPU-h"
        )

    def evidence(self) -> dict[str, Any]:
        return {
            "gpu_hours": round(self.now.gpu_hours, 6),
            "progress": self.now.progress,
            "pace_since_gpu_hours": round(self.since.gpu_hours, 6),
            "pace_since_progress": self.since.progress,
            "projected_gpu_hours": round(self.projected_gpu_hours, 6),
            "budget_gpu_hours": self.budget_gpu_hours,
        }


@dataclass(frozen=True)
class Spent:
    gpu_hours: float  # used so far, all attempts
    budget_gpu_hours: float

    @property
    def over(self) -> bool:
        return self.gpu_hours > self.budget_gpu_hours

    def reason(self) -> str:
        budget = self.budget_gpu_hours
        return f"spent {self.gpu_hours:.4g} GPU-h, past the budget of {budget:.4g} GPU-h"

    def evidence(self) -> dict[str, Any]:
        return {"gpu_hours": round(self.gpu_hours, 6), "budget_gpu_hours": self.budget_gpu_hours}


def projection(spec: dict[str, Any], now: Mark, since: Mark | None) -> Projection | None:
    """The job's projection, or None if it has no budget or no progress since its first eval."""
    budget = spec.get("budget_gpu_hours")
    if budget is None or since is None or now.progress <= since.progress:
        return None
    return Projection(now, since, budget)
