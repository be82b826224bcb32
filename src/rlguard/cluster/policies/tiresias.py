"""Tiresias 2D-LAS, discretized (Gu et al., NSDI'19), as its simulator runs it (`dlas-gpu`).

A job's attained service is GPUs x executed time. Thresholds split it into queues (the simulator's
defaults: 3250 and 7200 GPU-seconds, three queues); a higher queue always runs first, so big or
long jobs sink without anyone having to know their size. Inside a queue the order is a list, as
in the simulator (SymbioticLab/Tiresias, simulator/run_sim.py, `dlas_sim_jobs`):
- a new job joins the end of the top queue; a running job that reaches its queue's threshold is
  demoted one queue at a time, joining the end of the next queue at the moment it crosses;
- after every pass the jobs that run move ahead of the waiting ones (order kept inside each group).
  So a running job is displaced only by jobs ahead of it: those of higher queues (and a waiting job
  that was already queued where a demoted job lands), never by an older waiting job of its own
  queue. Admission walks the queues in order and skips what does not fit (the engine's greedy).
- starvation (off by default, as in `dlas-gpu`; `promote_knob=8` is `dlas-gpu-8`): a waiting job
  below the top queue whose waiting time since it first ran after its last promotion (or arrival)
  reaches `promote_knob` x its executed time since then is promoted to the end of the top queue,
  and that service is reset (it is demoted again after another `thresholds[0]` GPU-seconds).

The simulator is event-driven: it re-plans at every arrival, completion, demotion and promotion.
With `tick_s=None` this policy is too (`next_change_s` names the next demotion or promotion); the
default keeps our rounds (`tick_s=300`): preemption waits for a round, which bounds how often a
platform checkpoints and restores jobs.

State, kept per row of the visible table (`view.rows`, a job's stable handle while it is active;
checked against its submit time, and cleared when the clock runs backwards, i.e. a new run): its
queue, its place in the queue (a sequence number, renumbered at each new instant), its executed
time at its last promotion, and its waiting total when it first ran after that. The rest is
derived from the view at each call, so a pass the engine makes without asking the policy (all
waiting jobs fit) loses nothing: a demotion in between is placed by the moment it happened,
computed from the service the job has attained. Vectorized over the view: no Python loop per job.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated

import numpy as np
from pydantic import AfterValidator, Field, validate_call

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.view import ClusterView

DEFAULT_THRESHOLDS = (3250.0, 7200.0)
"""Queue limits in GPU-seconds: the simulator's `queue_limit` with its `num_queue = 3` (its third
limit, 18000, is never reached with three queues)."""

EPS = 1e-6
"""Seconds (and GPU-seconds) below which a threshold counts as reached: a wake-up computed for a
crossing lands on it up to float rounding."""


def _increasing(limits: tuple[float, ...]) -> tuple[float, ...]:
    if any(b <= a for a, b in pairwise(limits)):
        raise ValueError("must be strictly increasing")
    return limits


Thresholds = Annotated[
    tuple[Annotated[float, Field(gt=0, allow_inf_nan=False)], ...], AfterValidator(_increasing)
]


class Tiresias(Policy):
    name = "tiresias"
    preemptive = True

    @validate_call
    def __init__(
        self,
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
        promote_knob: Annotated[float, Field(ge=0)] = 0.0,
        tick_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = 300.0,
    ) -> None:
        self.thresholds = np.asarray(thresholds, dtype=float)
        self.promote_knob = float(promote_knob)  # 0: no promotion
        self.tick_s = tick_s
        self._clear()

    def _clear(self) -> None:
        self._submit = np.zeros(0)  # NaN: a row never seen
        self._queue = np.zeros(0, dtype=np.int64)
        self._place = np.zeros(0, dtype=np.int64)
        self._base = np.zeros(0)  # executed time at the last promotion
        self._anchor = np.zeros(0)  # waiting total when it first ran after that; NaN: not yet
        self._now = -np.inf
        self._next = 0  # the place the next job joining a queue takes

    def priority(self, view: ClusterView) -> np.ndarray:
        """Queue, then place in it, as one number: places are below `_next`, and far below 2**53."""
        self._update(view)
        rows = view.rows
        return (self._queue[rows] * (self._next + 1) + self._place[rows]).astype(float)

    def next_change_s(self, view: ClusterView) -> float | None:
        known = self._known(view)
        queue = self._lookup(self._queue, view, known, 0)
        since = view.executed_s - self._lookup(self._base, view, known, 0.0)
        times = [np.inf]
        demotable = view.running & (queue < len(self.thresholds))
        if demotable.any():
            gpus = view.gpus[demotable]
            limit = self.thresholds[queue[demotable]]
            times.append((view.now + (limit - gpus * since[demotable]) / gpus).min())
        if self._promotes:
            anchor = self._lookup(self._anchor, view, known, np.nan)
            watched, waited = self._watched(view, queue, since, anchor)
            if watched.any():
                due = view.now + self.promote_knob * since[watched] - waited[watched]
                times.append(due.min())
        first = min(times)
        return float(first) if np.isfinite(first) and first > view.now + EPS else None

    @property
    def _promotes(self) -> bool:
        return 0 < self.promote_knob < np.inf

    # -- the queue lists --------------------------------------------------------------------------
    def _update(self, view: ClusterView) -> None:
        if view.now < self._now:
            self._clear()
        later, self._now = view.now > self._now, view.now
        rows = view.rows
        if not len(rows):
            return
        self._grow(int(rows.max()) + 1)
        new = self._submit[rows] != view.submit_s  # never seen (NaN), or another job's row
        if later:
            self._running_first(view, ~new)
        if new.any():
            self._arrive(view, np.flatnonzero(new))
        since = view.executed_s - self._base[rows]
        self._demote(view, since)
        if self._promotes:
            first_run = view.running & (since > 0) & np.isnan(self._anchor[rows])
            self._anchor[rows[first_run]] = self._waited_total(view)[first_run]
            self._promote(view, since)

    def _running_first(self, view: ClusterView, old: np.ndarray) -> None:
        """The end of the previous pass: inside each queue, the jobs that run go ahead of the
        waiting ones (each group keeps its order). Done once per instant, before this instant's
        arrivals, demotions and promotions join the ends of their queues."""
        rows = view.rows[old]
        group = 2 * self._queue[rows] + ~view.running[old]  # queue, then running before waiting
        ranked = rows[np.argsort(group * (self._next + 1) + self._place[rows])]
        self._place[ranked] = np.arange(len(ranked))
        self._next = len(ranked)

    def _arrive(self, view: ClusterView, new: np.ndarray) -> None:
        """New jobs join the end of the top queue in submission order."""
        new = new[np.lexsort((view.rows[new], view.submit_s[new]))]
        rows = view.rows[new]
        self._submit[rows] = view.submit_s[new]
        self._queue[rows], self._base[rows], self._anchor[rows] = 0, 0.0, np.nan
        self._append(rows)

    def _demote(self, view: ClusterView, since: np.ndarray) -> None:
        """Running jobs past their queue's threshold join the end of the queue they crossed into,
        in the order they crossed (ties: submission, then row), as the simulator's events do."""
        attained = view.gpus * since
        level = np.searchsorted(self.thresholds, attained + EPS, side="right")
        down = np.flatnonzero(view.running & (level > self._queue[view.rows]))
        if not down.size:
            return
        crossed = view.now - (attained[down] - self.thresholds[level[down] - 1]) / view.gpus[down]
        down = down[np.lexsort((view.rows[down], view.submit_s[down], crossed))]
        self._queue[view.rows[down]] = level[down]
        self._append(view.rows[down])

    def _promote(self, view: ClusterView, since: np.ndarray) -> None:
        rows = view.rows
        watched, waited = self._watched(view, self._queue[rows], since, self._anchor[rows])
        up = np.flatnonzero(watched & (waited + EPS >= self.promote_knob * since))
        if not up.size:
            return
        up = up[np.lexsort((rows[up], view.submit_s[up]))]
        r = rows[up]
        self._queue[r], self._base[r], self._anchor[r] = 0, view.executed_s[up], np.nan
        self._append(r)

    # -- helpers ----------------------------------------------------------------------------------
    def _watched(
        self, view: ClusterView, queue: np.ndarray, since: np.ndarray, anchor: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The waiting jobs the starvation rule watches, and how long each has waited since it
        first ran after its last promotion (or arrival)."""
        watched = ~view.running & (queue > 0) & (since > 0) & ~np.isnan(anchor)
        return watched, self._waited_total(view) - np.where(watched, anchor, 0.0)

    def _known(self, view: ClusterView) -> np.ndarray:
        """Rows this policy has seen, holding the same job (same submit time)."""
        return self._lookup(self._submit, view, np.ones(len(view), dtype=bool), np.nan) == (
            view.submit_s
        )

    @staticmethod
    def _lookup(column: np.ndarray, view: ClusterView, known: np.ndarray, default) -> np.ndarray:  # type: ignore[no-untyped-def]
        inside = known & (view.rows < len(column))
        out = np.full(len(view), default, dtype=column.dtype)
        out[inside] = column[view.rows[inside]]
        return out

    @staticmethod
    def _waited_total(view: ClusterView) -> np.ndarray:
        """Time spent waiting since submission: active time not spent on GPUs."""
        return view.now - view.submit_s - view.executed_s

    def _append(self, rows: np.ndarray) -> None:
        self._place[rows] = self._next + np.arange(len(rows))
        self._next += len(rows)

    def _grow(self, size: int) -> None:
        if size <= len(self._submit):
            return
        pad = max(size, 2 * len(self._submit)) - len(self._submit)
        self._submit = np.concatenate([self._submit, np.full(pad, np.nan)])
        self._queue = np.concatenate([self._queue, np.zeros(pad, dtype=np.int64)])
        self._place = np.concatenate([self._place, np.zeros(pad, dtype=np.int64)])
        self._base = np.concatenate([self._base, np.zeros(pad)])
        self._anchor = np.concatenate([self._anchor, np.full(pad, np.nan)])
