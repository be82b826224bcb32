"""The cluster plane's VisibleTable, kept live: one row per job, grown as jobs arrive.

The platform updates it as jobs are submitted, start, report evals and stop, and hands the
policies a `ClusterView` of its active rows, exactly what the simulator's engine gives them. A
job's row never changes (Tiresias keys its promotion records on rows); rows of ended jobs stay.
"""

from __future__ import annotations

import math

import numpy as np

from rlguard.cluster.view import ClusterView, VisibleTable


class LiveTable:
    def __init__(self, capacity: int = 1024) -> None:
        self.table = VisibleTable(capacity)
        self.rows: dict[str, int] = {}
        self.active: set[int] = set()

    def _grow(self) -> None:
        old = self.table
        new = VisibleTable(2 * len(old.job_ids))
        for name, column in vars(old).items():
            target = getattr(new, name)
            target[: len(column)] = column  # arrays and the job-id and kind lists alike
        self.table = new

    def add(self, job_id: str, kind: str, gpus: int, submit_s: float, estimate_s: float) -> int:
        if len(self.rows) == len(self.table.job_ids):
            self._grow()
        row = len(self.rows)
        t = self.table
        self.rows[job_id] = row
        t.job_ids[row], t.kinds[row] = job_id, kind
        t.gpus[row], t.submit_s[row], t.estimate_s[row] = gpus, submit_s, estimate_s
        t.pending_since_s[row] = submit_s
        self.active.add(row)
        return row

    def start(self, job_id: str, now: float) -> None:
        row = self.rows[job_id]
        self.table.running[row] = True
        self.table.run_start_s[row] = now

    def leave(self, job_id: str, now: float, requeue: bool) -> None:
        """The job's run ended at `now`: its time is banked; it waits again, or is done (or
        paused: `rejoin` brings it back)."""
        row = self.rows[job_id]
        t = self.table
        if t.running[row]:
            t.executed_s[row] += now - t.run_start_s[row]
            t.running[row] = False
        if requeue:
            t.pending_since_s[row] = now
        else:
            self.active.discard(row)

    def rejoin(self, job_id: str, now: float) -> None:
        """A job that left unfinished (paused) waits again from `now`, its row and history kept
        (the policies' attained service and evals go on from where it left)."""
        row = self.rows[job_id]
        self.table.pending_since_s[row] = now
        self.active.add(row)

    def bank(self, job_id: str, seconds: float) -> None:
        """GPU time of a run that ended before a restart (a live run's is banked by `leave`)."""
        self.table.executed_s[self.rows[job_id]] += seconds

    def observe(self, job_id: str, progress: float, loss: float | None, executed_s: float) -> None:
        """An eval arrived: what SLAQ and the view's eval columns read."""
        row = self.rows[job_id]
        t = self.table
        t.evals_seen[row] += 1
        t.last_progress[row] = progress
        if loss is None or not math.isfinite(loss):
            return
        if np.isnan(t.loss_first[row]):
            t.loss_first[row] = loss
        t.loss_prev[row], t.loss_prev_exec_s[row] = t.loss_last[row], t.loss_last_exec_s[row]
        t.loss_last[row], t.loss_last_exec_s[row] = loss, executed_s

    def last_progress(self, job_id: str) -> float:
        return float(self.table.last_progress[self.rows[job_id]])

    def executed_s(self, job_id: str, now: float) -> float:
        row = self.rows[job_id]
        t = self.table
        open_segment = now - t.run_start_s[row] if t.running[row] else 0.0
        return float(t.executed_s[row] + open_segment)

    def view(self, job_ids: list[str], now: float, capacity: int) -> ClusterView:
        rows = np.fromiter(sorted(self.rows[j] for j in job_ids), dtype=np.int64)
        return ClusterView(self.table, rows, now, capacity)
