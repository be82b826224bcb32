"""A job's GPU-hour budget: its pace so far (GPU-hours / progress) projected to its end, checked
at each eval it reports; past the budget the job is stopped as a stop rule stops it (early_stopped,
its best checkpoint delivered), with the projection as the decision's evidence. A job that reports
no evals has no pace to project: it is stopped once it has spent its budget (`Spent`), checked by
the scheduling loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RULE = "budget"


def decision_rule(budget_gpu_hours: float) -> dict[str, Any]:
    """A budget stop's rule, params and shadow, as its stored decision names them."""
    return {"rule": RULE, "params": {"budget_gpu_hours": budget_gpu_hours}, "shadow": False}


@dataclass(frozen=True)
class Projection:
    gpu_hours: float  # used so far, all attempts
    progress: float  # the eval's, in (0, 1]
    budget_gpu_hours: float

    @property
    def projected_gpu_hours(self) -> float:
        return self.gpu_hours / self.progress

    @property
    def over(self) -> bool:
        return self.projected_gpu_hours > self.budget_gpu_hours

    def reason(self) -> str:
        return (
            f"projected {self.projected_gpu_hours:.4g} GPU-h ({self.gpu_hours:.4g} GPU-h at "
            f"progress {self.progress:.3g}) passes the budget of {self.budget_gpu_hours:.4g} GPU-h"
        )

    def evidence(self) -> dict[str, Any]:
        return {
            "gpu_hours": round(self.gpu_hours, 6),
            "progress": self.progress,
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


def projection(spec: dict[str, Any], gpu_hours: float, progress: float) -> Projection | None:
    """The job's projection, or None if it has no budget or no progress to project from."""
    budget = spec.get("budget_gpu_hours")
    if budget is None or progress <= 0:
        return None
    return Projection(gpu_hours, progress, budget)
