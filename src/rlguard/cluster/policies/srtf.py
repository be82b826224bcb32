"""SRTF-Est: shortest remaining (estimated) service first, preemptive.

Remaining time comes from the user's estimate, never the true duration. A job that outlives its
estimate has it doubled (as a user re-submitting with a larger budget would), so overrunning jobs
do not jump to the head of the queue with a remaining time of zero. Keys are remaining time x GPUs
(remaining GPU-time) by default, the SRSF variant Tiresias compares against.
"""

from __future__ import annotations

import numpy as np

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.view import ClusterView


class SrtfEst(Policy):
    name = "srtf-est"

    def __init__(self, weight_by_gpus: bool = True) -> None:
        self.weight_by_gpus = weight_by_gpus

    def priority(self, view: ClusterView) -> np.ndarray:
        estimate = view.estimate_s
        executed = view.executed_s
        overruns = np.floor(np.log2(np.maximum(executed / estimate, 1.0))) + 1.0
        revised = np.where(executed >= estimate, estimate * 2.0**overruns, estimate)
        remaining = revised - executed
        return remaining * view.gpus if self.weight_by_gpus else remaining
