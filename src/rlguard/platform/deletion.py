"""Deleting a finished job: its artifacts in the store, its files on every node, its rows.

The store goes first: if it cannot be reached the request fails with nothing else changed, and
a retry finds the job as it was. Then every node Ray holds alive removes the job's files it
keeps (its directory under the node's root, the run's log and train config: jobhome.py's
`remove_job_files`, a task pinned to each node), never following a link the job planted. A node
that is not alive, or did not answer, keeps them: the answer and the server's log name the node
(its id and address) and the path to look for, and the rows go anyway (a job cannot be held
hostage by a dead machine). The rows go last, in one transaction, so a server that dies before
them leaves the job listed and a second DELETE does it all again (each step is idempotent).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import delete, select

from rlguard.platform import states
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import Checkpoint, DecisionRecord, Event, Job, Run
from rlguard.platform.jobhome import ROOT_ENV, remove_job_files
from rlguard.platform.log_format import about
from rlguard.platform.service import Conflict, NotFound, Platform

log = logging.getLogger(__name__)


def delete_job(platform: Platform, store: ArtifactStore, job_id: str) -> list[dict[str, Any]]:
    """Conflict for a job that has not finished; StoreUnavailable if its artifacts stay. The
    nodes that may still hold its files, with why (empty: none; their addresses are in the
    server's log, not in a tenant's answer)."""
    with platform.store.transaction() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise NotFound(job_id)
        if job.status not in states.TERMINAL:
            raise Conflict(f"job {job_id} is {job.status}: cancel it, then delete it once it ends")
        tenant_id = job.tenant_id
        ran_on = set(s.scalars(select(Run.node_id).where(Run.job_id == job_id)))
    store.remove(store.job_key(tenant_id, job_id))
    default_root = str(platform.job_dir(job_id).parent)
    answers = platform.executor.clear_job(job_id, default_root, ran_on - {None})
    left = [a for a in answers if a.error is not None]
    for node in left:
        log.warning(
            "job %s deleted, but node %s (%s) did not remove its files (%s): look there for %s "
            "under the node's %s (or %s)",
            job_id,
            node.node_id,
            node.address,
            node.error,
            job_id,
            ROOT_ENV,
            default_root,
            extra=about(job_id=job_id),
        )
    with platform.lock, platform.store.transaction() as s:
        for table in (DecisionRecord, Checkpoint, Event, Run):
            s.execute(delete(table).where(table.job_id == job_id))
        s.execute(delete(Job).where(Job.id == job_id))
    remove_job_files(job_id, default_root)  # the server's own disk, should it be no Ray node
    return [{"node_id": a.node_id, "reason": a.error} for a in left]
