"""What a watched job's watcher reports beyond evals and checkpoints: its warnings, and the
checkpoint it delivers for the best eval.

The watcher (watchers/, run beside the job by executor.py) posts these with the job's token, as
`JobReporter` posts evals. A warning becomes a `log` event at level warning, so a tag never seen
shows on the job instead of silence; a watch's no-eval warnings are stored once per job, though
each attempt's watch says them again. The delivery marks the one checkpoint the watch's rule chose
(saved at the best eval's step, or else the last saved before it) as the job's best, replacing
the platform's best-by-eval-score pick, and records the rule and its reason as an event.
"""

from __future__ import annotations

from sqlalchemy import select, update

from rlguard.platform.db import Checkpoint, Event
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import DeliveryReport, WatchWarningReport
from rlguard.platform.watchers.no_eval import ONCE_PER_JOB


class WatchReports(Reports):
    def warning(self, job_id: str, token: str, report: WatchWarningReport) -> None:
        with self.reporting(job_id, token) as (s, job):
            dedup = f"watch:{report.code}" if report.code in ONCE_PER_JOB else None
            if dedup and s.scalar(
                select(Event.id).where(Event.job_id == job_id, Event.dedup == dedup)
            ):
                return
            data = {"source": "watch", **report.model_dump()}
            self.writes.charge(job, data)
            s.add(Event(**self.platform.next_event(job, "log", data, "warning", dedup)))

    def delivery(self, job_id: str, token: str, report: DeliveryReport) -> None:
        with self.reporting(job_id, token) as (s, job):
            mine = Checkpoint.job_id == job_id
            delivered = None
            if report.step is not None:
                at = select(Checkpoint).where(mine, Checkpoint.step == report.step)
                at = at.order_by(Checkpoint.created_at)  # the first recorded at that step
                delivered = s.scalar(at)
            data = {"delivered": delivered is not None, **report.model_dump()}
            self.writes.charge(job, data)
            s.execute(update(Checkpoint).where(mine).values(is_best=False))
            if delivered is not None:
                delivered.is_best = True
            self.platform.append(s, job, "checkpoint", data)
