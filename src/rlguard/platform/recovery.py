"""After a restart: rebuild the platform's memory from the store and reconcile it with Ray.

Every unfinished job gets its row in the live table back (with the GPU time of its past runs and
its evals), and its stop rule sees its recorded evals again, in order, so its next decision is the
one it would have made without the restart. A job whose run's Ray actor still exists is
reattached; one whose actor is gone is requeued (it resumes from its last checkpoint), or
finished if it was already stopping for good.
"""

from __future__ import annotations

import time

from sqlalchemy import select

from rlguard.platform import states
from rlguard.platform.db import Job, Run
from rlguard.platform.reports import replay_reports
from rlguard.platform.service import Platform


def recover(platform: Platform) -> dict[str, int]:
    """Reattach or requeue every unfinished job; counts of each, for the server's log."""
    lost: list[str] = []
    counts = {"queued": 0, "reattached": 0, "lost": 0}
    with platform.lock, platform.store.transaction() as s:
        jobs = s.scalars(
            select(Job).where(Job.status.not_in(states.TERMINAL)).order_by(Job.created_at)
        ).all()
        for job in jobs:
            runs = s.scalars(select(Run).where(Run.job_id == job.id).order_by(Run.attempt)).all()
            active = platform._track(job, platform.rules.resolve(job.stop_policy), len(runs))
            row = platform.table.rows[job.id]
            for run in runs:
                if run.ended_at is not None:
                    platform.table.table.executed_s[row] += run.ended_at - run.started_at
            for event in replay_reports(platform, s, job):
                platform.table.observe(job.id, event.data["progress"], event.data.get("loss"), 0.0)
            if job.status not in states.ON_GPUS:
                counts["queued"] += 1
                continue
            current = runs[-1]
            active.run_id = current.id
            active.handle = platform.executor.reattach(current.id)
            if active.handle is None:
                lost.append(job.id)
                continue
            platform.table.start(job.id, current.started_at)
            if job.intent == states.EARLY_STOP:
                active.kill_at = time.time() + platform.grace_s
            counts["reattached"] += 1
    for job_id in lost:
        platform.run_ended(job_id, None)
        counts["lost"] += 1
    platform.dirty.set()
    return counts
