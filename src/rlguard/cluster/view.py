"""What a scheduling policy sees: the active jobs as columns, without any ground truth.

The engine fills a VisibleTable row when a job is submitted and updates it as the job runs and
reports evals; a ClusterView is a read-only window on the active rows at one instant. Neither holds
a reference to the engine or to a job's truth, so policies cannot reach labels, true durations or
true curves (tests walk the object graph to check).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np


class VisibleTable:
    """Per-job columns the platform legitimately knows: submission fields and observed history."""

    def __init__(self, n: int) -> None:
        self.job_ids: list[str] = [""] * n
        self.kinds: list[str] = [""] * n
        self.gpus = np.zeros(n, dtype=np.int64)
        self.submit_s = np.zeros(n)
        self.estimate_s = np.zeros(n)
        self.executed_s = np.zeros(n)  # wall time held on GPUs, closed segments only
        self.run_start_s = np.zeros(n)  # start of the open segment while running
        self.running = np.zeros(n, dtype=bool)
        self.pending_since_s = np.zeros(n)
        self.evals_seen = np.zeros(n, dtype=np.int64)
        self.last_progress = np.zeros(n)
        self.loss_first = np.full(n, np.nan)
        self.loss_last = np.full(n, np.nan)
        self.loss_prev = np.full(n, np.nan)
        self.loss_last_exec_s = np.zeros(n)
        self.loss_prev_exec_s = np.zeros(n)


class ClusterView:
    """The active jobs (pending and running) at time `now`, one entry per row, lazily sliced."""

    def __init__(self, table: VisibleTable, rows: np.ndarray, now: float, capacity: int) -> None:
        self._table = table
        self.rows = rows
        self.now = now
        self.capacity = capacity

    def __len__(self) -> int:
        return len(self.rows)

    @cached_property
    def job_ids(self) -> list[str]:
        return [self._table.job_ids[r] for r in self.rows]

    @cached_property
    def gpus(self) -> np.ndarray:
        return self._table.gpus[self.rows]

    @cached_property
    def submit_s(self) -> np.ndarray:
        return self._table.submit_s[self.rows]

    @cached_property
    def estimate_s(self) -> np.ndarray:
        return self._table.estimate_s[self.rows]

    @cached_property
    def running(self) -> np.ndarray:
        return self._table.running[self.rows]

    @cached_property
    def executed_s(self) -> np.ndarray:
        """Wall time each job has held its GPUs so far, including the open segment."""
        t = self._table
        open_segment = np.where(self.running, self.now - t.run_start_s[self.rows], 0.0)
        return t.executed_s[self.rows] + open_segment

    @cached_property
    def attained_gpu_s(self) -> np.ndarray:
        """Attained service (GPUs x executed time), the quantity LAS/Gittins schedule on."""
        return self.gpus * self.executed_s

    @cached_property
    def waiting_s(self) -> np.ndarray:
        """How long each pending job has waited since it last ran (or arrived); 0 if running."""
        return np.where(self.running, 0.0, self.now - self._table.pending_since_s[self.rows])

    @cached_property
    def evals_seen(self) -> np.ndarray:
        return self._table.evals_seen[self.rows]

    @cached_property
    def last_progress(self) -> np.ndarray:
        """Training progress (fraction of declared steps) at the job's last eval."""
        return self._table.last_progress[self.rows]

    @cached_property
    def loss_first(self) -> np.ndarray:
        return self._table.loss_first[self.rows]

    @cached_property
    def loss_last(self) -> np.ndarray:
        return self._table.loss_last[self.rows]

    @cached_property
    def loss_prev(self) -> np.ndarray:
        return self._table.loss_prev[self.rows]

    @cached_property
    def loss_interval_s(self) -> np.ndarray:
        """Executed time between the last two loss observations (meaningful from two on)."""
        t = self._table
        return t.loss_last_exec_s[self.rows] - t.loss_prev_exec_s[self.rows]
