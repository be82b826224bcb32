"""Quotes and budgets end to end on a live platform (`rlguard serve`, 2 virtual GPUs, sandboxed
where the host can): `rlguard jobs submit --setup --budget-gpu-hours` prints the quote; the job
reports its steps and evals; its pace passes the budget and it is stopped with reason budget and
its best checkpoint; `rlguard jobs export-steps` writes its steps for `runtime calibrate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from live_platform import RLGUARD, LiveServer
from test_quotes import SETUP

from rlguard.ports import unused_port

pytestmark = pytest.mark.ray

BUDGET_JOB = Path(__file__).with_name("budget_job.py")
# Evals 1 and 2 come at once at progress 0.5 and 0.6 (the pace is measured from the first: 0.6
# projects what the run has used, under 0.02 GPU-h while it has been up less than 36 s); eval 3
# after 22 s at progress 0.65: 2 GPUs x 22 s over 0.15 of progress, 0.0285 GPU-h more to its end.
BUDGET, PAUSE_S = 0.02, 22


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*RLGUARD, *args], env=env, capture_output=True, text=True, timeout=300)


def test_a_quoted_job_past_its_budget_is_stopped_and_its_steps_export(tmp_path):
    server = LiveServer(
        tmp_path / "platform", unused_port(), None, ["--gpus", "2", "--grace-s", "5"]
    )
    server.data_dir.mkdir()
    try:
        server.start()
        _, key = server.tenant("acme", quota_gpus=2)
        env = {**os.environ, "RLGUARD_URL": server.url, "RLGUARD_API_KEY": key}
        setup_file = tmp_path / "job.yaml"
        setup_file.write_text(yaml.safe_dump(SETUP))
        command = f"{sys.executable} {BUDGET_JOB} {PAUSE_S}"
        submitted = _cli(
            env, "jobs", "submit", "--command", command, "--setup", str(setup_file),
            "--budget-gpu-hours", str(BUDGET), "--stop-rule", "none",
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr
        quote_line = next(ln for ln in submitted.stdout.splitlines() if ln.startswith("quote: "))
        assert "x 100 steps" in quote_line and "(quote)" in quote_line
        (listed,) = json.loads(_cli(env, "jobs", "list", "--json").stdout)["data"]
        job_id = listed["id"]

        client = server.client(key)
        job = client.wait(job_id, timeout_s=240)
        assert job["status"] == "early_stopped", server.log.read_text()[-3000:]
        assert job["stop_reason"].startswith("budget: projected")
        assert job["best_checkpoint"]["step"] == 1  # the best eval's (0.7)
        assert job["estimate_s"] == job["quote"]["total_s"]
        (stop,) = [d for d in client.decisions(job_id)["data"] if d["stop"]]
        assert stop["rule"] == "budget" and stop["evidence"]["progress"] == 0.65
        assert stop["evidence"]["projected_gpu_hours"] > BUDGET
        measured = job["measured"]
        assert measured["steps_reported"] == 3
        assert measured["step_s"]["generation"] == 29.0  # steps 2 and 3: the first warms up
        assert set(measured["step_s"]) == set(job["quote"]["step_s"])

        steps_csv = tmp_path / "steps.csv"
        exported = _cli(env, "jobs", "export-steps", str(steps_csv))
        assert exported.returncode == 0, exported.stderr
        assert "wrote 2 steps of 1 jobs" in exported.stdout
        profile = tmp_path / "profile.yaml"
        calibrated = _cli(
            env, "runtime", "calibrate", str(steps_csv), "--setup", str(setup_file),
            "--out", str(profile), "--json",
        )  # fmt: skip
        assert calibrated.returncode == 0, calibrated.stderr
        phases = {p["phase"]: p for p in json.loads(calibrated.stdout)["phases"]}
        assert phases["generation"]["measured_s"] == pytest.approx(29.0)
        assert profile.is_file()
    finally:
        server.stop()
