"""The scheduling-policy interface shared by the simulator and, later, the live platform."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from rlguard.cluster.view import ClusterView


class Policy(ABC):
    """Orders the active jobs; the engine runs them in that order while GPUs last.

    `priority` returns one key per job in the view, lower runs first; ties go to the earlier
    submission. A preemptive policy may displace running jobs; a non-preemptive one only fills
    free GPUs. With `backfill` a job that does not fit is skipped and later ones may start;
    without it, it blocks every job after it (head-of-line blocking). `tick_s` asks for a
    re-evaluation every so many seconds when keys drift with time (preemption then waits for
    those rounds); without it the policy is event-driven, and `next_change_s` tells the engine
    when its order will next change on its own (a job crossing a threshold), so that a pass runs
    then as in an event-driven reference simulator.
    """

    name: ClassVar[str]
    preemptive: ClassVar[bool] = True
    backfill: ClassVar[bool] = True
    tick_s: float | None = None

    @abstractmethod
    def priority(self, view: ClusterView) -> np.ndarray: ...

    def next_change_s(self, view: ClusterView) -> float | None:
        """The first time after `view.now` at which the order may change with no event; None:
        only arrivals and completions change it. Read-only: it must not update the policy."""
        return None
