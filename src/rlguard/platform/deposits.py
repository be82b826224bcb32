"""The server's side of a reported checkpoint: stored first, recorded after, pruned by retention.

A job reports a path in its own directory; its run's Ray actor (on the job's node, outside the
sandbox, with the store's credentials the job never gets) names it relative to that directory,
which only its node knows (jobhome.py), uploads it (uploader.py) and seals it with its manifest;
only then is the report recorded. A step may hold several checkpoints (a trainer's best weights
and its resumable state), one per name. If the store cannot take it, the report is
answered 503 and the job's client retries it: nothing is recorded that is not stored. Retention
keeps the best checkpoint by eval for the job's life and the last `keep_last` by step; the others'
files leave the store (their rows stay, as history, without a store key).

The operator's upload limits (uploader.UploadLimits) are held against each report before it is
uploaded: per checkpoint, and per job against what the job has had uploaded so far (its row's
`uploaded_files` and `uploaded_bytes`, counted once a checkpoint is sealed). One job's uploads
go one at a time, so two reports at once cannot both pass on the same count. A refused report
is a `log` event at level `warning` on the job (once per step, name and limit) and a 413 to the
job; nothing of it is stored or recorded.

Each report waits in one of the server's threads while its upload runs, and those threads are
every tenant's: a job holds at most MAX_IN_FLIGHT of them (uploading, or waiting behind its own
upload); one more report is refused at once (`Busy`, a 429 with Retry-After), and the job's
client sends it again later.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import defaultdict
from concurrent.futures import Future

from sqlalchemy import select

from rlguard.platform.artifacts import ArtifactStore, StoredCheckpoint, StoreUnavailable
from rlguard.platform.db import Checkpoint, Event, Job, same_checkpoint
from rlguard.platform.reports import Reports
from rlguard.platform.service import Conflict, Platform
from rlguard.platform.uploader import Allowance, CheckpointOverLimit, UploadLimits

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 2
"""A job's checkpoint reports being served at once (the rest are answered 429)."""
BUSY_RETRY_S = 5


class Busy(Exception):
    """The job has MAX_IN_FLIGHT checkpoint reports in the server already."""

    retry_after_s = BUSY_RETRY_S

    def __init__(self, job_id: str) -> None:
        super().__init__(
            f"job {job_id} has {MAX_IN_FLIGHT} checkpoint reports being uploaded already; "
            f"send this one again in {BUSY_RETRY_S} s"
        )


