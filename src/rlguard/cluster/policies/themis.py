"""Themis finish-time fairness (Mahajan et al., NSDI'20): the job treated worst so far runs first.

rho = T_shared / T_isolated compares a job's expected finish time on the shared cluster with its
finish time alone on a 1/N share of it (N = active jobs). rho > 1 means sharing has cost the job;
Themis equalizes rho by serving the largest first, which keeps long and wide jobs from starving
without sizing anyone's share by hand.

    T_shared   = (now - submit_s) + remaining estimate
    T_isolated = revised estimate * max(1, N * gpus / capacity)

Both use the user's estimate with SRTF-Est's overrun doubling (`remaining_estimate`,
`revised_estimate` in srtf.py). T_isolated uses the revised estimate, not the raw one: with the raw
estimate a job that outlives it would get an ever-growing rho and hold the head of the queue for
good, rewarding users who under-estimate. A 1/N share smaller than the job's GPUs slows it by
N * gpus / capacity; a larger one cannot speed it up (it cannot use more GPUs than it asks for).
This is the fairness metric only: Themis' auction and leases are not modelled; `tick_s` is the
lease-like round at which drifting rho values are re-ranked.
"""

from __future__ import annotations

import numpy as np

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.policies.srtf import remaining_estimate
from rlguard.cluster.view import ClusterView


class Themis(Policy):
    name = "themis"
    preemptive = True

    def __init__(self, tick_s: float = 300.0) -> None:
        if not tick_s > 0:
            raise ValueError(f"tick_s must be > 0, got {tick_s}")
        self.tick_s = float(tick_s)

    def rho(self, view: ClusterView) -> np.ndarray:
        """Finish-time fairness of each job: estimated shared over isolated finish time."""
        remaining = remaining_estimate(view)
        shared = (view.now - view.submit_s) + remaining
        revised = remaining + view.executed_s  # revised_estimate(view), without recomputing it
        slowdown = np.maximum(1.0, len(view) * view.gpus / view.capacity)
        return shared / (revised * slowdown)

    def priority(self, view: ClusterView) -> np.ndarray:
        return -self.rho(view)
