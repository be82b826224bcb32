"""Pausing and resuming a job (OpenAI's fine-tuning `pause`/`resume`) on the platform in process
(a store on SQLite, a recording executor in Ray's place): the state machine, what a paused job
holds, its resumed attempt's restore, conflicts and tenancy through the API, and a restart. The
live test pauses a real `rlguard train` job while it runs and resumes it from its checkpoint,
with the commands docs/platform.md gives."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from doc_blocks import blocks
from fastapi.testclient import TestClient
from in_process import in_process_platform
from sqlalchemy import select

from rlguard.platform import states
from rlguard.platform.api import JobStatus, create_app
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import Checkpoint, Event, Job, Run, Tenant
from rlguard.platform.deposits import Deposits
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.keys import new_id
from rlguard.platform.loop import schedule
from rlguard.platform.recovery import recover
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import EvalReport, JobCreate
from rlguard.platform.service import Conflict, NotFound, Platform
from rlguard.platform.tenants import create_tenant
from rlguard.platform.usage import cluster_view

STATIC = Path(__file__).resolve().parents[2] / "src" / "rlguard" / "platform" / "static"


@pytest.fixture
def platform(tmp_path) -> Iterator[Platform]:
    with in_process_platform(tmp_path) as platform:
        yield platform


@pytest.fixture
def launched(platform) -> dict[str, Any]:
    """Every launch's job directory plan (`JobHome`), by job: what its attempt restores."""
    homes: dict[str, Any] = {}
    record = platform.executor.launch

    def launch(run_id, argv, env, home, *args, **kwargs):  # type: ignore[no-untyped-def]
        homes.setdefault(env["RLGUARD_JOB_ID"], []).append(home)
        return record(run_id, argv, env, home, *args, **kwargs)

    platform.executor.launch = launch
    return homes


def _tenant(platform: Platform, name: str = "acme") -> Tenant:
    tenant_id, _ = create_tenant(platform.store, name, 2)
    with platform.store.transaction() as s:
        return s.get(Tenant, tenant_id)


def _submit(platform: Platform, tenant: Tenant, gpus: int = 1) -> str:
    return platform.submit(tenant, JobCreate.model_validate({"command": "true", "gpus": gpus}))


def _pass(platform: Platform) -> None:
    """One scheduling pass, as the loop runs it."""
    with platform.lock:
        schedule(platform, time.time(), round_due=True)


def _running(platform: Platform, tenant: Tenant) -> str:
    job_id = _submit(platform, tenant)
    _pass(platform)
    platform.run_started(job_id, pid=1, node_id="node")
    return job_id


def _job(platform: Platform, job_id: str) -> Job:
    with platform.store.transaction() as s:
        return s.get(Job, job_id)


def _runs(platform: Platform, job_id: str) -> list[Run]:
    with platform.store.transaction() as s:
        return list(s.scalars(select(Run).where(Run.job_id == job_id).order_by(Run.attempt)))


def _statuses(platform: Platform, job_id: str) -> list[str]:
    """The job's state events' statuses, in order."""
    with platform.store.transaction() as s:
        query = select(Event.data).where(Event.job_id == job_id, Event.type == "state")
        return [data["status"] for data in s.scalars(query.order_by(Event.seq))]


def _stored_checkpoint(platform: Platform, job_id: str, step: int) -> str:
    """A checkpoint the job reported and the store holds: what a new attempt restores."""
    key = f"tenants/t/jobs/{job_id}/checkpoints/step-{step}"
    with platform.store.transaction() as s:
        s.add(
            Checkpoint(
                id=new_id("ckpt"),
                job_id=job_id,
                run_id=platform.active[job_id].run_id,
                step=step,
                path=f"output/checkpoints/step-{step:06d}",
                store_key=key,
                metrics={},
                created_at=time.time(),
            )
        )
    return key


def test_a_queued_job_is_paused_at_once_and_not_launched_until_resumed(platform, launched):
    tenant = _tenant(platform)
    other = _running(platform, tenant)  # 1 of the 2 GPUs
    job_id = _submit(platform, tenant, gpus=2)  # waits for both
    _pass(platform)
    assert platform.active[job_id].queue_position == 1
    platform.pause(job_id)
    assert _job(platform, job_id).status == states.PAUSED
    assert platform.active[job_id].queue_position is None
    assert platform.table.rows[job_id] not in platform.table.active  # out of the policies' view
    platform.run_ended(other, 0)  # both GPUs free: a queued job would start now
    _pass(platform)
    assert job_id not in launched and _job(platform, job_id).status == states.PAUSED
    assert cluster_view(platform, None)["queued"] == 0
    platform.resume(job_id)
    assert _job(platform, job_id).status == states.QUEUED
    assert platform.table.rows[job_id] in platform.table.active
    _pass(platform)
    assert _job(platform, job_id).status == states.STARTING
    assert [h.restore for h in launched[job_id]] == [()]  # its first attempt: nothing to restore
    assert _statuses(platform, job_id) == ["validating", "queued", "paused", "queued", "starting"]


