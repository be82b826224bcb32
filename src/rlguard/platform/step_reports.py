"""A running job's step timings (`POST /v1/jobs/{id}/steps`): a `metrics` event per step, once
per step (a re-sent step is not stored again), which the job's `measured` record averages and
`rlguard jobs export-steps` turns into calibration rows (steps.py)."""

from __future__ import annotations

from sqlalchemy import select

from rlguard.platform.db import Event
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import StepReport


class StepReports(Reports):
    def step(self, job_id: str, token: str, report: StepReport) -> bool:
        """Store the step's timings; True if that step was already stored."""
        dedup = f"step:{report.step}"
        with self.reporting(job_id, token) as (s, job):
            mine = (Event.job_id == job_id) & (Event.dedup == dedup)
            if s.scalar(select(Event.id).where(mine)) is not None:
                return True
            data = report.model_dump(exclude_none=True)
            self.writes.charge(job, data)
            s.add(Event(**self.platform.next_event(job, "metrics", data, dedup=dedup)))
            return False
