"""EvalStop on an SFT job: a plain transformers `Trainer` submitted as `--kind sft --watch
transformers` (tests/platform/sft_trainer_job.py, no rlguard in it) whose held-out eval_loss
bottoms at step 8 and then rises is stopped online on a real sandboxed `rlguard serve` and
delivers checkpoint-8; its healthy twin, whose eval_loss keeps falling, runs to its end. Every
decision says why, none is an empty continue."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from live_platform import RLGUARD, LiveServer

from rlguard.platform.replay import replay_decisions
from rlguard.ports import unused_port

pytestmark = [pytest.mark.ray, pytest.mark.slow]  # a server, and two Trainers that train

JOB = Path(__file__).with_name("sft_trainer_job.py")


def submit(server: LiveServer, key: str, mode: str) -> str:
    env = {"RLGUARD_URL": server.url, "RLGUARD_API_KEY": key, "PATH": "/usr/bin:/bin"}
    args = ["--command", f"python {JOB} {mode} 60", "--kind", "sft", "--watch", "transformers"]
    done = subprocess.run(
        [*RLGUARD, "jobs", "submit", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])["id"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    server = LiveServer(tmp_path_factory.mktemp("sft"), unused_port(), None, ["--gpus", "2"])
    server.start()
    try:
        _, key = server.tenant("acme")
        ids = {mode: submit(server, key, mode) for mode in ("overfit", "healthy")}
        client = server.client(key)
        jobs = {m: client.wait(i, timeout_s=300) for m, i in ids.items()}
        yield client, jobs
    finally:
        server.stop()


def test_the_overfitting_sft_job_is_stopped_and_delivers_its_best_checkpoint(finished):
    client, jobs = finished
    job = jobs["overfit"]
    assert job["job_kind"] == "sft"
    assert job["status"] == "early_stopped", job
    assert job["stop_reason"] == "evalstop: 3 consecutive eval declines"
    assert job["best_checkpoint"]["path"] == "output/checkpoint-8"
    events = client.all_events(job["id"])
    decisions = client.decisions(job["id"])["data"]
    assert [d["reason"] for d in decisions[:2]] == [
        "not judged: warm-up, eval 1 of 2",
        "not judged: warm-up, eval 2 of 2",
    ]
    live = {d["event_seq"]: (d["stop"], d["reason"]) for d in decisions}
    replayed = replay_decisions(job, events)
    stop = max(live)  # evals the watcher read after the stop, while the job exited, are stored
    assert {seq: v for seq, v in replayed.items() if seq <= stop} == live  # undecided


def test_the_healthy_twin_runs_to_its_end_with_every_decision_said(finished):
    client, jobs = finished
    job = jobs["healthy"]
    assert job["status"] == "succeeded", job
    decisions = client.decisions(job["id"])["data"]
    assert len(decisions) == 15 and not any(d["stop"] for d in decisions)
    assert all(d["reason"] for d in decisions)
    assert decisions[5]["reason"] == "continue: 0 of k=3 consecutive declines"