def test_a_running_job_checkpoints_is_paused_and_resumes_from_its_checkpoint(platform, launched):
    tenant = _tenant(platform)
    job_id = _running(platform, tenant)
    first_run = platform.active[job_id].run_id
    token = platform.executor.env[job_id]["RLGUARD_JOB_TOKEN"]
    key = _stored_checkpoint(platform, job_id, 4)
    platform.pause(job_id)
    job = _job(platform, job_id)
    assert (job.status, job.intent) == (states.STOPPING, states.PAUSE)
    assert platform.executor.stopped == [first_run]  # SIGTERM, SIGKILL after the grace
    # Told to continue, as a preempted job is: it checkpoints on its SIGTERM and exits 143,
    # whereas one that stopped on the answer would exit 0 and end as succeeded.
    report = EvalReport(step=5, score=0.5, progress=0.5)
    (answer,) = Reports(platform).evals([(job_id, token, report, None)])
    assert answer["action"] == "continue"

    platform.run_ended(job_id, 143)
    job, (run,) = _job(platform, job_id), _runs(platform, job_id)
    assert (job.status, job.intent, job.token_digest) == (states.PAUSED, None, None)
    assert (run.end_reason, run.exit_code) == ("pause", 143)
    assert cluster_view(platform, None)["gpus_in_use"] == 0
    # Not billed while paused: its GPU time stops with its run, whatever the clock says.
    billed, now = job.gpu_seconds, time.time()
    assert platform.table.executed_s(job_id, now + 3600) == pytest.approx(
        run.ended_at - run.running_at
    )
    _pass(platform)
    assert len(launched[job_id]) == 1

    platform.resume(job_id)
    platform.executor.dead.add(first_run)  # Ray says its actor is gone: it may start again
    _pass(platform)
    assert _job(platform, job_id).status == states.STARTING
    assert [h.restore for h in launched[job_id]] == [(), (key,)]  # as after a preemption
    assert platform.executor.env[job_id]["RLGUARD_ATTEMPT"] == "2"
    assert _job(platform, job_id).gpu_seconds == billed
    assert _statuses(platform, job_id) == [
        "validating",
        "queued",
        "starting",
        "running",
        "stopping",
        "paused",
        "queued",
        "starting",
    ]  # never `preempted`: it did not go back to the queue by itself


@pytest.mark.parametrize(
    ("exit_code", "status"),
    [(0, states.SUCCEEDED), (143, states.PAUSED), (None, states.PAUSED)],
    ids=["finished-first", "checkpointed", "lost"],
)
def test_a_job_being_paused_ends_paused_unless_it_finished_first(platform, exit_code, status):
    job_id = _running(platform, _tenant(platform))
    platform.pause(job_id)
    platform.run_ended(job_id, exit_code)
    assert _job(platform, job_id).status == status
    assert (job_id in platform.active) == (status == states.PAUSED)
    if status == states.PAUSED:
        assert platform.active[job_id].lost_runs == 0  # asked to stop: not a lost run


def test_pausing_a_job_being_preempted_pauses_it_instead(platform):
    job_id = _running(platform, _tenant(platform))
    platform.preempt(job_id)
    platform.pause(job_id)
    assert _job(platform, job_id).intent == states.PAUSE
    assert len(platform.executor.stopped) == 1  # its SIGTERM was sent once
    platform.run_ended(job_id, 143)
    assert _job(platform, job_id).status == states.PAUSED
    assert states.PREEMPTED not in _statuses(platform, job_id)


def test_a_paused_or_pausing_job_can_be_cancelled(platform):
    tenant = _tenant(platform)
    paused = _submit(platform, tenant)
    platform.pause(paused)
    platform.cancel(paused)
    assert _job(platform, paused).status == states.CANCELLED
    assert paused not in platform.active
    pausing = _running(platform, tenant)
    platform.pause(pausing)
    platform.cancel(pausing)
    assert _job(platform, pausing).intent == states.CANCEL
    platform.run_ended(pausing, 143)
    assert _job(platform, pausing).status == states.CANCELLED


