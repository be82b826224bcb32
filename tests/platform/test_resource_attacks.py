"""The resource battery: tenant B's jobs attack what the platform does outside the sandbox on a
job's behalf (tests/platform/hostile_job.py: its watcher, its store, its logs, its disk, its
socket), while tenant A's job reports an eval every 0.2 s. Each attack is refused with a clear
answer, or its job is stopped with a reason that says why; a cancel ends a job whose watch is
busy within its grace; A's job runs to its end with every eval stored. How A's requests fare
meanwhile, timed, is benchmarks/bench_hostile_tenant.py's. Sandboxed, as `rlguard serve` runs by
default: skipped on a host that cannot sandbox, except in CI, where it fails."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx
import pytest
from live_platform import LiveServer, require_sandbox

from rlguard.platform.apiforward import MAX_CONNECTIONS
from rlguard.platform.runlogs import LOG_MAX_BYTES
from rlguard.ports import unused_port

pytestmark = [pytest.mark.ray, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
HOSTILE = f"{sys.executable} {HERE / 'hostile_job.py'}"
DISK_MB, STORE_MB, GRACE_S = 64, 1, 5
WAVE = 4
"""B's jobs that run at once: on 2 cores, a dozen Ray workers starting together take longer
than the platform waits for a placement."""
WATCHED = {  # the hostile lines' watch: a pattern a backtracking engine never finishes on them
    "source": "stdout",
    "regex": r"step (?P<step>\d+) acc (?P<score>[\d.]+)|(?P<proxy>(?:a+)+)$",
    "eval_tag": "acc",
    "total_steps": 1000,
    "poll_s": 0.5,
}
ATTACKS = {  # attack: what else its job's body holds
    "hostile_lines": {"watch": WATCHED},
    "trainer_state": {
        "watch": {
            "source": "trainer_state",
            "path": "checkpoint-*/trainer_state.json",
            "eval_tag": "eval_loss",
            "mode": "min",
            "poll_s": 0.5,
        }
    },
    "warnings": {},
    "fallocate_stdout": {},
    "unlinked_file": {},
    "burst": {},
    "binary_log": {},
    "userns": {},
    "connections": {},
    "report_flood": {},
    "checkpoint_flood": {},
}
ENDS_BY_ITSELF = {"fallocate_stdout", "unlinked_file", "burst"}  # killed at their disk limit
# What a watched attack's watcher reports once it has read what the job wrote: the battery waits
# for it (on loaded cores the job prints its result before the watcher's next poll) before the
# job is cancelled, which ends its watch.
WATCH_READ = {
    "hostile_lines": lambda events: sum(e["type"] == "eval" for e in events) >= 2,
    "trainer_state": lambda events: any(
        e["level"] == "warning" and e["data"].get("code") == "file_too_large" for e in events
    ),
}


@pytest.fixture(scope="module")
def battery(tmp_path_factory):
    require_sandbox("the resource battery")
    root = tmp_path_factory.mktemp("resources")
    args = ["--gpus", str(WAVE + 1), "--grace-s", str(GRACE_S)]
    args += ["--job-disk-mb", str(DISK_MB), "--job-store-mb", str(STORE_MB)]
    args += ["--job-reports-per-s", "50", "--job-reports-burst", "100"]
    server = LiveServer(root / "platform", unused_port(), None, args)
    server.data_dir.mkdir()
    server.start()
    try:
        yield _run(server)
    finally:
        server.stop()


def _result(client, job_id: str, timeout_s: float = 240) -> dict | None:
    """What the job printed on its `RESULT` lines (None if it printed none by then)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        log = client.http.get(f"/v1/jobs/{job_id}/logs", params={"tail": 100}).text
        found = [line for line in log.splitlines() if line.startswith("RESULT ")]
        if found:  # all it printed, the later over the earlier
            return {k: v for line in found for k, v in json.loads(line[7:]).items()}
        if client.job(job_id)["finished_at"] is not None:
            return None
        time.sleep(0.5)
    return None


def _events_once(client, job_id: str, read, timeout_s: float) -> list[dict]:  # type: ignore[no-untyped-def]
    """The job's events, once `read(events)` holds (its watcher has reported) or the time is up
    (the test then says what is missing); at once for a job nothing watches."""
    deadline = time.monotonic() + timeout_s
    while True:
        events = client.all_events(job_id)
        if read is None or read(events) or time.monotonic() > deadline:
            return events
        time.sleep(0.5)


