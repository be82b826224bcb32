"""A stop reaches exactly its own run: the job's processes in the run's cgroup, never another
platform's job that holds the same uid on this host (two platforms both number their jobs' uids
from UID_BASE), and a job cannot dodge it by making itself non-dumpable (/proc/PID then belongs
to root)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from rlguard.platform.executor import JobProcess
from rlguard.platform.jobhome import JobHome
from rlguard.platform.jobview import code_roots, host_problem
from rlguard.platform.sandbox import UID_BASE, JobSandbox, Limits

SHARED_UID = UID_BASE + 99_999  # both "platforms" gave their first job this uid
PYTHON = os.path.realpath(sys.executable)


@pytest.fixture(scope="module", autouse=True)
def sandboxing_host():
    problem = host_problem()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the job signal tests: {problem}")
        pytest.skip(f"this host cannot sandbox jobs: {problem}")


def start(tmp_path, name: str, code: str) -> JobProcess:
    data = tmp_path / name
    job = data / "jobs" / "job-1"
    job.mkdir(parents=True)
    os.chown(job, SHARED_UID, SHARED_UID)
    limits = Limits(1 << 30, 64, 0, 1 << 30, 1 << 26)
    sandbox = JobSandbox(
        SHARED_UID, str(job), str(data), tuple(code_roots()), limits, "http://127.0.0.1:1"
    )
    argv = [PYTHON, "-c", code]
    home = JobHome("job-1", str(data / "jobs"), SHARED_UID)
    run = JobProcess(argv, {}, home, str(data / "job.log"), sandbox)
    run.started()
    return run


def until_started(run: JobProcess) -> None:
    deadline = time.monotonic() + 60
    log = Path(run.log_path)
    while "started" not in log.read_text():
        assert run.process.poll() is None, log.read_text()
        assert time.monotonic() < deadline
        time.sleep(0.05)


SLEEPER = "import time; print('started', flush=True); time.sleep(300)"
# PR_SET_DUMPABLE = 4: /proc/PID of this process now belongs to root
UNDUMPABLE = "import ctypes; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); " + SLEEPER


def test_a_stop_spares_another_platforms_job_with_the_same_uid(tmp_path):
    mine, theirs = start(tmp_path, "a", SLEEPER), start(tmp_path, "b", SLEEPER)
    try:
        until_started(mine)
        until_started(theirs)
        assert mine.terminate(grace_s=30) == 128 + signal.SIGTERM  # bwrap passes the exit on
        time.sleep(0.5)
        assert theirs.process.poll() is None  # the other platform's job runs on
    finally:
        theirs.terminate(grace_s=0)
        mine.wait()
        theirs.wait()


def test_a_non_dumpable_job_still_gets_its_sigterm(tmp_path):
    run = start(tmp_path, "a", UNDUMPABLE)
    try:
        until_started(run)
        started = time.monotonic()
        assert run.terminate(grace_s=30) == 128 + signal.SIGTERM  # not the SIGKILL
        assert time.monotonic() - started < 30
    finally:
        run.wait()
