"""After a restart: rebuild the platform's memory from the store and reconcile it with Ray.

Every unfinished job gets its row in the live table back (with the GPU time of its past runs and
its evals), and its stop rule sees its recorded evals again, in order, so its next decision is the
one it would have made without the restart. A job whose run's Ray actor still exists is
reattached; one whose actor is gone is requeued (it resumes from its last checkpoint), paused if
it was being paused, or finished if it was already stopping for good. A paused job stays paused,
out of the scheduler's sight, until it is resumed.
"""

from __future__ import annotations

from sqlalchemy import select

from rlguard.platform import states
from rlguard.platform.db import Job, Run
from rlguard.platform.reports import replay_reports
from rlguard.platform.service import Platform


def recover(platform: Platform) -> dict[str, int]:
    """Reattach or requeue every unfinished job; counts of each, for the server's log."""
    lost: list[str] = []
    counts = {"queued": 0, "paused": 0, "reattached": 0, "lost": 0}
    with platform.lock, platform.store.transaction() as s:
        jobs = s.scalars(
            select(Job).where(Job.status.not_in(states.TERMINAL)).order_by(Job.created_at)
        ).all()
        for job in jobs:
            runs = s.scalars(select(Run).where(Run.job_id == job.id).order_by(Run.attempt)).all()
            platform.restore(job, runs)
            for event in replay_reports(platform, s, job):
                platform.record_eval(job.id, event.data["progress"], event.data.get("loss"), None)
            if job.status == states.PAUSED:
                counts["paused"] += 1
            elif job.status not in states.ON_GPUS:
                counts["queued"] += 1
            elif platform.reattach(job, runs[-1]):
                counts["reattached"] += 1
            else:
                lost.append(job.id)
    for job_id in lost:
        platform.run_ended(job_id, None)
        counts["lost"] += 1
    platform.dirty.set()
    return counts