class Deposits:
    def __init__(
        self,
        platform: Platform,
        store: ArtifactStore,
        keep_last: int = 2,
        limits: UploadLimits | None = None,
    ) -> None:
        self.platform, self.store, self.keep_last = platform, store, keep_last
        self.limits = limits or UploadLimits()
        self._lock = threading.Lock()
        self._uploading: dict[tuple[str, int], Future[StoredCheckpoint]] = {}
        self._job_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self._in_flight: defaultdict[str, int] = defaultdict(int)

    def deposit(self, job_id: str, token: str, step: int, reported: str) -> StoredCheckpoint:
        """Have the job's actor upload its checkpoint of `step`; where it is stored. A retry
        of a report whose upload is still running waits for that upload instead of starting
        another (a 1 GB upload can outlast the client's timeout)."""
        with self.platform.lock, self.platform.store.transaction() as s:
            job = Reports.reporting_job(s.get(Job, job_id), job_id, token)
            tenant_id, handle = job.tenant_id, self.platform.active_job(job_id).handle
        if handle is None:
            raise Conflict(f"job {job_id} has no run to upload its checkpoint from")
        name = self.platform.executor.checkpoint_name(handle, reported)
        with self.platform.store.transaction() as s:
            recorded = s.scalar(select(Checkpoint).where(*same_checkpoint(job_id, step, name)))
            if recorded is not None:  # a re-sent report: recorded once, never uploaded again
                return StoredCheckpoint(recorded.path, recorded.store_key)
        with self._lock:
            if self._in_flight[job_id] >= MAX_IN_FLIGHT:
                raise Busy(job_id)
            self._in_flight[job_id] += 1
        try:
            return self._deposit(job_id, tenant_id, handle, step, reported, name)
        finally:
            with self._lock:
                self._in_flight[job_id] -= 1
                if not self._in_flight[job_id]:
                    del self._in_flight[job_id]

    def _deposit(  # type: ignore[no-untyped-def]
        self, job_id: str, tenant_id: str, handle, step: int, reported: str, name: str
    ) -> StoredCheckpoint:
        """The upload of `step`'s checkpoint, or the wait for the one already running."""
        with self._lock:
            future = self._uploading.get((job_id, step))
            mine = future is None
            if mine:
                future = self._uploading[job_id, step] = Future()
        if not mine:
            return future.result()
        try:
            with self._lock:
                job_lock = self._job_locks[job_id]
            with job_lock:  # one upload of a job at a time: each is held to the last's count
                key = self._upload(job_id, tenant_id, handle, step, reported)
            future.set_result(StoredCheckpoint(name, key))
        except CheckpointOverLimit as e:
            self._refused(job_id, step, name, e)
            future.set_exception(e)
            raise
        except BaseException as e:
            future.set_exception(e)
            raise
        finally:
            with self._lock:
                del self._uploading[job_id, step]
        return future.result()

    def _upload(self, job_id: str, tenant_id: str, handle, step: int, reported: str) -> str:  # type: ignore[no-untyped-def]
        """Upload within what the limits leave the job, then count it; its key."""
        with self.platform.store.transaction() as s:
            job = s.get(Job, job_id)
            allowance = Allowance(self.limits, job.uploaded_files, job.uploaded_bytes)
        key = self.store.new_checkpoint_key(tenant_id, job_id, step)
        manifest = self.platform.executor.upload(
            handle, self.store.uri, reported, key, step, allowance
        )
        with self.platform.lock, self.platform.store.transaction() as s:
            job = s.get(Job, job_id)
            job.uploaded_files += len(manifest["files"])
            job.uploaded_bytes += manifest["bytes"]
        return key

    def _refused(self, job_id: str, step: int, name: str, refused: CheckpointOverLimit) -> None:
        """The refusal as a warning event on the job, once per step, name and limit (a job
        that sends it again is answered again, not recorded again)."""
        dedup = f"{step}\0{name}\0{refused.option}".encode()
        dedup = f"over-limit:{hashlib.sha256(dedup).hexdigest()[:40]}"
        data = {
            "source": "platform",
            "code": "checkpoint_over_limit",
            "message": str(refused),
            "data": {
                "step": step,
                "path": name,
                "limit": refused.option,
                "limit_value": refused.limit,
                "allowed": refused.allowed,
                "value": refused.value,
                "unit": refused.unit,
            },
        }
        with self.platform.lock, self.platform.store.transaction() as s:
            job = s.get(Job, job_id)
            if job is None or s.scalar(
                select(Event.id).where(Event.job_id == job_id, Event.dedup == dedup)
            ):
                return
            s.add(Event(**self.platform.next_event(job, "log", data, "warning", dedup)))

    def retain(self, job_id: str) -> None:
        """Prune the job's stored checkpoints to the best and the last `keep_last`."""
        with self.platform.lock, self.platform.store.transaction() as s:
            stored = s.scalars(
                select(Checkpoint)
                .where(Checkpoint.job_id == job_id, Checkpoint.store_key.is_not(None))
                .order_by(Checkpoint.step.desc(), Checkpoint.created_at.desc())
            ).all()
            pruned = [c for c in stored[self.keep_last :] if not c.is_best]
            keys = [c.store_key for c in pruned]
            for checkpoint in pruned:
                checkpoint.store_key = None
        for key in keys:  # unrecorded first: a failure here leaves files, never a dangling row
            try:
                self.store.remove(key)
            except StoreUnavailable:
                log.warning("could not prune %s (it goes with its job)", key)
