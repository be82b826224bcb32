"""The world-feedback signal every plane speaks: eval events, and a stop rule's decision on one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EvalEvent:
    """One periodic evaluation of a running job, as a scheduler or stop rule sees it.

    `score` is the noisy eval score in [0, 1]; `loss` the training loss at that point; `proxy` the
    proxy (reward-model) reward for RLHF jobs, None otherwise. `kind` lets a rule skip job types.
    """

    job_id: str
    kind: str
    step: int
    progress: float
    score: float
    loss: float
    proxy: float | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """A stop rule's answer to one eval event."""

    stop: bool
    reason: str = ""


CONTINUE = Decision(stop=False)
