"""`rlguard demo --json`, the main job, in a directory holding only the lab's quick world (built
once per test run by tests/quick_world.py; the lab's tests cover its build): a real server, two
tenants' jobs over HTTP. EvalStop stops the hacking PPO job online and delivers its best
checkpoint by gold eval; red's GRPO, queued behind PPO by red's quota, starts as soon as PPO's GPU
is freed; blue's CGPO job is not stopped and succeeds."""

from __future__ import annotations

import json
import subprocess

import pytest
from live_platform import RLGUARD
from sqlalchemy import create_engine, text

from quick_world import quick_world_copy
from rlguard.cli.demo import COLUMNS
from rlguard.ports import unused_port

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_demo_stops_the_hacking_job_online(tmp_path, tmp_path_factory):
    quick_world_copy(tmp_path_factory, tmp_path / "world")
    command = [*RLGUARD, "demo", "--json", "--out", str(tmp_path), "--port", str(unused_port())]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)  # a hang guard
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    jobs = {job["method"]: job for job in result["jobs"]}
    assert set(jobs) == {"ppo", "crpg", "grpo"}
    assert all(set(job) == set(COLUMNS) for job in result["jobs"])

    ppo, crpg = jobs["ppo"], jobs["crpg"]
    assert ppo["state"] == "early_stopped" and ppo["stop_reason"].startswith("evalstop")
    assert ppo["gold_best"] > ppo["gold_at_stop"] and ppo["gpu_hours_freed"] > 0
    assert crpg["state"] == "succeeded" and crpg["stop_reason"] is None
    assert crpg["hacking"] is False and crpg["note"] is None
    for job in result["jobs"]:  # a hacking job that ran to its end says why
        assert bool(job["note"]) == (job["hacking"] is True and job["state"] != "early_stopped")

    engine = create_engine(f"sqlite:///{tmp_path / 'platform' / 'platform.db'}")
    with engine.connect() as c:
        evals = [
            json.loads(row[0])
            for row in c.execute(
                text("select data from events where job_id = :j and type = 'eval' order by seq"),
                {"j": ppo["id"]},
            )
        ]
        times = {
            (job, json.loads(data)["status"]): at
            for job, data, at in c.execute(
                text("select job_id, data, created_at from events where type = 'state'")
            )
        }
    engine.dispose()
    best = max(evals, key=lambda e: e["score"])
    assert (ppo["best_step"], ppo["gold_best"]) == (best["step"], round(best["score"], 4))
    assert evals[-1]["step"] < 48  # stopped before its budget's end
    grpo = jobs["grpo"]["id"]
    assert times[grpo, "queued"] < times[ppo["id"], "early_stopped"]  # it waited for PPO
    assert times[grpo, "starting"] >= times[ppo["id"], "early_stopped"]
    assert not any(d for d in (tmp_path / "platform").glob("ray-head.json"))  # Ray stopped
