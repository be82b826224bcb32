"""Tiresias 2D-LAS, discretized (Gu et al., NSDI'19): least attained GPU-service first, in queues.

A job's attained service is GPUs x executed time (`view.attained_gpu_s`). Thresholds split it into
K queues; a lower queue always runs first, and within a queue jobs run FIFO by submission (the key
is the queue index; the engine breaks ties by submit time). Big or long jobs sink without anyone
having to know their size, which is why Tiresias needs no duration estimates.

Starvation: a pending job in a lower queue whose current wait (`view.waiting_s`, since it last ran)
exceeds `promote_knob` x its executed time is promoted back to the top queue, and, as in the
Tiresias simulator, its service is reset: it is demoted again only after it has attained another
`thresholds[0]` GPU-seconds, and "executed time" in the next promotion test counts from the reset.
(The Tiresias simulator sums the waits since the last promotion; the view offers the current one.)

Why the reset needs state: a stateless rule ("top queue while waiting_s > knob x executed_s") keeps
the promotion only while the job waits. Once it starts its wait is 0, so at the next scheduling
pass it falls back to its old queue and the top-queue job it displaced preempts it again: it gets
a few seconds (often less than the restore overhead) per promotion, and promotion does not cure
starvation. The state kept here is the minimum for the reset: for each promoted job still active,
its executed time at promotion (the "service base"), keyed by the job's row in the platform's
visible table (`view.rows`, its stable handle while active) and checked against its submit time;
rows, not `view.job_ids`, because that list is built per job in Python on every call, too slow at
20,000 jobs.
Records of jobs no longer in the view are dropped on every call, and a clock that runs backwards
(a new run reusing the policy) clears them all. Everything else is vectorized over the view.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.view import ClusterView

DEFAULT_THRESHOLDS = (3250.0, 7200.0, 18000.0)
"""Queue limits in GPU-seconds (the simulator default in REFERENCE.md section 3): 4 queues."""


class Tiresias(Policy):
    name = "tiresias"
    preemptive = True

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        promote_knob: float = 8.0,
        tick_s: float = 300.0,
    ) -> None:
        limits = np.asarray(thresholds, dtype=float)
        if limits.ndim != 1 or not np.all(np.isfinite(limits)) or np.any(limits <= 0):
            raise ValueError(f"thresholds must be positive finite GPU-seconds, got {thresholds!r}")
        if np.any(np.diff(limits) <= 0):
            raise ValueError(f"thresholds must be strictly increasing, got {thresholds!r}")
        if not promote_knob > 0:  # also rejects NaN; use float("inf") to disable promotion
            raise ValueError(f"promote_knob must be > 0, got {promote_knob}")
        if not tick_s > 0:
            raise ValueError(f"tick_s must be > 0, got {tick_s}")
        self.thresholds = limits
        self.promote_knob = float(promote_knob)
        self.tick_s = float(tick_s)
        self._rows = np.zeros(0, dtype=np.int64)  # promoted jobs still active
        self._submit = np.zeros(0)  # their submit times (guards against a reused row)
        self._base_s = np.zeros(0)  # their executed time when last promoted
        self._now = -np.inf

    def queues(self, view: ClusterView) -> np.ndarray:
        """Each job's queue (0 = top), updating the promotion records; what `priority` returns."""
        if view.now < self._now:
            self._forget(np.zeros(self._rows.size, dtype=bool))
        self._now = view.now
        since = view.executed_s - self._base(view)  # executed time since the last promotion
        queue = self._queue(view.gpus * since)
        if not np.isfinite(self.promote_knob):
            return queue
        # Only below the top queue (so since > 0): a job that never ran, or has not run since its
        # promotion, is in the top queue already.
        starving = (~view.running) & (queue > 0) & (view.waiting_s > self.promote_knob * since)
        if starving.any():
            self._promote(view, starving)
            queue = np.where(starving, 0, queue)
        return queue

    def priority(self, view: ClusterView) -> np.ndarray:
        return self.queues(view).astype(float)

    # -- internals ------------------------------------------------------------------------------
    def _queue(self, attained: np.ndarray) -> np.ndarray:
        # Demotion at the threshold itself (Tiresias: attained >= limit moves a job down).
        return np.searchsorted(self.thresholds, attained, side="right")

    def _base(self, view: ClusterView) -> np.ndarray:
        """Executed time at each job's last promotion (0 if never promoted); prunes the records."""
        base = np.zeros(len(view))
        if not self._rows.size or not len(view):
            self._forget(np.zeros(self._rows.size, dtype=bool))
            return base
        order = np.argsort(view.rows, kind="stable")
        at = np.minimum(np.searchsorted(view.rows[order], self._rows), len(view) - 1)
        pos = order[at]
        # Same row, same job, and the base can only lie in the job's past.
        found = (
            (view.rows[pos] == self._rows)
            & (view.submit_s[pos] == self._submit)
            & (self._base_s <= view.executed_s[pos])
        )
        base[pos[found]] = self._base_s[found]
        self._forget(found)
        return base

    def _forget(self, keep: np.ndarray) -> None:
        self._rows, self._submit, self._base_s = (
            self._rows[keep],
            self._submit[keep],
            self._base_s[keep],
        )

    def _promote(self, view: ClusterView, starving: np.ndarray) -> None:
        rows = view.rows[starving]
        keep = ~np.isin(self._rows, rows)  # a re-promotion replaces the job's old record
        self._forget(keep)
        self._rows = np.concatenate([self._rows, rows])
        self._submit = np.concatenate([self._submit, view.submit_s[starving]])
        self._base_s = np.concatenate([self._base_s, view.executed_s[starving]])
