"""The discrete-event engine: arrivals, job segments and scheduling ticks.

A job runs in segments: from a start to its preemption or its end. Its evals are evenly spaced in
progress; the last one (or the one its stop rule stops it at) ends it. Stop verdicts are known
when a job is loaded (verdicts.py), so a running job has exactly one pending event, the end of its
segment, instead of one per eval: a heap of event times, with the (row, epoch) of each event due
at a time. Preempting a job bumps its epoch, so its pending end goes stale and is skipped when
popped (lazy invalidation). The evals in between are applied when something needs them, exactly
as if each had been an event: before a scheduling pass that asks the policy (which reads their
losses and progress), at a preemption, and at the end (the delivered checkpoint). Arrivals are
pulled from the job stream in submission order; ticks are events like segment ends, and so are
wake-ups: an event-driven policy (no `tick_s`) may name the time its order next changes on its
own (`next_change_s`), and a pass then runs at that time.

All events of one instant are applied before one scheduling pass, in the order an engine with one
event per eval applied them (`_pushers`), so results match that engine's to the bit.
Deterministic: the only randomness is in the workload.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rlguard.cluster.blocks import JobBlock, JobStream, stream_of
from rlguard.cluster.jobs import JobKind, Workload
from rlguard.cluster.nodes import Nodes
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.verdicts import stop_points
from rlguard.cluster.view import ClusterView, VisibleTable

TICK, WAKE = -1, -2
"""The rows of events that are not a job's: a scheduling tick, a wake-up."""


@dataclass
class RunResult:
    """What happened to every job in one run (aligned with the workload's order), and the few
    facts about each job the metrics score it on."""

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
    policy_passes: int  # scheduling passes that asked the policy (the rest ran every pending job)
    gpus: np.ndarray
    submit_s: np.ndarray
    rlhf: np.ndarray
    hacking: np.ndarray
    delivered_score: np.ndarray  # true (noise-free) score of the delivered checkpoint
    peak_score: np.ndarray  # best true score over the checkpoints the job evaluates


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


def _chain(first: float, step: float, count: int) -> list[float]:
    """The times of `count` evals, the first at `first`, then every `step` (summed one by one)."""
    times, t = [], first
    for _ in range(count):
        times.append(t)
        t += step
    return times


