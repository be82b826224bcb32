"""The world-feedback signal every plane speaks: eval events, and a stop rule's decision on one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EvalEvent:
    """One periodic evaluation of a running job, as a scheduler or stop rule sees it.

    `score` is the noisy eval score in [0, 1]; `loss` the training loss at that point; `proxy` the
    proxy (reward-model) reward for RLHF jobs, None otherwise. `kind` lets a rule skip job types.
    `metrics`: what else the job measured at this eval (its train reward since the last one, ...),
    for people to read; no rule decides on it.
    """

    job_id: str
    kind: str
    step: int
    progress: float
    score: float
    loss: float
    proxy: float | None = None
    metrics: dict[str, float] | None = None


AT_LAST_EVAL = "at its last eval (nothing left to save): "
"""How the reason begins of a stop a rule would have made at a job's last eval, which ends the
job anyway: the rule says so, but does not stop it (StopRule.observe)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A stop rule's answer to one eval event."""

    stop: bool
    reason: str = ""

    @property
    def flagged(self) -> bool:
        """A stop, or the stop the rule would have made at the job's last eval (StopRule)."""
        return self.stop or self.reason.startswith(AT_LAST_EVAL)


CONTINUE = Decision(stop=False)