def _ended_by_itself(client, job_id: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while client.job(job_id)["finished_at"] is None and time.monotonic() < deadline:
        time.sleep(0.5)


def _run(server: LiveServer) -> dict:
    _, key_a = server.tenant("a", quota_gpus=1)
    _, key_b = server.tenant("b", quota_gpus=WAVE)
    a, b = server.client(key_a), server.client(key_b)
    victim = a.submit({"command": f"{HOSTILE} victim", "gpus": 1})["id"]
    out: dict = {"jobs": {}, "results": {}, "ended": {}, "cancel_s": {}, "events": {}}
    names = list(ATTACKS)
    for wave in (names[i : i + WAVE] for i in range(0, len(names), WAVE)):  # 2 cores: a few
        jobs = {
            n: b.submit({"command": f"{HOSTILE} {n}", "gpus": 1, **ATTACKS[n]})["id"] for n in wave
        }
        out["jobs"].update(jobs)
        for name, job_id in jobs.items():
            out["results"][name] = _result(b, job_id)
            out["events"][name] = _events_once(b, job_id, WATCH_READ.get(name), 60)
        if "binary_log" in jobs:
            logs = b.http.get(f"/v1/jobs/{jobs['binary_log']}/logs", params={"tail": 100_000})
            out["log_bytes"] = len(logs.content)
        for name, job_id in jobs.items():
            if name in ENDS_BY_ITSELF:  # its disk full: stopped by the platform, or refused
                _ended_by_itself(b, job_id, 60)
            started = time.monotonic()
            if b.job(job_id)["finished_at"] is None:
                b.cancel(job_id)
            out["ended"][name] = b.wait(job_id, timeout_s=120)
            out["cancel_s"][name] = time.monotonic() - started
    out["images"] = {
        name: (server.data_dir / "volumes" / f"{out['jobs'][name]}.img").stat().st_blocks * 512
        for name in ENDS_BY_ITSELF
    }
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key_a}"}) as c:
        out["backref"] = c.post(
            "/v1/jobs",
            json={"command": "true", "watch": {**WATCHED, "regex": r"(?P<score>\d)\1"}},
        )
    (server.data_dir / "jobs" / victim / "release").write_text("go")
    out["victim"] = a.wait(victim, timeout_s=120)
    out["victim_evals"] = [e for e in a.all_events(victim) if e["type"] == "eval"]
    return out


def _warnings(battery: dict, name: str) -> list[str]:
    return [e["data"].get("code") for e in battery["events"][name] if e["level"] == "warning"]


def test_a_catastrophic_pattern_costs_one_pass_and_the_watch_reads_on(battery):
    evals = [e for e in battery["events"]["hostile_lines"] if e["type"] == "eval"]
    assert len(evals) >= 2  # the eval lines between the hostile ones were read
    assert "watch_killed" not in _warnings(battery, "hostile_lines")


def test_a_backreference_is_refused_at_submission(battery):
    answer = battery["backref"]
    assert answer.status_code == 422, answer.text
    assert "RE2" in answer.json()["error"]["message"]


def test_a_huge_trainer_state_is_a_warning_not_a_parse(battery):
    assert "file_too_large" in _warnings(battery, "trainer_state")
    assert battery["results"]["trainer_state"]["bytes"] > 16 << 20


def test_warnings_past_their_size_and_the_jobs_allowance_are_refused(battery):
    seen = battery["results"]["warnings"]
    assert seen["big"] == {"422": 101} or seen["big"] == {"413": 101}, seen
    assert seen["refused"] == "413 job_store_full"
    assert _warnings(battery, "warnings").count("job_store_full") == 1
    job = battery["ended"]["warnings"]
    assert job["store_bytes"] <= STORE_MB << 20


@pytest.mark.parametrize("name", sorted(ENDS_BY_ITSELF))
def test_the_kernel_holds_the_disk_limit_and_says_so(battery, name):
    """Past the volume every write is refused (ENOSPC); the platform then stops the job with
    its reason, where statvfs already shows the disk full (ext4 may refuse a write while it
    still shows its delayed-allocation reserve free: the job then saw the refusal itself)."""
    job, seen = battery["ended"][name], battery["results"][name] or {}
    if job["status"] == "failed":
        assert job["error"]["code"] == "resource_limit", job["error"]
        assert "disk is full" in job["error"]["message"]
    else:
        assert job["status"] == "cancelled" and "No space left on device" in json.dumps(seen)
    assert battery["images"][name] <= (DISK_MB << 20) * 1.01


def test_a_single_gib_fallocate_is_refused_by_the_file_size_limit(battery):
    assert battery["results"]["burst"]["gib"] == "File too large"


def test_a_binary_log_is_served_within_its_cap(battery):
    assert 0 < battery["log_bytes"] <= LOG_MAX_BYTES


def test_a_user_namespace_is_refused(battery):
    seen = battery["results"]["userns"]
    assert seen["unshare"] == -1 and seen["errno"] == "Operation not permitted"


def test_connections_through_the_socket_are_capped(battery):
    seen = battery["results"]["connections"]
    assert seen["answered"] <= MAX_CONNECTIONS < seen["connections"]


def test_a_report_flood_is_answered_429(battery):
    codes = battery["results"]["report_flood"]["codes"]
    assert codes.get("429", 0) > 0 and codes.get("201", 0) > 0


def test_a_checkpoint_flood_holds_few_server_threads(battery):
    codes = battery["results"]["checkpoint_flood"]["codes"]
    assert codes.get("429", 0) > 0 and codes.get("201", 0) > 0


@pytest.mark.parametrize("name", sorted(set(ATTACKS) - ENDS_BY_ITSELF))
def test_a_cancel_ends_each_attacking_job_within_its_grace(battery, name):
    assert battery["ended"][name]["status"] == "cancelled"
    assert battery["cancel_s"][name] < GRACE_S + 15  # the grace, and the platform's poll


def test_tenant_a_finishes_unharmed(battery):
    assert battery["victim"]["status"] == "succeeded", battery["victim"]["error"]
    steps = [e["data"]["step"] for e in battery["victim_evals"]]
    assert len(steps) > 100 and steps == list(range(1, len(steps) + 1))  # every eval, once


def test_the_job_says_its_disk_limit_is_the_kernels(battery):
    assert battery["ended"]["burst"]["disk"] == {"limit_bytes": DISK_MB << 20, "enforced": "kernel"}
