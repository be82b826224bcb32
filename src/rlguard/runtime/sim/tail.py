"""The serverless executor's generation tail: what a worker does once its generation is done.

A worker is free from its generation end (its last sequence, or its cut) until training. With
`overlap` it scores finished groups meanwhile (both scoring passes, at the profile's scoring
speed, one group at a time, in the order the groups finished) while the tail still decodes on
other workers: per-phase functions started on demand allow it, and synchronous RLHF only needs
every score before training. This is our assumption, not a component the paper names (see
docs/runtime.md). A group is started in the tail only before generation ends.

A free worker with no finished group to score faces an idle gap until generation ends, predicted
from history (`expected`). A gap shorter than both the cold start and the keep-alive is bridged by
holding the worker (it scores groups that finish later); a longer one releases it at once and
pre-warms a new one to be ready when generation is expected to end (billed from its cold start,
off the critical path; it scores too if generation overruns the prediction). A worker kept or
pre-warmed is held until scoring, even when generation overruns: the runtime, not the platform,
holds it (a function waiting for its next phase is a running invocation), and letting it go
mid-gap would put a cold start on the critical path. Without `overlap` a worker goes straight to
that decision at its generation end.

The rest of scoring starts when generation has ended and every worker is up (the baseline's
barrier: `startup_wait` counts a pre-warmed worker not ready yet); a worker still scoring a tail
group joins when it is done, and the rest is split so that all finish together.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rlguard.runtime.policies.cost import Meter
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.decode import GenerationResult

GROUP_DONE, WORKER_FREE = 0, 1  # at equal times a free worker sees the groups finishing then


@dataclass
class TailResult:
    scoring_start_s: float  # generation over and every worker up: the rest of scoring starts
    scoring_end_s: float  # every group scored: training starts
    tail_scored: dict[int, tuple[int, float, float]]  # group -> (worker, start, end) in the tail
    rest: list[int]  # groups scored after generation, on all workers
    idle_s: list[float]  # per worker: held without work from its generation end to generation's


@dataclass
class _Worker:
    fid: str
    free_s: float = 0.0  # when its current work (generation, a group, a cold start) ends
    held: bool = False  # kept or pre-warmed: waits for work instead of deciding again
    pre_warmed: bool = False
    ready_s: float = 0.0  # when its pre-warmed replacement is ready (0: never released)
    idle_since: float | None = None
    idle_s: float = 0.0


def finish_time(available: Sequence[float], gpus: int, work_gpu_s: float) -> float:
    """When `work_gpu_s` of evenly divisible work is done on workers of `gpus` GPUs each, worker i
    joining at `available[i]` (perfect balance, as in phases.py): what the others do before the
    last one joins is spare, and the work beyond it is split evenly over all."""
    last = max(available)
    spare = gpus * sum(last - at for at in available)
    return last + max(0.0, work_gpu_s - spare) / (len(available) * gpus)


class Tail:
    """The tail and the rest of scoring of one step on `workers` workers, each started in `meter`
    as carried in from the last step. `group_gpu_s`: each group's scoring GPU-seconds;
    `expected`: when history predicts generation ends. `run()` schedules it."""

    def __init__(
        self,
        meter: Meter,
        gen: GenerationResult,
        group_gpu_s: np.ndarray,
        profile: TimeProfile,
        prices: Prices,
        *,
        expected: float,
        overlap: bool,
        workers: int,
    ) -> None:
        self.meter, self.gen, self.group_gpu_s = meter, gen, group_gpu_s
        self.gpus, self.cold = profile.gpus_per_actor, profile.cold_start_s
        self.keep_alive, self.expected, self.overlap = prices.keep_alive_s, expected, overlap
        self.workers = [_Worker(f"worker-{w}") for w in range(workers)]
        self.events: list[tuple[float, int, int]] = []
        self.queue: deque[int] = deque()  # finished groups not scored yet
        self.waiting: deque[int] = deque()  # held workers with nothing to score, longest first
        self.tail_scored: dict[int, tuple[int, float, float]] = {}

    def run(self) -> TailResult:
        end, groups = self.gen.end_s, self.group_gpu_s.size
        for w, worker in enumerate(self.workers):
            done = self.gen.actor_end_s[w] if w < len(self.gen.actor_end_s) else 0.0
            self.meter.start(worker.fid, 0.0, self.gpus, carried_in=True)
            if done > 0:
                self.meter.busy(worker.fid, 0.0, done)
            heapq.heappush(self.events, (done, WORKER_FREE, w))
        if self.overlap:
            finished = self.gen.seq_end_s.reshape(groups, -1).max(axis=1)
            for g in np.flatnonzero(finished < end):
                heapq.heappush(self.events, (float(finished[g]), GROUP_DONE, int(g)))
        while self.events:
            t, kind, i = heapq.heappop(self.events)
            if kind == GROUP_DONE:
                self._group_done(i, t)
            else:
                self._worker_free(i, t)
        for worker in self.workers:
            if worker.idle_since is not None:
                worker.idle_s += end - worker.idle_since
        return self._finish()

    def _group_done(self, g: int, t: float) -> None:
        if self.waiting:
            self._score(self.waiting.popleft(), g, t)
        else:
            self.queue.append(g)

    def _worker_free(self, w: int, t: float) -> None:
        worker = self.workers[w]
        worker.free_s = t
        if t > self.gen.end_s:
            return  # done with a group it started in the tail: it joins the rest of scoring
        if self.queue and t < self.gen.end_s:
            self._score(w, self.queue.popleft(), t)
        elif worker.held:
            self._wait(w, t)
        elif self.expected - t <= min(self.cold, self.keep_alive):
            worker.held = True
            self._wait(w, t)
        else:
            self.meter.release(worker.fid, t)
            worker.fid += "/prewarm"
            worker.held = worker.pre_warmed = True
            begin = max(t, self.expected - self.cold)
            worker.ready_s = self.meter.start(worker.fid, begin, self.gpus, self.cold)
            heapq.heappush(self.events, (worker.ready_s, WORKER_FREE, w))

    def _wait(self, w: int, t: float) -> None:
        worker = self.workers[w]
        if not worker.pre_warmed:  # idle time is counted for the worker that generated
            worker.idle_since = t
        self.waiting.append(w)

    def _score(self, w: int, g: int, t: float) -> None:
        worker = self.workers[w]
        if worker.idle_since is not None:
            worker.idle_s += t - worker.idle_since
            worker.idle_since = None
        done = t + float(self.group_gpu_s[g]) / self.gpus
        self.meter.busy(worker.fid, t, done)
        self.tail_scored[g] = (w, t, done)
        heapq.heappush(self.events, (done, WORKER_FREE, w))

    def _finish(self) -> TailResult:
        end = self.gen.end_s
        rest = [g for g in range(self.group_gpu_s.size) if g not in self.tail_scored]
        start = max(end, *(worker.ready_s for worker in self.workers))
        available = [max(start, worker.free_s) for worker in self.workers]
        work = float(self.group_gpu_s[rest].sum())
        return TailResult(
            scoring_start_s=start,
            scoring_end_s=finish_time(available, self.gpus, work),
            tail_scored=self.tail_scored,
            rest=rest,
            idle_s=[worker.idle_s for worker in self.workers],
        )
