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

MIN_ESTIMATE_S = 1.0
"""Estimates below this (zero, a missing field) are read as this, so no key divides by zero."""


def revised_estimate(view: ClusterView) -> np.ndarray:
    """The user's estimate, doubled until it exceeds the time the job has already run.

    A job still inside its estimate keeps it; one that has run e >= E seconds gets E * 2^k with
    k = floor(log2(e / E)) + 1, the smallest doubling that is still ahead of it.
    """
    estimate = np.maximum(view.estimate_s, MIN_ESTIMATE_S)
    executed = view.executed_s
    overruns = np.floor(np.log2(np.maximum(executed / estimate, 1.0))) + 1.0
    return np.where(executed >= estimate, estimate * 2.0**overruns, estimate)


def remaining_estimate(view: ClusterView) -> np.ndarray:
    """Estimated seconds each job still needs: its revised estimate minus what it has run (> 0)."""
    return revised_estimate(view) - view.executed_s


class SrtfEst(Policy):
    name = "srtf-est"

    def __init__(self, weight_by_gpus: bool = True) -> None:
        self.weight_by_gpus = weight_by_gpus

    def priority(self, view: ClusterView) -> np.ndarray:
        remaining = remaining_estimate(view)
        return remaining * view.gpus if self.weight_by_gpus else remaining
