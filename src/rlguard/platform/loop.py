"""The scheduling loop: the live twin of the simulator's engine, behind the same `Scheduler`.

Each pass builds a `ClusterView` of the active jobs from the live table, asks the platform's
`Scheduler` for its order (the simulator's policy objects, unchanged), lets tenant quotas and fair
shares pick which of them get GPUs (`fairshare.admit`), preempts what a preemptive policy displaces
(only at its rounds, as the engine does for policies with `tick_s`), and launches the rest while
GPUs are free. Passes run when something changed (a submission, a finished run) or a round is due.
The GPUs handed out are those of Ray's alive nodes, read again every CAPACITY_EVERY_S.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
from sqlalchemy import select

from rlguard.platform import states
from rlguard.platform.db import Tenant
from rlguard.platform.fairshare import admit
from rlguard.platform.metrics import pass_seconds
from rlguard.platform.service import Platform

log = logging.getLogger(__name__)

CAPACITY_EVERY_S = 1.0
"""How often the loop asks Ray which nodes are alive (one call to its control store)."""


MAX_STARTING = 16
"""Runs starting at once (launched, their Ray worker not yet running them): the queue's next jobs
wait for one of them to start. A burst of 300 launches on a 2-core host had Ray start every
worker at once (10x its own start-up concurrency) and none ran within 120 s."""


def schedule(
    platform: Platform, now: float, round_due: bool, max_starting: int = MAX_STARTING
) -> None:
    """One pass; the caller holds `platform.lock`."""
    active = platform.active
    queued = [a for a in active.values() if a.status == states.QUEUED]
    if not queued:
        return
    on_gpus = [a for a in active.values() if a.status in states.ON_GPUS]
    free = platform.capacity - sum(a.gpus for a in on_gpus)
    scheduler = platform.rules.scheduler
    preempt = scheduler.preemptive and round_due
    candidates = [a.job_id for a in queued] + [
        a.job_id for a in on_gpus if a.status != states.STOPPING
    ]
    view = platform.table.view(candidates, now, platform.capacity)
    ordered = [platform.table.table.job_ids[r] for r in scheduler.order(view).tolist()]
    for position, job_id in enumerate(j for j in ordered if active[j].status == states.QUEUED):
        active[job_id].queue_position = position + 1
    if free <= 0 and not preempt:
        return
    # A job that may not start now (its last run may still be alive, or Ray could not place it
    # a moment ago) keeps its place in the queue but is not handed GPUs in this pass.
    ordered = [
        j for j in ordered if active[j].status != states.QUEUED or platform.may_launch(j, now)
    ]
    with platform.store.transaction() as s:
        tenants = {t.id: t for t in s.scalars(select(Tenant))}
    # Stopping jobs hold their GPUs until they exit: they count against the cluster and their
    # tenant's quota, but are not the policy's to order or displace.
    held = [a.job_id for a in on_gpus if a.status == states.STOPPING]
    gpus = np.array([active[j].gpus for j in ordered + held], dtype=np.int64)
    owners = [active[j].tenant_id for j in ordered + held]
    running = np.array([active[j].status != states.QUEUED for j in ordered + held], dtype=bool)
    fixed = running.copy() if not preempt else np.arange(len(gpus)) >= len(ordered)
    admitted = admit(
        gpus,
        owners,
        fixed,
        {t: tenants[t].quota_gpus for t in set(owners)},
        {t: tenants[t].weight for t in set(owners)},
        platform.capacity,
        scheduler.backfill,
    )[: len(ordered)]
    gpus, running = gpus[: len(ordered)], running[: len(ordered)]
    for i in np.flatnonzero(running & ~admitted).tolist():
        platform.preempt(ordered[i])  # its GPUs free up once it has checkpointed and exited
    starting = sum(a.status == states.STARTING for a in active.values())
    for i in np.flatnonzero(admitted & ~running).tolist():
        if starting >= max_starting:
            break  # the next pass after one of them starts launches more
        if gpus[i] <= free:
            platform.launch(ordered[i])
            free -= int(gpus[i])
            starting += 1
        elif not scheduler.backfill:
            break  # GPUs of preempted jobs not yet free: the jobs behind it wait too


class SchedulerLoop(threading.Thread):
    """Runs passes until `stop()`: at once when the platform is marked dirty, and at the
    policy's rounds (`tick_s`) for round-based policies."""

    def __init__(
        self, platform: Platform, poll_s: float = 0.2, max_starting: int = MAX_STARTING
    ) -> None:
        super().__init__(name="rlguard-scheduler", daemon=True)
        self.platform = platform
        self.poll_s, self.max_starting = poll_s, max_starting
        self._stopped = threading.Event()
        tick = platform.rules.scheduler.tick_s
        self._tick = tick
        self._next_round = time.time() + tick if tick else None
        self._next_capacity = 0.0
        self.pass_seconds = pass_seconds()  # for GET /metrics

    def stop(self) -> None:
        self._stopped.set()
        self.platform.dirty.set()
        self.join(timeout=10)

    def run(self) -> None:
        platform = self.platform
        while not self._stopped.is_set():
            platform.dirty.wait(self.poll_s)
            platform.dirty.clear()
            now = time.time()
            round_due = self._next_round is None
            if self._next_round is not None and now >= self._next_round:
                round_due, self._next_round = True, now + self._tick
            try:
                platform.store.confirm_lead()
                with platform.lock, self.pass_seconds.time():
                    if now >= self._next_capacity:
                        platform.refresh_capacity()
                        self._next_capacity = now + CAPACITY_EVERY_S
                    platform.collect()
                    platform.enforce_budgets(now)
                    platform.enforce_grace(now)
                    schedule(platform, time.time(), round_due, self.max_starting)
            except Exception:  # a failed pass is logged and retried, never the loop's end
                log.exception("scheduling pass failed")
                time.sleep(1.0)
                platform.dirty.set()