def test_what_a_job_is_doing_refuses_a_pause_or_a_resume(platform):
    tenant = _tenant(platform)
    job_id = _running(platform, tenant)
    with pytest.raises(Conflict, match=f"job {job_id} cannot be resumed: it is running"):
        platform.resume(job_id)
    platform.pause(job_id)
    with pytest.raises(Conflict, match="cannot be paused: it is being paused"):
        platform.pause(job_id)
    with pytest.raises(Conflict, match="cannot be resumed: it is being paused"):
        platform.resume(job_id)
    platform.run_ended(job_id, 143)
    with pytest.raises(Conflict, match="cannot be paused: it is paused"):
        platform.pause(job_id)
    platform.cancel(job_id)
    for act in (platform.pause, platform.resume):
        with pytest.raises(Conflict, match=r"it has already ended \(cancelled\)"):
            act(job_id)
    stopping = _running(platform, tenant)
    with platform.store.transaction() as s:
        platform.stop_early(s, s.get(Job, stopping), "evalstop: 2 declines")
    with pytest.raises(Conflict, match="cannot be paused: it is being stopped by its rule"):
        platform.pause(stopping)
    with pytest.raises(NotFound):
        platform.pause("job-missing")


# ----- the API --------------------------------------------------------------------------------


@pytest.fixture
def api(platform, tmp_path) -> Iterator[dict[str, TestClient]]:
    """The app over the platform: tenant acme's key, tenant other's, and a read-only key."""
    ingest = EvalIngest(Reports(platform))
    ingest.start()
    deposits = Deposits(platform, ArtifactStore(str(tmp_path / "artifacts")))
    keys = {name: create_tenant(platform.store, name, 2)[1] for name in ("acme", "other")}
    from rlguard.platform.tenants import issue_key

    with platform.store.transaction() as s:
        acme = s.scalar(select(Tenant.id).where(Tenant.name == "acme"))
        keys["reader"] = issue_key(s, acme, ["read"])
    app = create_app(platform, ingest, deposits)
    clients = {
        name: TestClient(app, headers={"Authorization": f"Bearer {key}"})
        for name, key in keys.items()
    }
    yield clients
    for client in clients.values():
        client.close()
    ingest.stop()


def test_pause_and_resume_through_the_api(api, platform):
    acme = api["acme"]
    job_id = acme.post("/v1/jobs", json={"command": "true"}).json()["id"]
    paused = acme.post(f"/v1/jobs/{job_id}/pause")
    assert paused.status_code == 200, paused.text
    assert (paused.json()["status"], paused.json()["queue_position"]) == ("paused", None)
    listed = acme.get("/v1/jobs", params={"status": "paused"}).json()["data"]
    assert [j["id"] for j in listed] == [job_id]
    assert acme.get("/v1/usage").json()["jobs"] == {"paused": 1}
    again = acme.post(f"/v1/jobs/{job_id}/pause")
    assert again.status_code == 409
    assert again.json()["error"] == {
        "message": f"job {job_id} cannot be paused: it is paused",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_state",
    }
    resumed = acme.post(f"/v1/jobs/{job_id}/resume")
    assert resumed.status_code == 200 and resumed.json()["status"] == "queued"
    refused = acme.post(f"/v1/jobs/{job_id}/resume")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "invalid_state"
    assert "cannot be resumed: it is queued" in refused.json()["error"]["message"]


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_another_tenants_job_answers_as_a_missing_one(api, platform, action):
    job_id = api["acme"].post("/v1/jobs", json={"command": "true"}).json()["id"]
    if action == "resume":
        platform.pause(job_id)
    before = _statuses(platform, job_id)
    theirs = api["other"].post(f"/v1/jobs/{job_id}/{action}")
    missing = api["other"].post(f"/v1/jobs/job-missing/{action}")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["error"] == {
        **missing.json()["error"],
        "message": missing.json()["error"]["message"].replace("job-missing", job_id),
    }
    assert theirs.json()["error"]["code"] == "job_not_found"
    read_only = api["reader"].post(f"/v1/jobs/{job_id}/{action}")
    assert read_only.status_code == 403  # the submit scope, as for cancel
    assert _statuses(platform, job_id) == before  # untouched


def test_every_status_is_one_the_api_and_the_dashboard_filter_on():
    assert set(get_args(JobStatus)) == set(states.ALL)
    listed = re.search(r"const STATES = \[(.*?)\];", (STATIC / "jobs.js").read_text(), re.S)
    assert listed is not None
    assert sorted(re.findall(r'"(\w+)"', listed[1])) == sorted(states.ALL)


# ----- a restart --------------------------------------------------------------------------------


