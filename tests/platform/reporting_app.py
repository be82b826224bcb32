"""The API over an in-process platform (SQLite, no Ray) with one running job of tenant acme and
one of tenant beta, held to the write limits a test gives: what the report-path tests post to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from fastapi.testclient import TestClient
from in_process import in_process_platform
from sqlalchemy import select, update

from rlguard.platform.api import create_app
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import Event, Job, Tenant, json_bytes
from rlguard.platform.deposits import Deposits
from rlguard.platform.eval_route import EvalRoute
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.job_writes import JobWrites, WriteLimits
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import JobCreate
from rlguard.platform.service import Platform
from rlguard.platform.tenants import create_tenant


class Clock:
    """A clock the test moves: the rate's buckets refill only when it says."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Setup:
    platform: Platform
    api: TestClient
    writes: JobWrites
    jobs: dict[str, tuple[str, str]]  # tenant -> its running job's (id, token)

    def post(self, tenant: str, what: str, body: dict, token: str | None = None) -> httpx.Response:
        job_id, own = self.jobs[tenant]
        auth = {"Authorization": f"Bearer {token or own}"}
        return self.api.post(f"/v1/jobs/{job_id}/{what}", json=body, headers=auth)

    def job(self, tenant: str) -> dict:
        return self.api.get(f"/v1/jobs/{self.jobs[tenant][0]}").json()

    def stored(self, tenant: str) -> tuple[int, int]:
        """The job's events in the store: how many, and their data's bytes."""
        with self.platform.store.transaction() as s:
            data = s.scalars(select(Event.data).where(Event.job_id == self.jobs[tenant][0]))
            sizes = [json_bytes(d) for d in data]
        return len(sizes), sum(sizes)

    def events(self, tenant: str, type_: str) -> list[dict]:
        events = self.api.get(f"/v1/jobs/{self.jobs[tenant][0]}/events?limit=1000").json()
        return [e for e in events["data"] if e["type"] == type_]

    def warnings(self, tenant: str, code: str) -> list[dict]:
        return [e for e in self.events(tenant, "log") if e["data"]["code"] == code]

    def fill(self, tenant: str) -> None:
        """The job's allowance, used up to its last byte."""
        with self.platform.lock, self.platform.store.transaction() as s:
            mine = Job.id == self.jobs[tenant][0]
            s.execute(update(Job).where(mine).values(store_bytes=self.writes.limits.store_bytes))


def running_job(platform: Platform, tenant_name: str) -> tuple[str, str]:
    with platform.store.transaction() as s:
        tenant = s.scalar(select(Tenant).where(Tenant.name == tenant_name))
    job_id = platform.submit(tenant, JobCreate.model_validate({"command": "true"}))
    platform.launch(job_id)
    platform.run_started(job_id, pid=1, node_id="node")
    return job_id, platform.executor.env[job_id]["RLGUARD_JOB_TOKEN"]


@contextmanager
def serving(  # type: ignore[no-untyped-def]
    tmp_path: Path, limits: WriteLimits, clock=None, eval_route: bool = True
) -> Iterator[Setup]:
    """The app over an in-process platform whose jobs' reports are held to `limits`: a running
    job of tenant acme and one of tenant beta; the client signed in as an admin. Without
    `eval_route`, every eval goes through FastAPI's route (eval_route.py's comparison)."""
    with in_process_platform(tmp_path) as platform:
        writes = JobWrites(limits, clock) if clock else JobWrites(limits)
        ingest = EvalIngest(Reports(platform, writes))
        ingest.start()
        deposits = Deposits(platform, ArtifactStore(str(tmp_path / "artifacts")))
        create_tenant(platform.store, "acme", 1)
        create_tenant(platform.store, "beta", 1)
        _, admin = create_tenant(platform.store, "ops", 0, admin=True)
        jobs = {name: running_job(platform, name) for name in ("acme", "beta")}
        headers = {"Authorization": f"Bearer {admin}"}
        app = create_app(platform, ingest, deposits)
        if not eval_route:  # before the first request builds the middleware stack
            app.user_middleware = [m for m in app.user_middleware if m.cls is not EvalRoute]
        with TestClient(app, headers=headers) as api:
            yield Setup(platform, api, writes, jobs)
        ingest.stop()
