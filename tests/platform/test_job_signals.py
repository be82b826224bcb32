"""A stop reaches exactly its own run: the job's processes in the run's cgroup, never another
platform's job that holds the same uid on this host (two platforms both number their jobs' uids
from UID_BASE), every rank of a multi-rank job (which must first meet inside its sandbox), and a
job cannot dodge it by making itself non-dumpable (/proc/PID then belongs to root)."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest
from direct_sandbox import job_sandbox
from live_platform import require_sandbox

from rlguard.platform.executor import JobProcess, real_uid
from rlguard.platform.jobhome import JobHome
from rlguard.platform.sandbox import UID_BASE, Limits

SHARED_UID = UID_BASE + 99_999  # both "platforms" gave their first job this uid
PYTHON = sys.executable


@pytest.fixture(scope="module", autouse=True)
def sandboxing_host():
    require_sandbox("the job signal tests")


def start(tmp_path, name: str, code: str, env: dict[str, str] | None = None) -> JobProcess:
    data = tmp_path / name
    sandbox = job_sandbox(data, "job-1", SHARED_UID, Limits(1 << 30, 64, 0, 1 << 30, 1 << 26))
    argv = [PYTHON, "-c", code]
    home = JobHome("job-1", str(data / "jobs"), SHARED_UID)
    run = JobProcess(argv, env or {}, home, str(data / "job.log"), sandbox)
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
RANK = """
import time, torch, torch.distributed as dist
dist.init_process_group("gloo")
total = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(total)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: sum {total.item():.0f}", flush=True)
dist.barrier()
if dist.get_rank() == 0:
    print("started", flush=True)
time.sleep(300)
"""
# what `rlguard train --nproc 2` does through accelerate: torchrun starts the ranks, which meet
# at a rendezvous on the sandbox's own loopback under its host name
TORCHRUN = f"""
import runpy, sys
open("rank.py", "w").write({RANK!r})
sys.argv = ["torchrun", "--nproc-per-node", "2", "rank.py"]
runpy.run_module("torch.distributed.run", run_name="__main__")
"""
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


def uid_processes(uid: int) -> list[int]:
    return [pid for pid in (int(p.name) for p in Path("/proc").glob("[0-9]*")) if owner(pid) == uid]


def owner(pid: int) -> int | None:
    try:
        return real_uid(pid)
    except OSError:  # exited while we looked
        return None


def test_the_ranks_of_a_job_meet_and_a_stop_reaches_every_one(tmp_path):
    run = start(tmp_path, "a", TORCHRUN, {"OMP_NUM_THREADS": "1"})
    try:
        until_started(run)
        log = Path(run.log_path).read_text()
        assert "rank 0 of 2: sum 3" in log and "rank 1 of 2: sum 3" in log
        assert len(uid_processes(SHARED_UID)) >= 3  # torchrun and its two ranks
        started = time.monotonic()
        run.terminate(grace_s=30)
        assert time.monotonic() - started < 30  # every rank took its SIGTERM: no SIGKILL needed
        assert uid_processes(SHARED_UID) == []
    finally:
        if run.process.poll() is None:  # ranks that never met would wait for each other
            run.terminate(grace_s=0)
        run.wait()
