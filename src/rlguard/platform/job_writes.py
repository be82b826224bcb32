"""What a job's reports may write into the platform's store, and how fast: per job.

A job's token lets hostile code make the platform write rows into its own database (evals,
checkpoints, warnings, deliveries, steps): without a bound one job could fill the disk the store
shares with every tenant, or keep its one writer busy. So each job gets:

- an allowance of bytes (`rlguard serve --job-store-mb`, 32 MiB): every row one of its reports
  stores costs its JSON (as the column holds it) plus ROW_BYTES for the row itself, counted on
  the job's row (`jobs.store_bytes`) in the transaction that stores the row, so the count is
  exact and survives a restart. A report that would pass it stores nothing, is answered 413
  `job_store_full`, and the job gets one warning event saying so (not counted). The platform's
  own rows about the job (state changes, decisions, budgets) are not the job's and cost nothing.
- a rate (`--job-reports-per-s`, 200, with a burst of `--job-reports-burst`, 1000): a token
  bucket per job in memory, held before anything is read or stored; over it a report is
  answered 429 `rate_limited` with `Retry-After`, and the job's client waits that long.

Why these defaults: an honest job reports a few times per training step (an eval, its timers, a
checkpoint) and steps take seconds, while the fastest honest reporter measured here, one job
posting evals back to back through its sandbox, sent 84 per second (docs/platform.md, "what the
sandbox costs"); a watcher catching up on a long log is what the burst is for. 200/s is far
above both and a tenth of what the server ingests on 2 cores (~2,000 evals/s), so no one job
takes the writer. 32 MiB holds 100,000 evals, or 33,000 steps each with an eval and all of
verl's timers. benchmarks/bench_platform.py measures the server's capacity with a few jobs
posting as fast as they can (over 500 evals/s each), so it lifts the rate.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlguard.platform.db import Event, Job, json_bytes
from rlguard.platform.keys import digest
from rlguard.platform.service import Platform

MiB = 1 << 20
ROW_BYTES = 200
"""What a row costs besides its JSON: its other columns and its index entries (a small event row
took 184 bytes of a SQLite file, measured over 20,000 rows)."""

FULL = "job_store_full"
MAX_BUCKETS = 4096  # past this many buckets, those that have refilled are forgotten


@dataclass(frozen=True)
class WriteLimits:
    """The operator's bounds on each job's reports (`rlguard serve`)."""

    store_mb: int = 32
    reports_per_s: float = 200.0
    burst: int = 1000

    @property
    def store_bytes(self) -> int:
        return self.store_mb * MiB


class StoreFull(Exception):
    """A report that would bring the job's rows in the store past its allowance."""

    def __init__(self, job_id: str, limits: WriteLimits, total: int, cost: int) -> None:
        self.job_id, self.total, self.cost, self.limit = job_id, total, cost, limits.store_bytes
        super().__init__(
            f"job {job_id}'s reports hold {total} bytes of the platform's store; this one "
            f"({cost} bytes) would pass the limit of {self.limit} bytes per job "
            f"(--job-store-mb {limits.store_mb})"
        )


class RateLimited(Exception):
    """A report faster than the job's rate; `retry_after_s`: when one may come (whole seconds,
    as HTTP's Retry-After says it)."""

    def __init__(self, job_id: str, limits: WriteLimits, wait_s: float) -> None:
        self.retry_after_s = max(1, math.ceil(wait_s))
        super().__init__(
            f"job {job_id} reports faster than {limits.reports_per_s:g} per second (burst "
            f"{limits.burst}, --job-reports-per-s): retry in {self.retry_after_s} s"
        )


@dataclass
class _Bucket:
    tokens: float
    at: float


class JobWrites:
    """The rate and the allowance of every job's reports, shared by every report path.

    A token bucket by hand (a dozen lines) rather than `limits` or slowapi: those keep windows
    under string keys with their own storage, and say when a window resets, where Retry-After
    wants the wait for one token."""

    def __init__(
        self, limits: WriteLimits | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits, self.clock = limits or WriteLimits(), clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def admit(self, job_id: str, token: str) -> None:
        """Take one report from the job's bucket, or raise RateLimited. Keyed by the token too,
        so a caller without the job's token (refused 401 anyway) cannot spend the job's rate."""
        rate, burst = self.limits.reports_per_s, self.limits.burst
        now = self.clock()
        with self._lock:
            if len(self._buckets) > MAX_BUCKETS:
                self._forget_full(now)
            bucket = self._buckets.setdefault((job_id, digest(token)), _Bucket(burst, now))
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * rate)
            bucket.at = now
            if bucket.tokens < 1:
                raise RateLimited(job_id, self.limits, (1 - bucket.tokens) / rate)
            bucket.tokens -= 1

    def _forget_full(self, now: float) -> None:
        """A bucket that has refilled is a new one: forget those (a flood of made-up tokens
        leaves only buckets that refill within 1/rate)."""
        refill_s = self.limits.burst / self.limits.reports_per_s
        self._buckets = {k: b for k, b in self._buckets.items() if now - b.at < refill_s}

    def charge(self, job: Job, *rows: Any) -> None:
        """Count the rows a report is about to store (each its JSON value) on the job's row,
        or raise StoreFull and count nothing. Call it before anything of the report is added,
        in the transaction that adds it, under the platform's lock (one writer at a time)."""
        cost = sum(json_bytes(row) + ROW_BYTES for row in rows)
        total = job.store_bytes or 0
        if total + cost > self.limits.store_bytes:
            raise StoreFull(job.id, self.limits, total, cost)
        job.store_bytes = total + cost

    def record_full(self, platform: Platform, refused: StoreFull) -> None:
        """The refusal as one warning event on the job, however often it is refused again
        (deduplicated in the store, so across restarts too); not counted."""
        data = {
            "source": "platform",
            "code": FULL,
            "message": str(refused),
            "data": {
                "limit": "--job-store-mb",
                "limit_value": self.limits.store_mb,
                "allowed": refused.limit,
                "value": refused.total + refused.cost,
                "unit": "bytes",
            },
        }
        with platform.lock, platform.store.transaction() as s:
            job = s.get(Job, refused.job_id)
            if job is None or _recorded(s, job.id):
                return
            s.add(Event(**platform.next_event(job, "log", data, "warning", FULL)))


def _recorded(s: Session, job_id: str) -> bool:
    return s.scalar(select(Event.id).where(Event.job_id == job_id, Event.dedup == FULL)) is not None
