"""Eval ingestion with group commit: one writer thread takes the reports waiting at that moment,
stores and decides them in one transaction, and answers each once the batch is committed.

Why: a commit per report costs more than the report itself (an fsync-bound write and the ORM's
flush), and one writer at a time keeps every job's evals and decisions in arrival order without
per-job locks. Under load the batches grow and the commits per report fall; an idle server
answers a lone report after one small transaction. This is the write path databases and queues
use for durable, high-rate appends (PostgreSQL's commit_delay, Kafka's linger).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any

from rlguard.platform.artifacts import StoredCheckpoint
from rlguard.platform.metrics import EvalCounts
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import EvalReport

log = logging.getLogger(__name__)
MAX_BATCH = 256
Item = tuple[str, str, EvalReport, StoredCheckpoint | None, Future, float]


class EvalIngest(threading.Thread):
    def __init__(self, reports: Reports) -> None:
        super().__init__(name="rlguard-ingest", daemon=True)
        self.reports = reports
        self.counts = EvalCounts()  # for GET /metrics
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()

    def submit(
        self, job_id: str, token: str, report: EvalReport, stored: StoredCheckpoint | None = None
    ) -> Future:
        """A future of the job's answer (or of its refusal, raised); `stored`: the eval's
        checkpoint, already in the artifact store."""
        future: Future[dict[str, Any]] = Future()
        self._queue.put((job_id, token, report, stored, future, time.monotonic()))
        return future

    def stop(self) -> None:
        self._queue.put(None)
        self.join(timeout=10)

    def run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(more)
            self._commit(batch)

    def _commit(self, batch: list[Item]) -> None:
        try:
            answers = self.reports.evals([item[:4] for item in batch])
        except Exception as error:  # the batch did not commit: nothing of it was stored
            log.exception("an eval batch failed")
            self.counts.failed(len(batch))
            for *_, future, _arrived in batch:
                future.set_exception(error)
            return
        answered = time.monotonic()
        for (*_, future, arrived), answer in zip(batch, answers, strict=True):
            self.counts.answered(answer, answered - arrived)
            if isinstance(answer, Exception):
                future.set_exception(answer)
            else:
                future.set_result(answer)
