"""SLAQ-style quality-driven scheduling (Zhang et al., SoCC'17): most loss drop per GPU-s first.

SLAQ gives resources to the jobs whose training loss would drop the most, normalized so jobs with
different loss scales compare. We predict a job's next-interval reduction from its own last one:

    rate = (loss_prev - loss_last) / |loss_first| / loss_interval_s / gpus,

the normalized drop per executed second over the last two loss observations, per GPU. Loss curves
flatten as training goes on, so the last rate is an upper estimate of the next one that falls with
convergence, which is what makes SLAQ favour young jobs and starve nearly-converged ones.

Jobs with fewer than two loss observations have no rate yet; they run first (SLAQ favours new jobs,
whose early loss drops are the largest), FIFO among themselves. A job whose rate cannot be formed
(a first loss of 0, no executed time between observations, NaN) gets rate 0: no evidence of gain.
A job whose loss rose gets a negative rate and runs after the plateaued ones.
"""

from __future__ import annotations

import numpy as np

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.view import ClusterView


class Slaq(Policy):
    name = "slaq"
    preemptive = True

    def __init__(self, tick_s: float = 300.0) -> None:
        if not tick_s > 0:
            raise ValueError(f"tick_s must be > 0, got {tick_s}")
        self.tick_s = float(tick_s)

    def rate(self, view: ClusterView) -> np.ndarray:
        """Predicted normalized loss reduction per GPU-second; +inf for jobs without a rate yet."""
        drop = view.loss_prev - view.loss_last
        scale = np.abs(view.loss_first) * view.loss_interval_s * view.gpus
        new = (view.evals_seen < 2) | np.isnan(view.loss_prev) | np.isnan(view.loss_last)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = drop / scale
        rate = np.where(np.isfinite(rate), rate, 0.0)
        return np.where(new, np.inf, rate)

    def priority(self, view: ClusterView) -> np.ndarray:
        return -self.rate(view)
