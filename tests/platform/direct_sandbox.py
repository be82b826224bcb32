"""Code run as a sandboxed job's process directly, as a run's actor starts it (confine.py) but
without Ray or a server: for the tests and benchmarks of what the sandbox gives a job on a node
(tests/platform/test_sandbox_direct.py, test_job_signals.py, benchmarks/bench_sandbox_gpu.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
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
    seccomp: bool = True,
) -> subprocess.CompletedProcess:
    """`python -c code` as a job of its own data directory under `workdir` (made here);
    `seccomp` False: without the sandbox's seccomp filter, as `rlguard serve --no-job-seccomp`."""
    sandbox = replace(job_sandbox(workdir / "data", "job", UID, limits), seccomp=seccomp)
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
            pass_fds=confined.pass_fds,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    finally:
        for fd in confined.pass_fds:
            os.close(fd)
        confined.cgroup.remove()
