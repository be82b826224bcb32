"""Code run as a sandboxed job's process directly, as a run's actor starts it (confine.py) but
without Ray or a server: for the tests and benchmarks of what the sandbox gives a job on a node
(tests/platform/test_sandbox_direct.py, test_job_signals.py, benchmarks/bench_sandbox_gpu.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rlguard.platform.confine import confine
from rlguard.platform.jobview import code_roots
from rlguard.platform.sandbox import UID_BASE, JobSandbox, Limits

UID = UID_BASE + 900_000  # far above the job numbers of the suite's platforms


def job_sandbox(data: Path, job_id: str, uid: int, limits: Limits) -> JobSandbox:
    """The sandbox of job `job_id` of the data directory `data` (its directory made, the uid's)."""
    job = data / "jobs" / job_id
    job.mkdir(parents=True)
    os.chown(job, uid, uid)
    return JobSandbox(uid, str(job), str(data), tuple(code_roots()), limits, "http://0.0.0.0:1")


def run_job(
    workdir: Path,
    code: str,
    limits: Limits,
    ray_ids: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout_s: float = 120,
) -> subprocess.CompletedProcess:
    """`python -c code` as a job of its own data directory under `workdir` (made here)."""
    sandbox = job_sandbox(workdir / "data", "job", UID, limits)
    socket = workdir / "api.sock"
    socket.touch()
    argv = [sys.executable, "-c", code]
    name = f"direct-{os.getpid()}-{workdir.name}"
    confined = confine(sandbox, argv, env or {}, sandbox.job_dir, str(socket), list(ray_ids), name)
    try:
        return subprocess.run(
            confined.argv,
            env=confined.env,
            preexec_fn=confined.preexec,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    finally:
        confined.cgroup.remove()
