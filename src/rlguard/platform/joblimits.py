"""One run's resource limits: a cgroup for memory, pids and CPU, rlimits, and a disk watch.

Which cgroup applies depends on the node, and `describe()` says it:
  * cgroup v2, where /sys/fs/cgroup is the unified hierarchy and its memory, pids and cpu
    controllers can be enabled for a child (`memory.max`, `pids.max`, `cpu.max`);
  * else cgroup v1, where its memory, pids and cpu hierarchies are mounted writable
    (`memory.limit_in_bytes`, `pids.max`, `cpu.cfs_quota_us`);
  * else none: memory and CPU are then not limited per job (the node's OOM killer picks), and
    pids only by RLIMIT_NPROC.
Always: RLIMIT_NPROC (per uid, and each job has its own uid, so it counts that job alone),
RLIMIT_FSIZE (no file larger than the disk limit), no core dumps. The disk limit itself is the
kernel's where the node can mount the job a volume of that size (volume.py); the actor's
`DiskWatch` (4 looks a second) then kills a job whose volume is full, saying why. Where it cannot,
the watch sums the job directory's blocks (`tree_over`) and kills a job past its limit: polled,
so a job can overshoot by what it writes between two looks, and by what it hides from a walk
(an unlinked open file, its stdout).
"""

from __future__ import annotations

import contextlib
import os
import resource
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rlguard.platform.sandbox import Limits

ROOT = Path("/sys/fs/cgroup")
PARENT = "rlguard-jobs"
WATCH_SUFFIX = "-watch"
"""A run's watch process's cgroup is the run's name with this after it (watch_runner.py)."""
CONTROLLERS = ("memory", "pids", "cpu")
PERIOD_US = 100_000


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _v2_ready() -> bool:
    controllers = ROOT / "cgroup.controllers"
    if not controllers.is_file():
        return False
    return set(CONTROLLERS) <= set(controllers.read_text().split())


def _v1_roots() -> dict[str, Path]:
    roots = {c: ROOT / c for c in CONTROLLERS}
    if all(p.is_dir() and os.access(p, os.W_OK) for p in roots.values()):
        return roots
    return {}


def describe() -> str:
    """Which limits a run on this node gets."""
    if _v2_ready():
        return "cgroup v2 (memory, pids, cpu)"
    if _v1_roots():
        return "cgroup v1 (memory, pids, cpu)"
    return "rlimits only (no writable cgroup: memory and CPU not limited per job)"


class Cgroup:
    """The run's cgroup(s), made before its process starts and removed after it ended."""

    def __init__(self, name: str, limits: Limits) -> None:
        self.dirs: list[Path] = []
        try:
            if _v2_ready():
                self._make_v2(name, limits)
            elif roots := _v1_roots():
                self._make_v1(roots, name, limits)
        except OSError:
            self.remove()
            raise

    def _make_v2(self, name: str, limits: Limits) -> None:
        enable = " ".join(f"+{c}" for c in CONTROLLERS)
        _write(ROOT / "cgroup.subtree_control", enable)
        parent = ROOT / PARENT
        parent.mkdir(exist_ok=True)
        _write(parent / "cgroup.subtree_control", enable)
        run = parent / name
        run.mkdir(exist_ok=True)
        self.dirs.append(run)
        _write(run / "memory.max", str(limits.memory_bytes))
        with contextlib.suppress(OSError):  # absent without swap accounting
            _write(run / "memory.swap.max", "0")
        _write(run / "pids.max", str(limits.pids))
        if limits.cpus > 0:
            _write(run / "cpu.max", f"{int(limits.cpus * PERIOD_US)} {PERIOD_US}")

    def _make_v1(self, roots: dict[str, Path], name: str, limits: Limits) -> None:
        for root in roots.values():
            run = root / PARENT / name
            run.mkdir(parents=True, exist_ok=True)
            self.dirs.append(run)
        memory, pids, cpu = (roots[c] / PARENT / name for c in CONTROLLERS)
        _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
        with contextlib.suppress(OSError):  # absent without swap accounting
            _write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
        _write(pids / "pids.max", str(limits.pids))
        if limits.cpus > 0:
            _write(cpu / "cpu.cfs_period_us", str(PERIOD_US))
            _write(cpu / "cpu.cfs_quota_us", str(int(limits.cpus * PERIOD_US)))

    def pids(self) -> list[int] | None:
        """The processes in the run's cgroup now: exactly this run's, however they regrouped
        themselves (None where no cgroup could be made)."""
        if not self.dirs:
            return None
        try:
            return [int(pid) for pid in (self.dirs[0] / "cgroup.procs").read_text().split()]
        except FileNotFoundError:  # removed: the run is over
            return []

    def join(self) -> None:
        """In the child before exec: move this process (and so all it starts) into the cgroup."""
        pid = str(os.getpid())
        for run in self.dirs:
            _write(run / "cgroup.procs", pid)

    @classmethod
    def existing(cls, name: str) -> Cgroup:
        """The run's cgroup(s) of that name that exist now, whichever hierarchy made them."""
        found = cls.__new__(cls)
        places = [ROOT / PARENT, *(ROOT / c / PARENT for c in CONTROLLERS)]
        found.dirs = [place / name for place in places if (place / name).is_dir()]
        return found

    def remove(self, attempts: int = 50) -> bool:
        """Whether every directory is gone (one still holding a process stays)."""
        for run in self.dirs:
            for _ in range(attempts):  # the kernel frees a cgroup a moment after its last process
                try:
                    run.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
        return not any(run.is_dir() for run in self.dirs)


def set_rlimits(limits: Limits) -> None:
    """In the child before exec (inherited through bwrap and setpriv by the job's processes)."""
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.pids, limits.pids))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.disk_bytes, limits.disk_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def tree_bytes(root: Path) -> int:
    """Bytes a directory tree holds on disk (allocated blocks; links not followed)."""
    total = 0
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_blocks * 512
    return total


def tree_over(root: Path, limit: int) -> Callable[[], str | None]:
    """The polled limit: why the tree under `root` is over `limit` bytes, or None."""

    def over() -> str | None:
        used = tree_bytes(root)
        if used <= limit:
            return None
        return f"the job's directory holds {used} bytes, over its disk limit of {limit}"

    return over


class DiskWatch(threading.Thread):
    """Kill the job (`kill`, with why) once `over()` says why; polls every `every_s`."""

    def __init__(
        self,
        over: Callable[[], str | None],
        kill: Callable[[str], None],
        every_s: float = 0.25,
    ):
        super().__init__(daemon=True, name="disk-watch")
        self.over, self.kill, self.every_s = over, kill, every_s
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every_s):
            reason = self.over()
            if reason is not None:
                self.kill(reason)
                return
