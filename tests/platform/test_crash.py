"""Faults: the server SIGKILLed mid-run and restarted (its jobs reattach), and the whole host's
Ray gone with it (its jobs requeue and resume from their checkpoints). Every job completes, the
stored evals are exactly the ones emitted, each once, and no job ever ran twice at once."""

from __future__ import annotations

import itertools
import time

import pytest
from live_platform import curve_command, sql_engine
from sqlalchemy import text

from rlguard.platform.ray_head import stop_local_head

pytestmark = pytest.mark.ray

CURVE = [0.3 + 0.005 * i for i in range(24)]  # healthy: never stopped


def _wait_for_evals(client, job_ids, at_least, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        counts = [sum(e["type"] == "eval" for e in client.all_events(job_id)) for job_id in job_ids]
        if min(counts) >= at_least:
            return
        time.sleep(0.3)
    raise TimeoutError(f"evals {counts} after {timeout_s} s")


def _runs(server, job_id):
    engine = sql_engine(server.db_url)
    with engine.connect() as c:
        rows = c.execute(
            text(
                "select attempt, started_at, ended_at from runs where job_id = :j order by attempt"
            ),
            {"j": job_id},
        ).all()
    engine.dispose()
    return rows


def _check_exactly_once(client, job_id):
    job = client.job(job_id)
    assert job["status"] == "succeeded", job
    events = client.all_events(job_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    steps = [e["data"]["step"] for e in events if e["type"] == "eval"]
    assert steps == list(range(1, len(CURVE) + 1))  # each emitted eval stored once, in order
    assert [e["data"]["score"] for e in events if e["type"] == "eval"] == CURVE
    return job


def _no_overlap(runs):
    for earlier, later in itertools.pairwise(runs):
        assert earlier.ended_at is not None and earlier.ended_at <= later.started_at


def test_killed_server_reattaches_its_running_jobs(live_server, store_url):
    server = live_server("--gpus", "2", db=store_url)
    _, key = server.tenant("acme", quota_gpus=2)
    client = server.client(key)
    jobs = [client.submit({"command": curve_command(CURVE, 0.25)})["id"] for _ in range(3)]
    _wait_for_evals(client, jobs[:2], at_least=3)
    server.kill()
    time.sleep(2.0)  # the jobs go on; their reports wait for the server
    server.start()
    for job_id in jobs:
        client.wait(job_id, timeout_s=180)
        job = _check_exactly_once(client, job_id)
        assert job["attempts"] == 1  # reattached, not restarted
        assert len(_runs(server, job_id)) == 1
    log = (server.data_dir / "logs" / jobs[0] / "attempt-1.log").read_text()
    assert log.count("attempt 1 from step 0") == 1 and "done" in log


def test_jobs_lost_with_ray_requeue_and_resume_from_their_checkpoint(live_server):
    server = live_server("--gpus", "2")  # the store's part is the same as above: SQLite only
    _, key = server.tenant("acme", quota_gpus=2)
    client = server.client(key)
    jobs = [client.submit({"command": curve_command(CURVE, 0.25)})["id"] for _ in range(2)]
    # the job saves its step once an eval's answer is back: a 5th eval stored means the 4th's
    # step was saved (a 4th eval stored alone does not: its answer may not have reached the job)
    _wait_for_evals(client, jobs, at_least=5)
    server.kill()
    stop_local_head(server.data_dir)  # the host's Ray goes too: the jobs' processes die with it
    server.start()
    for job_id in jobs:
        client.wait(job_id, timeout_s=180)
        job = _check_exactly_once(client, job_id)
        assert job["attempts"] == 2
        runs = _runs(server, job_id)
        _no_overlap(runs)
        second = (server.data_dir / "logs" / job_id / "attempt-2.log").read_text()
        resumed_from = int(second.split("from step ")[1].split()[0])
        assert resumed_from >= 4  # it continued from its checkpoint, not from the start
