"""Preemption under Tiresias with 2 virtual GPUs, on real `rlguard train` CGPO jobs: a long job
that has sunk to a lower queue is preempted (SIGTERM: it checkpoints and exits) for a short new
one, later resumes, and ends with exactly the weights of an uninterrupted run of the same seed."""

from __future__ import annotations

import time

import pytest
import torch
from live_platform import toy_train_config, toy_world
from safetensors.torch import load_file

pytestmark = [pytest.mark.ray, pytest.mark.slow]

STEPS = 24
SETTINGS = {"steps": STEPS, "save_every": 6, "eval_every": 6, "eval_prompts": 8}
TIRESIAS = '{"thresholds": [8.0], "tick_s": 1.0, "promote_knob": 1000.0}'


def _config(root, policy, name, **overrides):
    return toy_train_config(root, policy, name, **{**SETTINGS, **overrides})


def _state_times(client, job_id, status):
    return [
        e["created_at"]
        for e in client.all_events(job_id)
        if e["type"] == "state" and e["data"]["status"] == status
    ]


def test_a_preempted_job_resumes_to_the_uninterrupted_weights(live_server, tmp_path):
    policy, toy = toy_world(tmp_path / "toy")  # the jobs read it as their own uids
    server = live_server(
        "--gpus", "2", "--policy", "tiresias", "--policy-args", TIRESIAS, "--mount", toy
    )
    _, key = server.tenant("acme", quota_gpus=2)
    client = server.client(key)
    straight = client.submit({"config": _config(tmp_path / "toy", policy, "straight"), "gpus": 2})
    client.wait(straight["id"], timeout_s=300)

    long = client.submit({"config": _config(tmp_path / "toy", policy, "long"), "gpus": 2})
    deadline = time.monotonic() + 120
    while not [e for e in client.all_events(long["id"]) if e["type"] == "eval"]:
        assert time.monotonic() < deadline, "the long job reported no eval"
        time.sleep(0.3)
    short = {**_config(tmp_path / "toy", policy, "short"), "steps": 2, "eval_every": 2}
    short_job = client.submit({"config": short, "gpus": 1})
    for job in (short_job, long):
        assert client.wait(job["id"], timeout_s=400)["status"] == "succeeded"

    preempted = [
        e
        for e in client.all_events(long["id"])
        if e["type"] == "state" and e["data"]["status"] == "preempted"
    ]
    assert preempted, "the long job was never preempted"
    assert client.job(long["id"])["attempts"] >= 2
    assert client.job(straight["id"])["attempts"] == 1
    # The short job ran while the long one waited; the long one resumed after it.
    assert min(_state_times(client, short_job["id"], "running")) >= preempted[0]["created_at"]
    assert max(_state_times(client, long["id"], "running")) >= min(
        _state_times(client, short_job["id"], "running")
    )
    step_dir = f"checkpoints/step-{STEPS:06d}/policy.safetensors"
    jobs = server.data_dir / "jobs"
    a = load_file(jobs / straight["id"] / "output" / step_dir)
    b = load_file(jobs / long["id"] / "output" / step_dir)
    for name, tensor in a.items():
        torch.testing.assert_close(b[name], tensor, rtol=0, atol=0)
    evals = [e["data"]["step"] for e in client.all_events(long["id"]) if e["type"] == "eval"]
    assert evals == sorted(set(evals)) == list(range(0, STEPS + 1, 6))