def test_a_restart_keeps_a_paused_job_paused_and_ends_a_pausing_one_paused(tmp_path):
    with in_process_platform(tmp_path) as before:
        tenant = _tenant(before)
        paused = _running(before, tenant)
        before.pause(paused)
        before.run_ended(paused, 143)
        lost, reattached = _running(before, tenant), _running(before, tenant)
        for job_id in (lost, reattached):
            before.pause(job_id)  # the server dies before their runs end
        runs = {j: before.active[j].run_id for j in (paused, lost, reattached)}
    with in_process_platform(tmp_path) as after:
        after.executor.reattach = lambda run_id: run_id if run_id == runs[reattached] else None
        after.executor.dead.add(runs[paused])
        counts = recover(after)
        assert counts == {"queued": 0, "paused": 1, "reattached": 1, "lost": 1}
        assert _job(after, paused).status == _job(after, lost).status == states.PAUSED
        assert after.table.rows[paused] not in after.table.active  # as before the restart
        assert (_job(after, reattached).status, after.active[reattached].intent) == (
            states.STOPPING,
            states.PAUSE,
        )
        after.run_ended(reattached, 143)  # collected: its process exited on its SIGTERM
        assert _job(after, reattached).status == states.PAUSED
        _pass(after)
        assert after.executor.env == {}  # nothing launched while paused
        after.resume(paused)
        _pass(after)
        assert _job(after, paused).status == states.STARTING
        assert after.executor.env[paused]["RLGUARD_ATTEMPT"] == "2"


# ----- live -------------------------------------------------------------------------------------


def _doc_block(command: str) -> str:
    """docs/platform.md's block of `command`, to run as written."""
    (block,) = [
        b
        for b in blocks("platform.md")
        if b.lang == "bash" and b.by_hand is None and command in b.text
    ]
    return block.text


def _state_changes(client, job_id: str) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(status, reason) of each of the job's state events, in order."""
    events = client.all_events(job_id)
    return [
        (e["data"]["status"], e["data"].get("reason") or "") for e in events if e["type"] == "state"
    ]


@pytest.mark.ray
def test_a_running_train_job_paused_and_resumed_goes_on_from_its_checkpoint(live_server, tmp_path):
    from live_platform import toy_train_config, toy_world, wait_for

    policy, toy = toy_world(tmp_path / "toy")
    server = live_server("--gpus", "1", "--mount", toy)
    _, key = server.tenant("acme", quota_gpus=1)
    client = server.client(key)
    config = toy_train_config(
        tmp_path / "toy", policy, "paused", steps=10, save_every=2, eval_every=2, eval_prompts=8
    )
    job_id = client.submit({"config": config, "gpus": 1})["id"]
    wait_for(
        lambda: any(e["type"] == "checkpoint" for e in client.all_events(job_id)),
        180,
        "no checkpoint reported",
    )
    bin_dir = Path(sys.executable).parent  # `rlguard` as the docs' reader has it on PATH
    env = {
        **os.environ,
        "RLGUARD_URL": server.url,
        "RLGUARD_API_KEY": key,
        "JOB": job_id,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }

    def run(command: str) -> None:
        done = subprocess.run(
            ["bash", "-c", _doc_block(command)], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr

    run("rlguard jobs pause")
    job, _ = wait_for(
        lambda: (j := client.job(job_id))["status"] == "paused" and j, 120, "not paused"
    )
    assert job["attempts"] == 1 and job["queue_position"] is None
    # Its GPU is another job's meanwhile, and it is not launched while that one runs and ends.
    other = client.submit({"command": "true", "gpus": 1})["id"]
    assert client.wait(other, timeout_s=120)["status"] == "succeeded"
    job = client.job(job_id)
    assert (job["status"], job["attempts"]) == ("paused", 1)
    assert client.cluster()["gpus_in_use"] == 0

    run("rlguard jobs resume")
    finished = client.wait(job_id, timeout_s=300)
    assert finished["status"] == "succeeded", client.http.get(f"/v1/jobs/{job_id}/logs").text
    assert finished["attempts"] == 2
    changes = _state_changes(client, job_id)
    assert [status for status, _ in changes] == [
        "validating",
        "queued",
        "starting",
        "running",
        "stopping",
        "paused",
        "queued",
        "starting",
        "running",
        "succeeded",
    ]
    resumed = [reason for status, reason in changes if status == "running"][1]
    assert ", from " in resumed  # its second attempt restored a stored checkpoint
    log = client.http.get(f"/v1/jobs/{job_id}/logs").text
    (summary,) = [json.loads(line) for line in log.splitlines() if '"resumed_from"' in line]
    assert summary["resumed_from"] > 0 and summary["steps"] == 10