class Engine:
    def __init__(
        self,
        workload: Workload | JobStream,
        scheduler: Scheduler,
        *,
        gpus: int,
        node_gpus: int = 8,
        restore_s: float = 60.0,
    ) -> None:
        per_node = min(node_gpus, gpus)
        if gpus <= 0 or gpus % per_node:
            raise ValueError(f"cluster GPUs must be a positive multiple of {node_gpus}, got {gpus}")
        if restore_s < 0:
            raise ValueError(f"restore_s must be >= 0, got {restore_s}")
        stream = stream_of(workload) if isinstance(workload, Workload) else workload
        self.stream = stream
        self.scheduler = scheduler
        self.restore_s = restore_s
        self.nodes = Nodes(gpus // per_node, per_node)
        n = stream.n_jobs
        self.table = VisibleTable(n)
        # What each job is, filled as blocks load (jobs are rows, in submission order). The engine
        # reads these per event, so they are also kept as lists: a list item is several times
        # cheaper to read than a numpy scalar, and small ints cost no memory of their own.
        self._gpus: list[int] = [0] * n
        self._n_evals: list[int] = [1] * n
        self._duration: list[float] = [1.0] * n
        self._last: list[int] = [0] * n  # index of the eval that ends the job
        self._delivered: list[int] = [-1] * n  # its best observed eval by then
        self._columns = {
            name: np.zeros(n, dtype=dtype)
            for name, dtype in (
                ("n_evals", np.int64),
                ("duration", float),
                ("last", np.int64),
                ("delivered", np.int64),
                ("rlhf", bool),
                ("hacking", bool),
                ("delivered_score", float),
                ("peak_score", float),
            )
        }
        self._reasons: dict[int, str] = {}
        self._losses = np.zeros((n, stream.width))
        # How each job is doing.
        self._epoch: list[int] = [0] * n
        self._preemptions: list[int] = [0] * n
        self._next_due = np.zeros(n)  # time of the next eval of a running job
        self._progress_base = np.zeros(n)
        self._productive_start = np.zeros(n)
        self._delivered_executed = np.zeros(n)
        self._finish = np.full(n, np.nan)
        self._active = np.zeros(n, dtype=bool)
        # The last scheduling pass's view: its rows, the rows arrived by then, and its order.
        self._view = self._last_order = np.zeros(0, dtype=np.int64)
        self._view_upto = 0
        self._position = np.zeros(n, dtype=np.int64)  # scratch: a row's position in a view
        self._placement: dict[int, list[tuple[int, int]]] = {}
        self._pending: set[int] = set()
        self._pending_gpus = 0
        # Pending events: a heap of their times, and per time the (row, epoch) of each event due
        # then (row -1: a tick, its epoch the tick's number).
        self._times: list[float] = []
        self._due: dict[float, list[tuple[int, int]]] = {}
        self._ticks: list[float] = []
        # Each job's current segment: its first eval's time, its eval count, its start's number.
        self._segment: dict[int, tuple[float, int, int]] = {}
        self._starts = 0
        self._arrived = 0
        self._done = 0
        self._events = 0
        self._policy_passes = 0
        self._dirty = False
        self._blocks = iter(stream.blocks)
        self._loaded, self._last_submit = 0, -math.inf
        self._first = self._load(next(self._blocks, None))  # a workload fails here, at once
        self._wake_s = math.inf  # the earliest wake-up still ahead

    # -- loading jobs ---------------------------------------------------------------------------
    def _load(self, block: JobBlock | None) -> JobBlock | None:
        """Take in the next block of jobs: check it, decide its stop verdicts, keep its columns."""
        if block is None or not len(block):
            return block
        lo, hi = self._loaded, self._loaded + len(block)
        if hi > self.stream.n_jobs:
            raise ValueError(f"the job stream holds more than its {self.stream.n_jobs} jobs")
        big = np.flatnonzero(block.gpus > self.nodes.capacity)
        if big.size:
            raise ValueError(
                f"job {block.job_ids[big[0]]} asks for more GPUs than the cluster's "
                f"{self.nodes.capacity}"
            )
        submit, n = block.submit_s, block.n_evals
        if np.any(submit[1:] < submit[:-1]) or submit[0] < self._last_submit:
            raise ValueError("a job stream must be in submission order")
        if np.any(n < 1) or np.any(n > self.stream.width):
            raise ValueError(f"eval counts must lie in [1, {self.stream.width}]")
        stops, reasons = stop_points(self.scheduler, block)
        last = np.where(stops >= 0, stops, n - 1)
        self._reasons.update({lo + j: reason for j, reason in reasons.items()})
        width = block.scores.shape[1]
        self._losses[lo:hi, :width] = block.losses
        # The delivered checkpoint: the first best observed score up to the last eval (a NaN
        # score is never an improvement, so a job that observes only NaN delivers index -1).
        steps = np.arange(width)
        scores = np.where(steps <= last[:, None], block.scores, -np.inf)
        scores = np.where(np.isnan(scores), -np.inf, scores)
        delivered = np.argmax(scores, axis=1)
        delivered[np.max(scores, axis=1) == -np.inf] = -1
        at = np.where(delivered >= 0, delivered, n - 1)
        for name, values in (
            ("n_evals", n),
            ("duration", block.duration_s),
            ("last", last),
            ("delivered", delivered),
            ("rlhf", np.array(block.kinds) == str(JobKind.RLHF)),
            ("hacking", block.hacking),
            ("delivered_score", block.true_scores[np.arange(len(block)), at]),
            (
                "peak_score",
                np.max(np.where(steps < n[:, None], block.true_scores, -np.inf), axis=1),
            ),
        ):
            self._columns[name][lo:hi] = values
        for name in ("gpus", "n_evals", "duration", "last", "delivered"):
            column = block.gpus if name == "gpus" else self._columns[name][lo:hi]
            getattr(self, f"_{name}")[lo:hi] = column.tolist()
        self._loaded, self._last_submit = hi, float(submit[-1])
        return block

    def _arrivals(self) -> Iterator[tuple[float, int, tuple[str, str, float]]]:
        """(submit time, row, (job id, kind, estimate)) of every job, in submission order,
        loading blocks as the clock reaches them."""
        block, row = self._first, 0
        while block is not None:
            specs = zip(block.job_ids, block.kinds, block.estimate_s.tolist(), strict=True)
            for submit, spec in zip(block.submit_s.tolist(), specs, strict=True):
                yield submit, row, spec
                row += 1
            block = self._load(next(self._blocks, None))
        if row != self.stream.n_jobs:
            raise ValueError(f"the job stream ended after {row} of its {self.stream.n_jobs} jobs")

    # -- the event loop -------------------------------------------------------------------------
    def _push(self, t: float, row: int, epoch: int) -> None:
        at = self._due.get(t)
        if at is None:
            self._due[t] = [(row, epoch)]
        else:
            at.append((row, epoch))
        heapq.heappush(self._times, t)

    def _push_tick(self, t: float) -> None:
        self._push(t, TICK, len(self._ticks))
        self._ticks.append(t)

    def _pushers(self, event: tuple[int, int]) -> list[tuple[float, ...]]:
        """What pushed an event in an engine with one event per eval, walking back, to order
        events of one instant by that engine's push order (its tie-break).

        Its events were pushed by a scheduling pass (a segment's first eval), by the eval before
        (the next eval), by the tick before (the next tick), or at set-up (the first tick; arrivals
        came first of all). The walk gives (time, 0) per pushing event and ends with
        (time, 1, start number) for a pass or (-inf, -1) for set-up; the sequences compare in that
        engine's push order. A stale event is never applied, so any place will do for it.
        """
        row, epoch = event
        if row == WAKE:  # a wake-up only asks for a pass: its place among the others is moot
            return [(-math.inf, -1)]
        if row == TICK:
            return [*((self._ticks[k], 0) for k in range(epoch - 1, -1, -1)), (-math.inf, -1)]
        if epoch != self._epoch[row]:
            return []
        first, count, number = self._segment[row]
        times = _chain(first, self._duration[row] / self._n_evals[row], count - 1)
        return [*((e, 0) for e in reversed(times)), (float(self.table.run_start_s[row]), 1, number)]

    def run(self) -> RunResult:
        n, tick, times, epochs = self.stream.n_jobs, self.scheduler.tick_s, self._times, self._epoch
        arrivals = self._arrivals()
        next_t, next_row, spec = next(arrivals, (math.inf, -1, None))
        if tick and next_row >= 0:
            self._push_tick(next_t + tick)
        # Round-based policies (tick_s set) preempt only at their rounds, as Themis's leases and
        # Tiresias's/Gavel's rounds do; between rounds, arrivals and completions only fill free
        # GPUs. Event-driven ones (SRTF) may preempt at every pass.
        round_due = tick is None
        wakes = tick is None and self.scheduler.wakes
        while True:
            if next_row >= 0 and (not times or next_t <= times[0]):  # arrivals come first
                t = next_t
                self._on_arrival(t, next_row, spec)
                next_t, next_row, spec = next(arrivals, (math.inf, -1, None))
            elif times:
                t = heapq.heappop(times)
                due = self._due.pop(t)
                for _ in range(len(due) - 1):  # the other events due at t
                    heapq.heappop(times)
                if len(due) > 1:
                    due.sort(key=self._pushers)
                for row, epoch in due:
                    if row == TICK:
                        self._dirty = self._dirty or bool(self._pending)
                        round_due = True
                        if self._done < n:
                            self._push_tick(t + tick)
                        self._events += 1
                    elif row == WAKE:
                        self._dirty = self._dirty or bool(self._pending)
                        self._wake_s = math.inf if t >= self._wake_s else self._wake_s
                        self._events += 1
                    elif epoch == epochs[row]:  # a segment end not made stale by a preemption
                        self._on_end(t, row)
            else:
                break
            if next_t > t and (not times or times[0] > t):  # the instant is over: one pass
                if self._dirty:
                    self._schedule(t, preempt=self.scheduler.preemptive and round_due)
                    if wakes and self._pending:
                        self._plan_wake(t)
                round_due = tick is None
        return self._result()

    def _result(self) -> RunResult:
        table, columns = self.table, self._columns
        arrays = {
            "finish_s": self._finish,
            "executed_s": table.executed_s.copy(),
            "delivered_eval": columns["delivered"],
            "delivered_executed_s": self._delivered_executed,
            "evals_done": table.evals_seen.copy(),
            "stopped": np.zeros(self.stream.n_jobs, dtype=bool),
            "preemptions": np.array(self._preemptions, dtype=np.int64),
            "gpus": table.gpus.copy(),
            "submit_s": table.submit_s.copy(),
            **{k: columns[k] for k in ("rlhf", "hacking", "delivered_score", "peak_score")},
        }
        arrays["stopped"][list(self._reasons)] = True
        reasons = [self._reasons.get(row, "") for row in range(self.stream.n_jobs)]
        order = self.stream.order
        if order is not None:  # back to the order the jobs were given in
            for name, values in arrays.items():
                arrays[name] = np.empty_like(values)
                arrays[name][order] = values
            by_input = [""] * len(reasons)
            for row, reason in zip(order.tolist(), reasons, strict=True):
                by_input[row] = reason
            reasons = by_input
        return RunResult(
            scheduler=self.scheduler.name,
            capacity=self.nodes.capacity,
            stop_reasons=reasons,
            events=self._events,
            policy_passes=self._policy_passes,
            **arrays,
        )

    # -- job lifecycle ----------------------------------------------------------------------------
    def _on_arrival(self, t: float, row: int, spec: tuple[str, str, float]) -> None:
        table = self.table
        table.job_ids[row], table.kinds[row], table.estimate_s[row] = spec
        table.gpus[row] = self._gpus[row]
        table.submit_s[row] = table.pending_since_s[row] = t
        self._active[row] = True
        self._arrived = row + 1
        self._pending.add(row)
        self._pending_gpus += self._gpus[row]
        self._dirty = True
        self._events += 1

    def _start(self, t: float, row: int, placement: list[tuple[int, int]]) -> None:
        self._pending.discard(row)
        self._pending_gpus -= self._gpus[row]
        self._placement[row] = placement
        table = self.table
        table.running[row] = True
        table.run_start_s[row] = t
        productive = t + (self.restore_s if self._preemptions[row] else 0.0)
        self._productive_start[row] = productive
        seen, n, duration = int(table.evals_seen[row]), self._n_evals[row], self._duration[row]
        first = productive + ((seen + 1) / n - float(self._progress_base[row])) * duration
        self._next_due[row] = first
        step, count = duration / n, self._last[row] - seen + 1
        end = first
        for _ in range(count - 1):
            end += step
        self._starts += 1
        self._segment[row] = (first, count, self._starts)
        self._push(end, row, self._epoch[row])

    def _leave_gpus(self, t: float, row: int) -> None:
        self.nodes.release(self._placement.pop(row, []))
        self.table.running[row] = False
        self.table.executed_s[row] += t - self.table.run_start_s[row]

    def _preempt(self, t: float, row: int) -> None:
        """Take a running job off its GPUs (its evals up to `t` have been applied)."""
        worked = max(0.0, t - float(self._productive_start[row]))
        self._progress_base[row] += worked / self._duration[row]
        self._leave_gpus(t, row)
        self._epoch[row] += 1
        self._preemptions[row] += 1
        self._pending.add(row)
        self._pending_gpus += self._gpus[row]
        self.table.pending_since_s[row] = t

    def _on_end(self, t: float, row: int) -> None:
        """The last eval of the job's segment ends the job: it completes or is stopped."""
        table = self.table
        seen, last, delivered = int(table.evals_seen[row]), self._last[row], self._delivered[row]
        if delivered >= seen:  # the delivered checkpoint is among the evals not yet applied
            due, step = float(self._next_due[row]), self._duration[row] / self._n_evals[row]
            for _ in range(delivered - seen):
                due += step
            executed = float(table.executed_s[row]) + (due - float(table.run_start_s[row]))
            self._delivered_executed[row] = executed
        table.evals_seen[row] = last + 1
        self._events += last + 1 - seen
        del self._segment[row]
        self._leave_gpus(t, row)
        self._finish[row] = t
        self._active[row] = False
        self._done += 1
        self._dirty = True

    def _apply_evals(self, rows: np.ndarray, t: float) -> None:
        """Apply the evals of running `rows` due by `t` (not their last), as one event each would.

        Vectorized over the rows, one eval per row per round; each round does for every row what
        the per-eval engine did: progress, executed time, the loss columns policies read, and the
        executed time of the delivered checkpoint when this eval is it.
        """
        table, columns = self.table, self._columns
        n_evals, last, duration = columns["n_evals"], columns["last"], columns["duration"]
        r = rows[(self._next_due[rows] <= t) & (table.evals_seen[rows] < last[rows])]
        while r.size:
            i, e = table.evals_seen[r], self._next_due[r]
            executed = table.executed_s[r] + (e - table.run_start_s[r])
            loss = self._losses[r, i]
            first = np.isnan(table.loss_first[r])
            table.loss_first[r[first]] = loss[first]
            table.loss_prev[r] = table.loss_last[r]
            table.loss_prev_exec_s[r] = table.loss_last_exec_s[r]
            table.loss_last[r], table.loss_last_exec_s[r] = loss, executed
            progress = (i + 1) / n_evals[r]
            table.last_progress[r] = self._progress_base[r] = progress
            self._productive_start[r] = e
            table.evals_seen[r] = i + 1
            delivered = i == columns["delivered"][r]
            self._delivered_executed[r[delivered]] = executed[delivered]
            due = e + duration[r] / n_evals[r]
            self._next_due[r] = due
            self._events += len(r)
            r = r[(due <= t) & (i + 1 < last[r])]

    # -- scheduling -------------------------------------------------------------------------------
    def _view_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the jobs pending or running, in order, and a hint for sorting them: their
        positions in the last pass's order, then those of the rows new since.

        Built from the last pass's rows (those still active) and the rows that arrived since:
        every active job was one or the other, and arrivals come in row order.
        """
        kept = self._view[self._active[self._view]]
        new = np.arange(self._view_upto, self._arrived)
        rows = np.concatenate([kept, new[self._active[new]]])
        position = self._position
        position[rows] = np.arange(len(rows))
        last = self._last_order[self._active[self._last_order]]
        hint = np.concatenate([position[last], np.arange(len(kept), len(rows))])
        self._view, self._view_upto = rows, self._arrived
        return rows, hint

    def _plan_wake(self, t: float) -> None:
        """Ask an event-driven policy when its order next changes; keep the earliest wake-up."""
        rows, _ = self._view_rows()
        self._apply_evals(rows[self.table.running[rows]], t)
        due = self.scheduler.next_change_s(ClusterView(self.table, rows, t, self.nodes.capacity))
        if due is not None and t < due < self._wake_s:
            self._wake_s = due
            self._push(due, WAKE, 0)

    def _schedule(self, t: float, preempt: bool) -> None:
        """One scheduling pass: start the policy's best jobs, displacing others if `preempt`."""
        self._dirty = False
        if not self._pending:
            return
        free = self.nodes.free_total
        backfill = self.scheduler.backfill
        if self._pending_gpus <= free:  # everything fits: any work-conserving policy runs all
            self._start_in_order(t, sorted(self._pending), backfill)  # (submission, row) order
            return
        self._policy_passes += 1
        rows, hint = self._view_rows()
        self._apply_evals(rows[self.table.running[rows]], t)
        view = ClusterView(self.table, rows, t, self.nodes.capacity)
        ordered = self.scheduler.order(view, hint)
        self._last_order = ordered
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
            placement = self.nodes.place(self._gpus[row])
            if placement is not None:
                self._start(t, row, placement)
            elif not backfill:
                return

    def _backfill(self, t: float, pending: np.ndarray, skip: set[int]) -> None:
        """Fill GPUs left free by fragmentation with the best pending jobs that fit.

        Free GPUs only shrink here, and a size that cannot be placed means no larger size can
        (it would need a node with as many free GPUs, or more whole nodes): so jobs too large for
        the free count, or as large as one that failed, are passed over without trying.
        """
        free = self.nodes.free_total
        if not free:
            return
        gpus = self.table.gpus[pending]
        fits = gpus <= free
        too_big = math.inf
        for row, size in zip(pending[fits].tolist(), gpus[fits].tolist(), strict=True):
            if self.nodes.free_total == 0:
                return
            if row in skip or size > self.nodes.free_total or size >= too_big:
                continue
            placement = self.nodes.place(size)
            if placement is None:
                too_big = size
            else:
                self._start(t, row, placement)
