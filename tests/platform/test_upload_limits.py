"""The operator's upload limits on a job's reported checkpoints, through the API in process (the
uploader on real files and a real local store in place of the run's actor, no Ray): a checkpoint
over `--checkpoint-max-files` or `--checkpoint-max-mb`, reported on its own or with an eval, is
answered 413 naming the limit and the value, recorded once as a warning event on the job, and
nothing of it is stored or recorded (nor the eval that carried it); checkpoints within the
limits are stored and counted on the job, and the one that would pass `--job-max-upload-files`
is refused, by a fresh server too (the count is the job's row)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from in_process import in_process_platform

from rlguard.platform.api import create_app
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import Tenant
from rlguard.platform.deposits import Deposits
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import JobCreate
from rlguard.platform.tenants import create_tenant
from rlguard.platform.uploader import (
    CheckpointOverLimit,
    MiB,
    UploadLimits,
    inside_job,
    upload_checkpoint,
)

LIMITS = UploadLimits(checkpoint_files=5, checkpoint_mb=1, job_files=8, job_mb=4)


@pytest.fixture
def setup(tmp_path) -> Iterator[tuple]:
    """The app over an in-process platform whose "actor" uploads from `job_dir`; a running
    job's id and token, and the app's client signed in as its tenant."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    with in_process_platform(tmp_path) as platform:
        executor = platform.executor
        executor.checkpoint_name = lambda handle, path: "/".join(inside_job(str(job_dir), path))
        executor.upload = lambda handle, uri, path, key, step, allowance: upload_checkpoint(
            uri, str(job_dir), path, key, step, allowance
        )
        store = ArtifactStore(str(tmp_path / "artifacts"))
        deposits = Deposits(platform, store, keep_last=10, limits=LIMITS)
        ingest = EvalIngest(Reports(platform))
        ingest.start()
        _, key = create_tenant(platform.store, "acme", 2)
        with platform.store.transaction() as s:
            tenant = s.query(Tenant).filter_by(name="acme").one()
        job_id = platform.submit(tenant, JobCreate.model_validate({"command": "true"}))
        platform.launch(job_id)
        platform.run_started(job_id, pid=1, node_id="node")
        token = executor.env[job_id]["RLGUARD_JOB_TOKEN"]
        headers = {"Authorization": f"Bearer {key}"}
        with TestClient(create_app(platform, ingest, deposits), headers=headers) as api:
            yield platform, api, store, job_dir, job_id, token
        ingest.stop()


def _write(job_dir: Path, name: str, files: dict[str, int]) -> str:
    for file, size in files.items():
        (job_dir / name / file).parent.mkdir(parents=True, exist_ok=True)
        (job_dir / name / file).write_bytes(os.urandom(size))
    return name


def _events(api, job_id: str, type_: str) -> list[dict]:
    return [e for e in api.get(f"/v1/jobs/{job_id}/events").json()["data"] if e["type"] == type_]


def test_checkpoints_over_the_limits_are_refused_named_and_never_stored(setup):
    platform, api, store, job_dir, job_id, token = setup
    job_auth = {"Authorization": f"Bearer {token}"}
    many = _write(job_dir, "many", {f"shard-{i}": 10 for i in range(6)})
    big = _write(job_dir, "big", {"model.bin": MiB + 1})

    for _ in range(2):  # sent again, answered again, recorded once
        answer = api.post(
            f"/v1/jobs/{job_id}/checkpoints", json={"step": 1, "path": many}, headers=job_auth
        )
        assert answer.status_code == 413, answer.text
        error = answer.json()["error"]
        assert (error["code"], error["param"], error["type"]) == (
            "checkpoint_over_limit",
            "path",
            "invalid_request_error",
        )
        assert error["message"] == (
            "path: 'many' holds 6 files, over the limit of 5 files per checkpoint"
            " (--checkpoint-max-files 5)"
        )
    answer = api.post(
        f"/v1/jobs/{job_id}/evals",
        json={"step": 2, "score": 0.5, "progress": 0.1, "checkpoint": big},
        headers=job_auth,
    )
    assert answer.status_code == 413 and answer.json()["error"]["param"] == "checkpoint"
    assert answer.json()["error"]["message"] == (
        "checkpoint: 'big' holds 1048577 bytes, over the limit of 1048576 bytes per checkpoint"
        " (--checkpoint-max-mb 1)"
    )
    assert _events(api, job_id, "eval") == []  # the eval that carried it: not recorded either

    # Within the limits: stored and counted; the report that would pass the job's total is not.
    for step in (3, 4):
        ok = _write(job_dir, f"ok-{step}", {"model.bin": 1000, "config.json": 10, "x/opt": 10})
        answer = api.post(
            f"/v1/jobs/{job_id}/checkpoints", json={"step": step, "path": ok}, headers=job_auth
        )
        assert answer.status_code == 201, answer.text
    assert api.get(f"/v1/jobs/{job_id}").json()["uploaded"] == {"files": 6, "bytes": 2040}
    over = _write(job_dir, "ok-5", {"model.bin": 1000, "config.json": 10, "x/opt": 10})
    answer = api.post(
        f"/v1/jobs/{job_id}/checkpoints", json={"step": 5, "path": over}, headers=job_auth
    )
    assert answer.status_code == 413
    assert answer.json()["error"]["message"] == (
        "path: 'ok-5' would bring this job's uploads to 9 files, over the limit of 8 files per"
        " job (--job-max-upload-files 8)"
    )

    warnings = [e["data"] for e in _events(api, job_id, "log") if e["level"] == "warning"]
    assert [(w["code"], w["data"]["limit"], w["data"]["value"]) for w in warnings] == [
        ("checkpoint_over_limit", "--checkpoint-max-files", 6),
        ("checkpoint_over_limit", "--checkpoint-max-mb", MiB + 1),
        ("checkpoint_over_limit", "--job-max-upload-files", 9),
    ]
    assert warnings[0]["data"]["path"] == "many" and warnings[0]["data"]["limit_value"] == 5
    listed = api.get(f"/v1/jobs/{job_id}/checkpoints").json()["data"]
    assert [(c["step"], c["path"]) for c in listed] == [(3, "ok-3"), (4, "ok-4")]
    stored = store.keys("")
    assert len(stored) == 2 * 4 and all("/step-3-" in k or "/step-4-" in k for k in stored)

    # A fresh server holds the job to the same count (it is the job's row, not memory).
    fresh = Deposits(platform, store, limits=LIMITS)
    with pytest.raises(CheckpointOverLimit, match="--job-max-upload-files 8"):
        fresh.deposit(job_id, token, 6, over)
