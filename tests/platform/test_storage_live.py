"""Checkpoints through the artifact store on a real platform (`rlguard serve` on loopback, its
jobs sandboxed where the host can): against a local directory and moto's S3 server.

A tenant downloads its best checkpoint with the CLI and its files hash equal to what the trainer
wrote; another tenant is answered as for a missing job; retention keeps the best and the last 2;
a job cannot get a path outside its directory recorded and never sees the store's credentials;
a checkpoint over the operator's limits is answered 413 naming the limit and the value, a warning
on the job, and nothing of it is stored or recorded; deleting a job empties its prefix. With the
store taken down mid-run, reports wait and are retried, and nothing is recorded that the store
does not hold whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from live_platform import RLGUARD

from rlguard.platform.artifacts import ArtifactStore

pytestmark = pytest.mark.slow  # a live server and its jobs: not in `make test-fast`

JOB = Path(__file__).with_name("checkpoint_job.py")
SCORES = [0.3, 0.7, 0.5, 0.4, 0.45]  # best at step 2; then output/final/ as step 6


def job_command(
    scores: list[float], pause_s: float, size: int = 200_000, over: bool = False
) -> str:
    over_limits = " over" if over else ""
    return f"{sys.executable} {JOB} {','.join(map(str, scores))} {pause_s} {size}{over_limits}"


LIMITS = ("--checkpoint-max-files", "5", "--checkpoint-max-mb", "1")
"""Its checkpoints hold 3 files of ~200 kB each; its attacks, 6 files and 2 MiB."""


@pytest.fixture(params=["local", "s3"])
def platform_with_store(request, live_server, tmp_path):
    """A started platform and the URI of its store (S3: the server inherits the credentials)."""
    if request.param == "local":
        uri = str(tmp_path / "store")
        yield live_server("--storage", uri, "--stop-rule", "none", *LIMITS), uri
        return
    s3 = request.getfixturevalue("s3_server")
    uri = f"{s3.uri}/{tmp_path.name}"
    with s3.environment():
        yield live_server("--storage", uri, "--stop-rule", "none", *LIMITS), uri


def _owner(server, name: str = "acme"):  # type: ignore[no-untyped-def]
    tenant_id, key = server.tenant(name, quota_gpus=2)
    return tenant_id, key, server.client(key)


def _answer(server, key: str, method: str, path: str) -> tuple[int, dict]:
    response = httpx.request(method, server.url + path, headers={"Authorization": f"Bearer {key}"})
    return response.status_code, response.json()


JOB_OUTPUT = ("refused.json", "env.json", "over.json", "written-2.json", "written-6.json")


def test_a_tenant_downloads_its_best_checkpoint_and_no_one_else_can(platform_with_store, tmp_path):
    server, uri = platform_with_store
    tenant_id, key, client = _owner(server)
    _, other_key, _ = _owner(server, "other")
    job = client.submit({"command": job_command(SCORES, 0.3, over=True), "gpus": 1})
    status, refused = _answer(server, key, "DELETE", f"/v1/jobs/{job['id']}")
    assert status == 409 and refused["error"]["param"] == "job_id"
    assert client.wait(job["id"], timeout_s=180)["status"] == "succeeded"

    with server.job_files(job["id"]) as job_dir:
        output = {n: json.loads((job_dir / "output" / n).read_text()) for n in JOB_OUTPUT}
    refusals = output["refused.json"]
    assert all(answer.startswith("422 path: path:") for answer in refusals.values()), refusals
    assert not [v for v in output["env.json"] if v.startswith("AWS")]
    # Over the operator's limits: 413 naming the limit and the value, a warning on the job, and
    # nothing recorded (the steps below) or stored (the store's keys below).
    assert output["over.json"] == {
        "output/many": "413 checkpoint_over_limit path: path: 'output/many' holds 6 files, over"
        " the limit of 5 files per checkpoint (--checkpoint-max-files 5)",
        "output/big": "413 checkpoint_over_limit path: path: 'output/big' holds 2097152 bytes,"
        " over the limit of 1048576 bytes per checkpoint (--checkpoint-max-mb 1)",
    }
    warned = [e["data"] for e in client.all_events(job["id"]) if e["level"] == "warning"]
    assert [(w["code"], w["data"]["limit"], w["data"]["path"]) for w in warned] == [
        ("checkpoint_over_limit", "--checkpoint-max-files", "output/many"),
        ("checkpoint_over_limit", "--checkpoint-max-mb", "output/big"),
    ]

    checkpoints = client.checkpoints(job["id"])["data"]
    assert [c["step"] for c in checkpoints] == [1, 2, 3, 4, 5, 6]
    assert [c["path"] for c in checkpoints][1] == "output/checkpoint-2"  # not a server path
    assert checkpoints[5]["path"] == "output/final"
    assert [c["step"] for c in checkpoints if c["stored"]] == [2, 5, 6]  # best + last 2
    best = next(c for c in checkpoints if c["is_best"])
    assert best["step"] == 2

    out = tmp_path / "download"
    env = {**os.environ, "RLGUARD_URL": server.url, "RLGUARD_API_KEY": key}
    done = subprocess.run(
        [*RLGUARD, "jobs", "download", job["id"], "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "step 2: 3 files" in done.stdout
    written = output["written-2.json"]
    got = {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in out.rglob("*")
        if p.is_file()
    }
    assert got == written
    final = tmp_path / "final"
    subprocess.run(
        [*RLGUARD, "jobs", "download", job["id"], "--checkpoint", "6", "--out", str(final)],
        env=env,
        check=True,
        capture_output=True,
    )
    weights = hashlib.sha256((final / "weights.bin").read_bytes()).hexdigest()
    assert {"weights.bin": weights} == output["written-6.json"]

    missing = "job_0123456789abcdef0123"
    base = f"/v1/jobs/{job['id']}/checkpoints/{best['id']}/files"
    for method, path in (("GET", base), ("GET", f"{base}/model.bin"), ("DELETE", "")):
        theirs = _answer(server, other_key, method, path or f"/v1/jobs/{job['id']}")
        absent = _answer(
            server, other_key, method, (path or f"/v1/jobs/{job['id']}").replace(job["id"], missing)
        )
        assert theirs[0] == 404
        assert theirs == (absent[0], json.loads(json.dumps(absent[1]).replace(missing, job["id"])))
    refused = subprocess.run(
        [*RLGUARD, "jobs", "download", job["id"], "--out", str(tmp_path / "theirs")],
        env={**env, "RLGUARD_API_KEY": other_key},
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1

    store = ArtifactStore(uri)
    prefix = store.job_key(tenant_id, job["id"])
    assert store.keys("") == [k for k in store.keys("") if k.startswith(prefix)]
    keys = store.keys(prefix)
    assert len([k for k in keys if "/checkpoints/" in k]) == 2 * 4 + 2  # 2 x 3 files + manifest, 1
    assert [k for k in keys if "/checkpoints/" not in k] == [f"{prefix}/logs/attempt-1.log"]
    assert client.delete(job["id"])["deleted"]
    assert store.keys(prefix) == []
    assert _answer(server, key, "GET", f"/v1/jobs/{job['id']}")[0] == 404


def test_the_store_down_mid_run_delays_reports_and_records_nothing_unstored(
    live_server, s3_server, tmp_path
):
    uri = f"{s3_server.uri}/{tmp_path.name}"
    with s3_server.environment():
        server = live_server("--storage", uri, "--stop-rule", "none", "--keep-last", "10")
    _, _, client = _owner(server)
    scores = [0.1 * i for i in range(1, 9)]
    job = client.submit({"command": job_command(scores, 0.5), "gpus": 1})
    deadline = time.monotonic() + 120
    while not client.checkpoints(job["id"])["data"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    s3_server.proxy.down()
    try:
        time.sleep(1.0)  # a report in flight when it went down may still land
        frozen = [c["step"] for c in client.checkpoints(job["id"])["data"]]
        time.sleep(5.0)  # ~10 evals' worth
        assert [c["step"] for c in client.checkpoints(job["id"])["data"]] == frozen
        assert client.job(job["id"])["status"] == "running"
    finally:
        s3_server.proxy.up()
    assert client.wait(job["id"], timeout_s=180)["status"] == "succeeded"
    checkpoints = client.checkpoints(job["id"])["data"]
    assert [c["step"] for c in checkpoints] == list(range(1, 10))  # 9: output/final
    evals = [e for e in client.all_events(job["id"]) if e["type"] == "eval"]
    assert [e["data"]["step"] for e in evals] == list(range(1, 9))  # each once
    for checkpoint in checkpoints[:-1]:
        files = client.checkpoint_files(job["id"], checkpoint["id"])["data"]
        assert sorted(f["name"] for f in files) == ["config.json", "model.bin", "sub/optimizer.bin"]
