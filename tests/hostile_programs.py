"""Hostile programs for a sandbox, each with the words its refusal may give, under LIMITS: the
judges' sandbox battery runs them as a policy's code, the python grader's as a tenant's grader."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from rlguard.judges import _sandbox_host as host
from rlguard.judges.sandbox import Limits

MIB = 1 << 20
LIMITS = Limits(wall_s=2.5, cpu_s=2, memory_bytes=256 * MIB, nproc=8)
FORK_BOMB = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
ATTACKS = {
    "infinite loop": ("while True:\n    pass", ("timeout", "cpu time limit")),
    "sleep forever": ("import time\ntime.sleep(3600)", ("timeout after 2.5 s",)),
    "fork bomb": (FORK_BOMB, ("timeout", "cpu time limit")),
    "thread bomb": (
        "import threading, time\nwhile True:\n"
        "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()",
        ("can't start new thread", "timeout", "memory"),  # 3.11.2 can hang on a failed start
    ),
    "memory bomb 10 GB": ("x = bytearray(10 * 2**30)", ("memory limit",)),
    "memory creep": ("chunks = []\nwhile True:\n    chunks.append(bytearray(2**24))", ("memory",)),
    "disk fill": (
        "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 2**20)",
        ("File too large", "No space left"),
    ),
    "print 1 GB": (
        "import sys\nblock = 'x' * 2**16\nfor _ in range(2**14):\n    sys.stdout.write(block)",
        ("output limit",),
    ),
    "stderr flood": (
        "import sys\nwhile True:\n    sys.stderr.write('y' * 4096)",
        ("output limit",),
    ),
}


def _status(pid: str) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return {k: v.split()[0] for k, v in (line.split(":", 1) for line in f) if v.split()}


def leftovers(pids: set[int], uids: set[int]) -> list[str]:
    """Live processes of the given sandboxes: by their uid, or in their group, session or brood."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = _status(pid)
        except OSError:
            continue
        mine = {int(status[k]) for k in ("PPid", "NSpgid", "NSsid")} & pids
        if status["State"] != "Z" and (mine or int(status["Uid"]) in uids):
            found.append(f"{pid} uid={status['Uid']} {status['Name']}")
    return found


@contextmanager
def sandboxes_cleaned_up(monkeypatch) -> Iterator[None]:
    """Asserts, at the end, that no process of a sandbox started meanwhile is alive."""
    pids: set[int] = set()
    uids: set[int] = set()
    real_popen, real_claim = subprocess.Popen, host.claim_uid

    def popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        pids.add(proc.pid)
        return proc

    @contextmanager
    def claim_uid():
        with real_claim() as uid:
            uids.add(uid)
            yield uid

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(host, "claim_uid", claim_uid)
    yield
    assert leftovers(pids, uids) == []
