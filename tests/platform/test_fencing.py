"""Fencing, in process (a store on SQLite, the recording executor in Ray's place): a job whose run
was lost starts again only once Ray says that run's actor is dead, and the old run's token is
refused from the moment its run ended, whatever it reports."""

from __future__ import annotations

import pytest
from in_process import in_process_platform

from rlguard.platform import states
from rlguard.platform.db import Job, Tenant
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import EvalReport, JobCreate
from rlguard.platform.service import Platform, Unauthorized
from rlguard.platform.tenants import create_tenant


@pytest.fixture
def platform(tmp_path) -> Platform:
    with in_process_platform(tmp_path) as platform:
        yield platform


def _start(platform: Platform, job_id: str) -> str:
    """Launch the job's next run and have its process start; the run's token."""
    platform.launch(job_id)
    platform.run_started(job_id, pid=1, node_id="node-a")
    return platform.executor.env[job_id]["RLGUARD_JOB_TOKEN"]


def _eval(platform: Platform, job_id: str, token: str, step: int) -> dict | Exception:
    (answer,) = Reports(platform).evals(
        [(job_id, token, EvalReport(step=step, score=0.5, progress=0.1), None)]
    )
    return answer


def test_a_lost_runs_token_is_refused_and_its_job_waits_for_its_actor(platform):
    tenant_id, _ = create_tenant(platform.store, "acme", 2)
    with platform.store.transaction() as s:
        tenant = s.get(Tenant, tenant_id)
    job_id = platform.submit(tenant, JobCreate.model_validate({"command": "true"}))
    old = _start(platform, job_id)
    assert _eval(platform, job_id, old, 1)["action"] == "continue"
    first_run = platform.active[job_id].run_id

    platform.run_ended(job_id, None)  # lost: its actor is killed, Ray has not confirmed it
    assert platform.executor.released == [first_run]
    assert platform.active[job_id].status == states.QUEUED
    assert isinstance(_eval(platform, job_id, old, 2), Unauthorized)  # revoked at once
    assert not platform.may_launch(job_id, now=0.0)  # its actor may still be alive

    platform.executor.dead.add(first_run)  # now Ray says it is dead
    assert platform.may_launch(job_id, now=0.0)
    new = _start(platform, job_id)
    assert new != old
    assert isinstance(_eval(platform, job_id, old, 2), Unauthorized)  # still refused
    with pytest.raises(Unauthorized):
        Reports.reporting_job(_job(platform, job_id), job_id, old)
    assert _eval(platform, job_id, new, 2)["action"] == "continue"


def _job(platform: Platform, job_id: str) -> Job:
    with platform.store.transaction() as s:
        return s.get(Job, job_id)
