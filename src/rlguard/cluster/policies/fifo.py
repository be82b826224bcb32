"""FIFO: jobs start in submission order and are never preempted (free GPUs are backfilled)."""

from __future__ import annotations

import numpy as np

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.view import ClusterView


class Fifo(Policy):
    name = "fifo"
    preemptive = False

    def priority(self, view: ClusterView) -> np.ndarray:
        return view.submit_s
