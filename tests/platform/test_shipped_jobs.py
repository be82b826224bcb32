"""A tenant ships its own job on a real `rlguard serve` (sandboxed where the host can): its code
as a working directory, its packages as requirements, resolved and built by uv from a local index
of wheels the test makes (`--package-index none --find-links DIR`: nothing is downloaded). The job
imports exactly the versions it named, one of them conflicting with the platform's own; the same
requirements reuse the node's cache; a set that does not resolve fails at submission with uv's
message, before any GPU; another tenant cannot name or read the upload; bad uploads and files
are refused and store nothing."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from doc_blocks import blocks
from live_platform import RLGUARD, LiveServer
from wheels import wheel_index

from rlguard.platform.client import Client
from rlguard.platform.workdir import pack
from rlguard.ports import unused_port

pytestmark = pytest.mark.ray

TRAIN = """\
import sys
from pathlib import Path

import packaging
import tinypkg

print(f"tinypkg {tinypkg.__version__} packaging {packaging.__version__}")
print(f"python {sys.executable}")
Path("out.txt").write_text("ran here")
"""
REQUIREMENTS = "tinypkg==2.0\npackaging==1.0  # the platform's own is newer\n"
GRPO_STAND_IN = """\
import json, time
import tinypkg

for step, score in zip(range(10, 70, 10), (0.2, 0.3, 0.4, 0.45, 0.5, 0.55)):
    with open("metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": step, "eval_score": score}) + "\\n")
    time.sleep(0.3)
