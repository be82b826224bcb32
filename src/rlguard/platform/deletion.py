"""Deleting a finished job: its artifacts in the store, its rows, its files on the server.

The store goes first: if it cannot be reached the request fails with nothing else changed, and
a retry finds the job as it was. Its rows go in one transaction; then the job's directory, logs
and config on the server's disk (the job's directory may hold a job's planted symlinks:
shutil.rmtree removes links, never what they point to).
"""

from __future__ import annotations

import shutil

from sqlalchemy import delete

from rlguard.platform import states
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import Checkpoint, DecisionRecord, Event, Job, Run
from rlguard.platform.service import Conflict, NotFound, Platform


def delete_job(platform: Platform, store: ArtifactStore, job_id: str) -> None:
    """Conflict for a job that has not finished; StoreUnavailable if its artifacts stay."""
    with platform.store.transaction() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise NotFound(job_id)
        if job.status not in states.TERMINAL:
            raise Conflict(f"job {job_id} is {job.status}: cancel it, then delete it once it ends")
        tenant_id = job.tenant_id
    store.remove(store.job_key(tenant_id, job_id))
    with platform.lock, platform.store.transaction() as s:
        for table in (DecisionRecord, Checkpoint, Event, Run):
            s.execute(delete(table).where(table.job_id == job_id))
        s.execute(delete(Job).where(Job.id == job_id))
    shutil.rmtree(platform.job_dir(job_id), ignore_errors=True)
    shutil.rmtree(platform.log_path(job_id, 1).parent, ignore_errors=True)
    platform.config_path(job_id).unlink(missing_ok=True)
