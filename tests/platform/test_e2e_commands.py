"""End to end over HTTP against a real `rlguard serve` on loopback, with command jobs that report
eval curves through the job client: EvalStop stops the hacking one online, delivers its best
checkpoint, and the job queued behind it gets its GPU at once; the healthy one succeeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from live_platform import RLGUARD, assert_replayed, curve_command

from rlguard.cluster.curve_file import read_curves
from rlguard.ports import unused_port

pytestmark = pytest.mark.ray

HACKING = [0.30, 0.40, 0.50, 0.60, 0.55, 0.50, 0.45, 0.40, 0.35, 0.30]
HEALTHY = [0.30 + 0.01 * i for i in range(40)]
SHORT = [0.2, 0.3, 0.4]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def finished(request, tmp_path_factory):
    """One server (2 virtual GPUs, FIFO, EvalStop k=3) per store; three jobs run to their ends."""
    from live_platform import LiveServer, new_database

    db = None
    if request.param == "postgresql":
        db = new_database(request.getfixturevalue("postgres_url"))
    data = tmp_path_factory.mktemp("e2e")
    server = LiveServer(data, unused_port(), db, ["--gpus", "2", "--k", "3"]).start()
    try:
        _, key = server.tenant("acme", quota_gpus=2)
        client = server.client(key)
        hacking = client.submit({"command": curve_command(HACKING, 0.3), "gpus": 1})
        healthy = client.submit({"command": curve_command(HEALTHY, 0.3), "gpus": 1})
        behind = client.submit({"command": curve_command(SHORT, 0.2), "gpus": 1})
        assert behind["status"] == "queued"
        deadline = time.monotonic() + 20  # the next scheduling pass places it in the queue
        while client.job(behind["id"])["queue_position"] is None:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert client.job(behind["id"])["queue_position"] == 1
        jobs = {
            name: client.wait(job["id"], timeout_s=180)
            for name, job in (("hacking", hacking), ("healthy", healthy), ("behind", behind))
        }
        events = {name: client.all_events(job["id"]) for name, job in jobs.items()}
        decisions = {name: client.decisions(job["id"])["data"] for name, job in jobs.items()}
        checkpoints = {name: client.checkpoints(job["id"])["data"] for name, job in jobs.items()}
        yield jobs, events, decisions, checkpoints, client, (server.url, key)
    finally:
        server.stop()


def test_hacking_job_is_stopped_online_with_its_best_checkpoint(finished):
    jobs, events, decisions, checkpoints, _, _ = finished
    job = jobs["hacking"]
    assert job["status"] == "early_stopped"
    assert job["stop_reason"] == "evalstop: 3 consecutive eval declines"
    evals = [e["data"] for e in events["hacking"] if e["type"] == "eval"]
    assert len(evals) < len(HACKING)  # stopped before its end
    peak = max(range(len(evals)), key=lambda i: evals[i]["score"])
    assert job["best_checkpoint"]["step"] == evals[peak]["step"] == 4
    assert job["best_checkpoint"]["metrics"]["eval"] == max(HACKING)
    assert [c["step"] for c in checkpoints["hacking"] if c["is_best"]] == [4]
    assert job["gpu_hours_freed"] > 0
    stop = [d for d in decisions["hacking"] if d["stop"]]
    assert len(stop) == 1 and not stop[0]["shadow"]
    rested_on = stop[0]["evidence"]
    evidence = [
        e["data"]["score"]
        for e in events["hacking"]
        if e["type"] == "eval" and rested_on["from_seq"] <= e["seq"] <= rested_on["to_seq"]
    ]
    assert evidence == [0.6, 0.55, 0.5, 0.45]  # k + 1 evals
    assert rested_on["evals"] == 4 and rested_on["to_seq"] == stop[0]["event_seq"]


def test_healthy_job_is_not_stopped_and_succeeds(finished):
    jobs, events, decisions, _, _, _ = finished
    assert jobs["healthy"]["status"] == "succeeded"
    assert not any(d["stop"] for d in decisions["healthy"])
    assert len([e for e in events["healthy"] if e["type"] == "eval"]) == len(HEALTHY)


def test_queued_job_starts_when_the_stopped_job_frees_its_gpu(finished):
    jobs, events, _, _, _, _ = finished

    def when(name: str, status: str) -> float:
        return next(
            e["created_at"]
            for e in events[name]
            if e["type"] == "state" and e["data"]["status"] == status
        )

    assert when("behind", "starting") >= when("hacking", "early_stopped")
    assert when("behind", "starting") < when("healthy", "succeeded")  # it took the freed GPU
    assert jobs["behind"]["status"] == "succeeded"


def test_replaying_recorded_evals_reproduces_every_live_decision(finished):
    """The platform's decisions are the cluster stop rule's: a fresh EvalStop from the same
    registry, fed the recorded eval events in order, decides exactly as it did live."""
    jobs, events, decisions, _, _, _ = finished
    for name, job in jobs.items():
        assert_replayed(job, events[name], decisions[name])


def test_event_history_is_complete_and_ordered(finished):
    _, events, _, _, _, _ = finished
    for history in events.values():
        assert [e["seq"] for e in history] == list(range(1, len(history) + 1))
        steps = [e["data"]["step"] for e in history if e["type"] == "eval"]
        assert steps == list(range(1, len(steps) + 1))  # each eval once, none lost
        states = [e["data"]["status"] for e in history if e["type"] == "state"]
        assert states[:4] == ["validating", "queued", "starting", "running"]


def test_usage_and_cluster_report_the_tenant(finished):
    jobs, _, _, _, client, _ = finished
    usage = client.usage()
    assert usage["jobs"] == {"early_stopped": 1, "succeeded": 2}
    assert usage["gpu_hours_freed"] == pytest.approx(jobs["hacking"]["gpu_hours_freed"], abs=1e-6)
    cluster = client.cluster()
    assert cluster["gpus"] == 2 and cluster["gpus_in_use"] == 0 and cluster["queued"] == 0
    assert cluster["policy"] == "fifo" and cluster["stop_rule"]["rule"] == "evalstop"
    assert json.loads(json.dumps(cluster)) == cluster


def test_recorded_history_replays_in_the_simulator(finished, tmp_path):
    """`rlguard jobs export-curves` writes the live evals as a curve file the simulator reads."""
    jobs, events, _, _, _, (url, key) = finished
    env = {**os.environ, "RLGUARD_URL": url, "RLGUARD_API_KEY": key}
    out = tmp_path / "history.json"
    subprocess.run([*RLGUARD, "jobs", "export-curves", str(out)], env=env, check=True)
    curves = {c.name: c for c in read_curves(out).curves}
    assert set(curves) == {job["id"] for job in jobs.values()}
    hacking = curves[jobs["hacking"]["id"]]
    assert list(hacking.score) == [
        e["data"]["score"] for e in events["hacking"] if e["type"] == "eval"
    ]
    assert hacking.hacks and not curves[jobs["healthy"]["id"]].hacks
    simulated = subprocess.run(
        [*RLGUARD, "simulate", "--curves", str(out), "--seeds", "1", "--workers", "1", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert json.loads(simulated.stdout)


def test_hf_trainer_obeys_the_platform_through_evalstop_callback(live_server):
    """A real HF Trainer job whose EvalStopCallback takes the platform as its rule: the platform's
    EvalStop (k=3) stops it at the third decline (step 12), and the trainer stops there."""
    server = live_server("--gpus", "1")
    _, key = server.tenant("hf", quota_gpus=1)
    client = server.client(key)
    job = client.submit({"command": f"{sys.executable} {Path(__file__).with_name('hf_job.py')}"})
    job = client.wait(job["id"], timeout_s=180)
    assert job["status"] == "early_stopped", client.http.get(f"/v1/jobs/{job['id']}/logs").text
    assert job["stop_reason"] == "evalstop: 3 consecutive eval declines"
    steps = [e["data"]["step"] for e in client.all_events(job["id"]) if e["type"] == "eval"]
    assert steps == [2, 4, 6, 8, 10, 12]
    log = client.http.get(f"/v1/jobs/{job['id']}/logs").text
    assert "stopped=True reason=evalstop: 3 consecutive eval declines best_step=6" in log


def test_event_stream_replays_history_and_ends_with_the_job(finished):
    """`?stream=true` (server-sent events) from a cursor: every later event, then the end."""
    jobs, events, _, _, client, _ = finished
    streamed = list(client.follow(jobs["hacking"]["id"], after=3))
    assert [e["seq"] for e in streamed] == [e["seq"] for e in events["hacking"]][3:]
    assert client.jobs(status="early_stopped")["data"][0]["id"] == jobs["hacking"]["id"]


def test_a_shadow_rule_advises_and_records_but_never_stops(live_server):
    server = live_server("--gpus", "1")
    _, key = server.tenant("careful", quota_gpus=1)
    client = server.client(key)
    body = {"command": curve_command(HACKING, 0.1), "stop_policy": {"k": 2, "shadow": True}}
    job = client.wait(client.submit(body)["id"], timeout_s=120)
    assert job["status"] == "succeeded" and job["stop_reason"] is None
    assert job["stop_policy"] == {**job["stop_policy"], "k": 2, "shadow": True}
    stops = [d for d in client.decisions(job["id"])["data"] if d["stop"]]
    assert stops and all(d["shadow"] for d in stops)
    steps = [e["data"]["step"] for e in client.all_events(job["id"]) if e["type"] == "eval"]
    assert steps == list(range(1, len(HACKING) + 1))  # it ran to its end
