"""Real TRL GRPOTrainer jobs (tests/platform/grpo_job.py: a tiny model, CPU, no rlguard import)
submitted as plain commands with the TRL preset, on a live sandboxed platform. The one trained
on the gameable proxy hacks: TRL's own TensorBoard logs show its gold eval peak and fall, the
platform's EvalStop stops it online through the watcher, output/checkpoint-8 (saved at the best
eval's step, in the job's $RLGUARD_OUTPUT_DIR) is delivered, and replaying the recorded evals
reproduces every decision. The same job watched through trainer_state.json only is stopped at
the same eval; the honest one is not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from live_platform import LiveServer, assert_replayed

from rlguard.ports import unused_port

pytestmark = pytest.mark.ray

JOB = Path(__file__).with_name("grpo_job.py")
GOLD = {"eval_tag": "eval/rewards/gold/mean", "proxy_tag": "train/rewards/proxy/mean"}
TENSORBOARD = {"preset": "trl", **GOLD, "poll_s": 0.5}
TRAINER_STATE = {
    "preset": "trl",
    "source": "trainer_state",
    "eval_tag": "eval_rewards/gold/mean",
    "proxy_tag": "rewards/proxy/mean",
    "poll_s": 0.5,
}
ONE_THREAD = {"OMP_NUM_THREADS": "1"}  # two CPU cores shared by three jobs: no oversubscription


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    server = LiveServer(
        tmp_path_factory.mktemp("trl"), unused_port(), None, ["--gpus", "3", "--k", "3"]
    ).start()
    try:
        _, key = server.tenant("acme", quota_gpus=3)
        client = server.client(key)
        bodies = {
            "hacking": (f"{sys.executable} {JOB}", TENSORBOARD),
            "trainer_state": (f"{sys.executable} {JOB}", TRAINER_STATE),
            "honest": (f"{sys.executable} {JOB} honest", TENSORBOARD),
        }
        ids = {
            name: client.submit({"command": cmd, "watch": watch, "env": ONE_THREAD})["id"]
            for name, (cmd, watch) in bodies.items()
        }
        jobs = {name: client.wait(job_id, timeout_s=400) for name, job_id in ids.items()}
        events = {name: client.all_events(job_id) for name, job_id in ids.items()}
        decisions = {name: client.decisions(job_id)["data"] for name, job_id in ids.items()}
        yield jobs, events, decisions
    finally:
        server.stop()


def evals(events: list[dict]) -> list[dict]:
    return [e["data"] for e in events if e["type"] == "eval"]


def delivery(events: list[dict]) -> dict:
    found = [e["data"] for e in events if e["type"] == "checkpoint" and "rule" in e["data"]]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("name", ["hacking", "trainer_state"])
def test_the_hacking_grpo_job_is_stopped_online_with_its_best_checkpoint(finished, name):
    jobs, events, decisions = finished
    job, history = jobs[name], events[name]
    assert job["status"] == "early_stopped", job
    assert job["stop_reason"] == "evalstop: 3 consecutive eval declines"
    seen = evals(history)
    assert [e["step"] for e in seen] == [4, 8, 12, 16, 20]  # stopped at the 3rd decline
    best = max(seen, key=lambda e: e["score"])
    assert best["step"] == 8 and best["proxy"] < seen[-1]["proxy"]  # the proxy kept rising
    assert [e["progress"] for e in seen[1:]] == [s / 40 for s in (8, 12, 16, 20)]
    assert delivery(history) | {"reason": None} == {
        "delivered": True,
        "best_step": 8,
        "best_score": best["score"],
        "step": 8,
        "path": "output/checkpoint-8",
        "rule": "at_best_eval",
        "reason": None,
    }
    assert job["best_checkpoint"]["path"] == "output/checkpoint-8"
    assert job["gpu_hours_freed"] > 0
    assert_replayed(job, history, decisions[name])


def test_the_honest_grpo_job_is_not_stopped(finished):
    jobs, events, decisions = finished
    assert jobs["honest"]["status"] == "succeeded", jobs["honest"]
    assert [e["step"] for e in evals(events["honest"])] == list(range(4, 41, 4))
    assert not any(d["stop"] for d in decisions["honest"])
    assert_replayed(jobs["honest"], events["honest"], decisions["honest"])
