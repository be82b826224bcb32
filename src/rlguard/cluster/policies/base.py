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
    free GPUs. `tick_s` asks for a re-evaluation every so many seconds when keys drift with time.
    """

    name: ClassVar[str]
    preemptive: ClassVar[bool] = True
    tick_s: float | None = None

    @abstractmethod
    def priority(self, view: ClusterView) -> np.ndarray: ...