"""
DOC_WATCH = (
    "source: jsonl\npath: metrics.jsonl\neval_tag: eval_score\ntotal_steps: 60\npoll_s: 0.2\n"
)
CAP_MB = 1


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server, two tenants, and A's code directory."""
    data = tmp_path_factory.mktemp("shipped")
    wheels = wheel_index(data.parent / f"{data.name}-wheels")
    args = ["--package-index", "none", "--find-links", str(wheels)]
    server = LiveServer(data, unused_port(), None, [*args, "--max-working-dir-mb", str(CAP_MB)])
    server.start()
    code = data.parent / f"{data.name}-code"
    code.mkdir()
    (code / "train.py").write_text(TRAIN)
    (code / "requirements.txt").write_text(REQUIREMENTS)
    (code / ".git").mkdir()
    (code / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    try:
        a, b = server.tenant("alpha"), server.tenant("beta")
        yield server, a, b, code
    finally:
        server.stop()


def _cli(server: LiveServer, key: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RLGUARD_URL": server.url, "RLGUARD_API_KEY": key}
    return subprocess.run(
        [*RLGUARD, "jobs", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _submit(server: LiveServer, key: str, code: Path, *args: str) -> dict:
    done = _cli(
        server,
        key,
        "submit",
        "--command",
        "python train.py",
        "--working-dir",
        str(code),
        *args,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _log(client: Client, job_id: str) -> str:
    return client.http.get(f"/v1/jobs/{job_id}/logs", params={"tail": 1000}).text


def _running_reason(client: Client, job_id: str) -> str:
    states = [e["data"] for e in client.all_events(job_id) if e["type"] == "state"]
    return next(s["reason"] for s in states if s["status"] == "running")


def test_a_job_runs_its_own_code_with_exactly_its_packages(served):
    server, (_, key), _, code = served
    client = server.client(key)
    job = _submit(server, key, code, "--requirements", str(code / "requirements.txt"))
    assert sorted(job["environment"]["packages"]) == ["packaging==1.0", "tinypkg==2.0"]
    done = client.wait(job["id"], timeout_s=240)
    log = _log(client, job["id"])
    assert done["status"] == "succeeded", (done, log)
    assert "tinypkg 2.0 packaging 1.0" in log
    assert f"/envs/{job['environment']['hash']}/bin/python" in log
    with server.job_files(job["id"]) as files:
        assert (files / "out.txt").read_text() == "ran here"  # it started in its working directory
        assert not (files / ".git").exists()
    assert "its environment built in" in _running_reason(client, job["id"])

    again = _submit(server, key, code, "--requirements", str(code / "requirements.txt"))
    assert again["working_dir"] == job["working_dir"]  # the same bytes: uploaded once
    assert client.wait(again["id"], timeout_s=240)["status"] == "succeeded"
    assert "its environment cached in" in _running_reason(client, again["id"])


def test_without_requirements_python_is_the_platforms_own(served):
    server, (_, key), _, _ = served
    client = server.client(key)
    job = client.submit({"command": "command -v python; python -c 'import tinypkg'"})
    done = client.wait(job["id"], timeout_s=240)
    log = _log(client, job["id"])
    assert done["status"] == "failed"  # tinypkg is nobody's but the environments'
    assert log.splitlines()[0] == str(Path(sys.executable).parent / "python")


def test_requirements_that_do_not_resolve_fail_the_job_at_submission(served):
    server, (_, key), _, _ = served
    client = server.client(key)
    job = client.submit({"command": "python train.py", "requirements": ["tinypkg==3.0"]})
    assert job["status"] == "failed" and job["started_at"] is None and job["gpu_hours"] == 0
    assert job["error"]["code"] == "requirements_unresolved"
    assert "tinypkg==3.0" in job["error"]["message"]
    (event,) = [e for e in client.all_events(job["id"]) if e["type"] == "environment"]
    assert event["level"] == "error" and "No solution found" in event["data"]["message"]


def test_another_tenant_can_neither_name_nor_read_an_upload(served):
    server, (_, a_key), (_, b_key), code = served
    mine = server.client(a_key).working_dir(pack(code))["id"]
    theirs = server.client(b_key)
    assert theirs.http.get(f"/v1/working_dirs/{mine}").status_code == 404
    refused = theirs.http.post("/v1/jobs", json={"command": "true", "working_dir": mine})
    assert refused.status_code == 422
    assert refused.json()["error"]["param"] == "working_dir"


def _zip_with(name: str, mode: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo(name)
        info.external_attr = mode << 16
        archive.writestr(info, b"/etc/shadow")
    return buffer.getvalue()


def test_bad_uploads_are_refused_and_store_nothing(served, tmp_path):
    server, (tenant, key), _, _ = served
    client = server.client(key)
    stored = server.data_dir / "artifacts" / tenant / "working_dirs"
    before = sorted(stored.iterdir()) if stored.exists() else []
    over = client.http.post("/v1/working_dirs", content=b"\0" * ((CAP_MB << 20) + (2 << 20)))
    assert over.status_code == 413 and over.json()["error"]["code"] == "request_too_large"
    for bad in (_zip_with("link", 0o120777), _zip_with("../../escape.py", 0o100644), b"junk"):
        refused = client.http.post("/v1/working_dirs", content=bad)
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["code"] == "invalid_working_dir"
    assert (sorted(stored.iterdir()) if stored.exists() else []) == before

    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "train.py").write_text("print(1)\n")
    (linked / "secret").symlink_to("/etc/shadow")
    done = _cli(server, key, "submit", "--command", "python train.py", "--working-dir", str(linked))
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: option --working-dir: secret is a link"
    ], done.stderr
    big = tmp_path / "big"
    big.mkdir()
    (big / "weights.bin").write_bytes(os.urandom((CAP_MB << 20) + 1))
    done = _cli(server, key, "submit", "--command", "true", "--working-dir", str(big))
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: the platform refused it (413): working directory: over 1048576 bytes unpacked "
        "(the operator's cap)"
    ]
    not_requirements = tmp_path / "requirements.txt"
    not_requirements.write_text("numpy>=1\n{'this': 'is json'}\n")
    done = _cli(server, key, "submit", "--command", "true", "--requirements", str(not_requirements))
    assert done.returncode == 2 and "requirements.txt: line 2" in done.stderr
    assert (sorted(stored.iterdir()) if stored.exists() else []) == before


def test_the_watchers_doc_submit_block_runs_as_written(served, tmp_path):
    """docs/watchers.md "On the platform": its command, in a directory holding what it names
    (a stand-in for the TRL script that logs JSONL evals and imports its one requirement)."""
    server, (_, key), _, _ = served
    (block,) = [b for b in blocks("watchers.md") if b.lang == "bash" and b.by_hand is None]
    (tmp_path / "train_grpo.py").write_text(GRPO_STAND_IN)
    (tmp_path / "requirements.txt").write_text("tinypkg==1.0\n")
    (tmp_path / "watch.yaml").write_text(DOC_WATCH)
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    env = {**os.environ, "RLGUARD_URL": server.url, "RLGUARD_API_KEY": key, "PATH": path}
    done = subprocess.run(
        ["bash", "-c", block.text], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    client = server.client(key)
    (job,) = [j for j in client.jobs(limit=100)["data"] if j["command"] == "python train_grpo.py"]
    finished = client.wait(job["id"], timeout_s=240)
    assert finished["status"] == "succeeded", _log(client, job["id"])
    evals = [e for e in client.all_events(job["id"]) if e["type"] == "eval"]
    assert [e["data"]["step"] for e in evals] == [10, 20, 30, 40, 50, 60]
