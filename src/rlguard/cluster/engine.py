"""The discrete-event engine: arrivals, evals (the last one completes a job), scheduling ticks
and wake-ups.

One heap of (time, seq, kind, row, epoch) events. A running job has exactly one pending event, its
next eval; preempting it bumps the job's epoch, so that event goes stale and is skipped when popped
(lazy invalidation). Events at the same instant are all applied before one scheduling pass. An
event-driven policy (no `tick_s`) may name the time its order next changes on its own
(`next_change_s`); a wake-up then runs a pass at that time.
Deterministic: the only randomness is in the workload, fixed by its seed.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.jobs import Workload
from rlguard.cluster.nodes import Nodes
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.view import ClusterView, VisibleTable

ARRIVAL, EVAL, TICK, WAKE = 0, 1, 2, 3


@dataclass
class RunResult:
    """What happened to every job in one run (aligned with the workload's order)."""

    scheduler: str
    capacity: int
    finish_s: np.ndarray
    executed_s: np.ndarray  # GPU-holding wall time, restore overheads included
    delivered_eval: np.ndarray  # index of the checkpoint the job delivers (its best observed)
    delivered_executed_s: np.ndarray  # executed time when that checkpoint was taken
    evals_done: np.ndarray
    stopped: np.ndarray
    stop_reasons: list[str]
    preemptions: np.ndarray
    events: int


def greedy_admit(gpus: np.ndarray, capacity: int, backfill: bool = True) -> np.ndarray:
    """Admit jobs in order while they fit; one that does not fit is skipped (backfill), or, with
    `backfill` off, ends the admission (head-of-line blocking)."""
    admitted = np.zeros(len(gpus), dtype=bool)
    cumulative = np.cumsum(gpus)
    head = int(np.searchsorted(cumulative, capacity, side="right"))
    admitted[:head] = True
    if not backfill:
        return admitted
    left = capacity - (int(cumulative[head - 1]) if head else 0)
    start = head
    while left > 0 and start < len(gpus):
        fits = np.flatnonzero(gpus[start:] <= left)
        if not fits.size:
            break
        j = start + int(fits[0])
        admitted[j] = True
        left -= int(gpus[j])
        start = j + 1
    return admitted


class Engine:
    def __init__(
        self,
        workload: Workload,
        scheduler: Scheduler,
        *,
        gpus: int,
        node_gpus: int = 8,
        restore_s: float = 60.0,
    ) -> None:
        per_node = min(node_gpus, gpus)
        if gpus <= 0 or gpus % per_node:
            raise ValueError(f"cluster GPUs must be a positive multiple of {node_gpus}, got {gpus}")
        too_big = [s.job_id for s in workload.specs if s.gpus > gpus]
        if too_big:
            raise ValueError(f"job {too_big[0]} asks for more GPUs than the cluster's {gpus}")
        if restore_s < 0:
            raise ValueError(f"restore_s must be >= 0, got {restore_s}")
        self.workload = workload
        self.scheduler = scheduler
        self.restore_s = restore_s
        self.nodes = Nodes(gpus // per_node, per_node)
        n = len(workload.specs)
        self.table = VisibleTable(n)
        self._duration = np.array([t.duration_s for t in workload.truths])
        self._n_evals = np.array([s.n_evals for s in workload.specs])
        self._epoch = np.zeros(n, dtype=np.int64)
        self._progress_base = np.zeros(n)
        self._productive_start = np.zeros(n)
        self._best = np.full(n, -np.inf)
        self._best_eval = np.full(n, -1, dtype=np.int64)
        self._best_executed = np.zeros(n)
        self._finish = np.full(n, np.nan)
        self._stopped = np.zeros(n, dtype=bool)
        self._reasons = [""] * n
        self._preemptions = np.zeros(n, dtype=np.int64)
        self._placement: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self._running: set[int] = set()
        self._pending: set[int] = set()
        self._pending_gpus = 0
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = 0
        self._done = 0
        self._dirty = False
        self._wake_s = np.inf  # the earliest wake-up in the heap that is still ahead

    # -- event plumbing -------------------------------------------------------------------------
    def _push(self, t: float, kind: int, row: int = -1, epoch: int = 0) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, row, epoch))

    def run(self) -> RunResult:
        for row, spec in enumerate(self.workload.specs):
            self._push(spec.submit_s, ARRIVAL, row)
        tick = self.scheduler.tick_s
        if tick and self.workload.specs:
            first = min(spec.submit_s for spec in self.workload.specs)
            self._push(first + tick, TICK)
        heap, events, n = self._heap, 0, len(self.workload.specs)
        # Round-based policies (tick_s set) preempt only at their rounds, as Themis's leases and
        # Tiresias's/Gavel's rounds do; between rounds, arrivals and completions only fill free
        # GPUs. Event-driven ones (SRTF) may preempt at every pass.
        round_due = tick is None
        while heap:
            t, _, kind, row, epoch = heapq.heappop(heap)
            if kind == ARRIVAL:
                self._on_arrival(t, row)
                events += 1
            elif kind == TICK:
                self._dirty = self._dirty or bool(self._pending)
                round_due = True
                if self._done < n:
                    self._push(t + tick, TICK)
                events += 1
            elif kind == WAKE:
                self._dirty = self._dirty or bool(self._pending)
                self._wake_s = np.inf if t >= self._wake_s else self._wake_s
                events += 1
            elif epoch == self._epoch[row]:  # an eval not made stale by a preemption
                self._on_eval(t, row)
                events += 1
            if not heap or heap[0][0] > t:  # the instant is over: one scheduling pass
                if self._dirty:
                    self._schedule(t, preempt=self.scheduler.preemptive and round_due)
                    if tick is None and self._pending:
                        self._plan_wake(t)
                round_due = tick is None
        return RunResult(
            scheduler=self.scheduler.name,
            capacity=self.nodes.capacity,
            finish_s=self._finish,
            executed_s=self.table.executed_s.copy(),
            delivered_eval=self._best_eval,
            delivered_executed_s=self._best_executed,
            evals_done=self.table.evals_seen.copy(),
            stopped=self._stopped,
            stop_reasons=self._reasons,
            preemptions=self._preemptions,
            events=events,
        )

    # -- job lifecycle ----------------------------------------------------------------------------
    def _on_arrival(self, t: float, row: int) -> None:
        spec, table = self.workload.specs[row], self.table
        table.job_ids[row] = spec.job_id
        table.kinds[row] = str(spec.kind)
        table.gpus[row] = spec.gpus
        table.submit_s[row] = spec.submit_s
        table.estimate_s[row] = spec.estimate_s
        table.pending_since_s[row] = t
        self._pending.add(row)
        self._pending_gpus += spec.gpus
        self._dirty = True

    def _start(self, t: float, row: int, placement: list[tuple[int, int]]) -> None:
        self._pending.discard(row)
        self._pending_gpus -= int(self.table.gpus[row])
        self._running.add(row)
        self._placement[row] = placement
        self.table.running[row] = True
        self.table.run_start_s[row] = t
        productive = t + (self.restore_s if self._preemptions[row] else 0.0)
        self._productive_start[row] = productive
        next_progress = (self.table.evals_seen[row] + 1) / self._n_evals[row]
        due = productive + (next_progress - self._progress_base[row]) * self._duration[row]
        self._push(due, EVAL, row, int(self._epoch[row]))

    def _leave_gpus(self, t: float, row: int) -> None:
        self._running.discard(row)
        self.nodes.release(self._placement[row])
        self._placement[row] = []
        self.table.running[row] = False
        self.table.executed_s[row] += t - self.table.run_start_s[row]

    def _preempt(self, t: float, row: int) -> None:
        worked = max(0.0, t - self._productive_start[row])
        self._progress_base[row] += worked / self._duration[row]
        self._leave_gpus(t, row)
        self._epoch[row] += 1
        self._preemptions[row] += 1
        self._pending.add(row)
        self._pending_gpus += int(self.table.gpus[row])
        self.table.pending_since_s[row] = t

    def _end(self, t: float, row: int, reason: str = "") -> None:
        self._leave_gpus(t, row)
        self._finish[row] = t
        self._stopped[row] = bool(reason)
        self._reasons[row] = reason
        self._done += 1
        self._dirty = True
        self.scheduler.job_ended(self.table.job_ids[row])

    def _on_eval(self, t: float, row: int) -> None:
        table, truth = self.table, self.workload.truths[row]
        i, n = int(table.evals_seen[row]), int(self._n_evals[row])
        executed = table.executed_s[row] + (t - table.run_start_s[row])
        progress = (i + 1) / n
        self._progress_base[row] = progress
        self._productive_start[row] = t
        table.evals_seen[row] = i + 1
        table.last_progress[row] = progress
        score, loss = float(truth.observed_scores[i]), float(truth.observed_losses[i])
        if np.isnan(table.loss_first[row]):
            table.loss_first[row] = loss
        table.loss_prev[row], table.loss_prev_exec_s[row] = (
            table.loss_last[row],
            table.loss_last_exec_s[row],
        )
        table.loss_last[row], table.loss_last_exec_s[row] = loss, executed
        if score > self._best[row]:
            self._best[row], self._best_eval[row], self._best_executed[row] = score, i, executed
        if i + 1 == n:
            self._end(t, row)
            return
        proxies = truth.observed_proxies
        event = EvalEvent(
            job_id=table.job_ids[row],
            kind=table.kinds[row],
            step=i + 1,
            progress=progress,
            score=score,
            loss=loss,
            proxy=None if proxies is None else float(proxies[i]),
        )
        decision = self.scheduler.observe(event)
        if decision.stop:
            self._end(t, row, decision.reason or "stopped")
            return
        self._push(t + self._duration[row] / n, EVAL, row, int(self._epoch[row]))

    # -- scheduling -------------------------------------------------------------------------------
    def _active_view(self, t: float) -> ClusterView:
        rows = np.fromiter(sorted(self._running | self._pending), dtype=np.int64)
        return ClusterView(self.table, rows, t, self.nodes.capacity)

    def _plan_wake(self, t: float) -> None:
        """Ask an event-driven policy when its order next changes; keep the earliest wake-up."""
        due = self.scheduler.next_change_s(self._active_view(t))
        if due is not None and t < due < self._wake_s:
            self._wake_s = due
            self._push(due, WAKE)

    def _schedule(self, t: float, preempt: bool) -> None:
        """One scheduling pass: start the policy's best jobs, displacing others if `preempt`."""
        self._dirty = False
        if not self._pending:
            return
        free = self.nodes.free_total
        backfill = self.scheduler.backfill
        if self._pending_gpus <= free:  # everything fits: any work-conserving policy runs all
            pending = sorted(self._pending, key=lambda r: (self.table.submit_s[r], r))
            self._start_in_order(t, pending, backfill)
            return
        ordered = self.scheduler.order(self._active_view(t))
        running = self.table.running[ordered]
        if preempt:
            admitted = greedy_admit(self.table.gpus[ordered], self.nodes.capacity, backfill)
            desired, displaced = ordered[admitted & ~running], ordered[~admitted & running].tolist()
        else:
            waiting = ordered[~running]
            desired = waiting[greedy_admit(self.table.gpus[waiting], free, backfill)]
            displaced = []
        for row in displaced:
            self.nodes.release(self._placement[row])
        self._start_in_order(t, desired.tolist(), backfill)
        for row in displaced:  # undo a preemption whose GPUs no start could use
            if self.nodes.fits_back(self._placement[row]):
                self.nodes.take(self._placement[row])
            else:
                self._placement[row] = []  # its GPUs were released above
                self._preempt(t, row)
        if backfill:
            self._backfill(t, ordered[~self.table.running[ordered]], set(displaced))

    def _start_in_order(self, t: float, rows: list[int], backfill: bool) -> None:
        """Start jobs in order where placement finds them GPUs; without backfill, the first one
        that cannot be placed (GPUs free but fragmented across nodes) stops the rest."""
        for row in rows:
            placement = self.nodes.place(int(self.table.gpus[row]))
            if placement is not None:
                self._start(t, row, placement)
            elif not backfill:
                return

    def _backfill(self, t: float, pending: np.ndarray, skip: set[int]) -> None:
        """Fill GPUs left free by fragmentation with the best pending jobs that fit."""
        for row in pending.tolist():
            if self.nodes.free_total == 0:
                return
            if row not in skip and self.table.gpus[row] <= self.nodes.free_total:
                placement = self.nodes.place(int(self.table.gpus[row]))
                if placement is not None:
                    self._start(t, row, placement)
