"""Host-side bookkeeping for sandboxes: dedicated uids, finding and killing their processes, files.

Each running sandbox gets a uid of its own out of a fixed range (claimed with a lock file, so
separate judge processes on one host never share one). A uid per sandbox is what makes cleanup
exact: everything that uid owns belongs to that sandbox, so killing and deleting by uid cannot hit
the judge, another sandbox, or an unrelated service that happens to run as `nobody`.
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

UID_BASE = 2_100_000_000  # above the ranges container runtimes hand out, below 2**31
UID_SLOTS = 512
LOCK_DIR = "/run/rlguard-sandbox"
TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")

# kill(-1) from inside the uid reaches every process of that uid in one pass of the kernel's task
# list, so a fork bomb cannot outrun it the way a /proc scan followed by kill(pid) can.
_KILL_ALL = (
    "import os\nos.setgroups([]); os.setgid({0}); os.setuid({0})\ntry: os.kill(-1, 9)\n"
    "except ProcessLookupError: pass\n"
)


class SandboxError(RuntimeError):
    """The sandbox itself could not run (a judge failure, never the program's fault)."""


def uids_mapped() -> bool:
    """Whether the whole uid/gid range exists in this (possibly user-namespaced) host."""
    return all(_covers(f"/proc/self/{m}_map", UID_BASE, UID_SLOTS) for m in ("uid", "gid"))


def _covers(map_path: str, first: int, count: int) -> bool:
    with open(map_path) as f:
        for line in f:
            inside, _, length = (int(x) for x in line.split())
            if inside <= first and first + count <= inside + length:
                return True
    return False


@contextmanager
def claim_uid() -> Iterator[int]:
    """A sandbox uid nobody else holds; its processes are killed before use and after."""
    os.makedirs(LOCK_DIR, 0o700, exist_ok=True)
    offset = random.randrange(UID_SLOTS)
    for i in range(UID_SLOTS):
        uid = UID_BASE + (offset + i) % UID_SLOTS
        fd = os.open(f"{LOCK_DIR}/{uid}", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            kill_all(uid)  # leftovers of a judge that crashed mid-run
            yield uid
            kill_all(uid)
        finally:
            os.close(fd)
        return
    raise SandboxError(f"all {UID_SLOTS} sandbox uids are busy")


def _status(pid: str) -> bytes:
    fd = os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 8192)
    finally:
        os.close(fd)


def _field(status: bytes, name: bytes) -> bytes:
    """The first word of a status line ("Uid:\t1000\t..." -> b"1000": the real uid)."""
    start = status.index(b"\n" + name + b":") + len(name) + 2
    return status[start : status.index(b"\n", start)].split()[0]


def _live(uid: int) -> Iterator[bytes]:
    """The status of every live (non-zombie) process whose real uid is uid. A host with hundreds
    of processes is scanned several times per sandbox run: each status is read in one syscall and
    only its Uid line parsed (parsing every line cost about 4 times as much)."""
    wanted = str(uid).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = _status(pid)
        except OSError:  # exited since listdir
            continue
        if _field(status, b"Uid") == wanted and not _field(status, b"State").startswith(b"Z"):
            yield status


def live_processes(uid: int) -> int:
    return sum(1 for _ in _live(uid))


def task_count(uid: int) -> int:
    """Threads of uid, as the kernel counts them against RLIMIT_NPROC."""
    return sum(int(_field(status, b"Threads")) for status in _live(uid))


def kill_all(uid: int, timeout_s: float = 5.0) -> None:
    """SIGKILL every process of uid and wait until none is left (bounded)."""
    deadline = time.monotonic() + timeout_s
    while live_processes(uid):
        if time.monotonic() > deadline:
            raise SandboxError(f"processes of sandbox uid {uid} survive SIGKILL")
        subprocess.run(
            [sys.executable, "-I", "-S", "-c", _KILL_ALL.format(uid)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={},
            cwd="/",
            timeout=timeout_s,
            check=False,
        )
        time.sleep(0.01)


def temp_dirs() -> list[str]:
    """World-writable temp dirs on this host, plus the judge's own temp dir, outermost only."""
    found: list[str] = []
    for d in sorted({os.path.realpath(d) for d in (*TEMP_DIRS, tempfile.gettempdir())}):
        if os.path.isdir(d) and not any(d.startswith(f"{outer}/") for outer in found):
            found.append(d)
    return sorted(found, key=lambda d: d != "/tmp")


def sweep_files(uid: int, roots: list[str]) -> None:
    """Delete what uid left in world-writable dirs (only needed without a private /tmp).

    Only dirs the uid could write into are walked: its own and world-writable ones. Run it after
    kill_all, when nothing of that uid can race the deletion.
    """
    for root in roots:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid == uid and stat.S_ISDIR(st.st_mode):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif st.st_uid == uid:
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)
            elif stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH:
                sweep_files(uid, [entry.path])


@contextmanager
def workdir(uid: int | None) -> Iterator[str]:
    """A fresh 0700 dir owned by the sandbox uid; removed, with anything uid left in temp dirs."""
    path = tempfile.mkdtemp(prefix="rlguard-sbx-")
    try:
        if uid is not None:
            os.chown(path, uid, uid)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
