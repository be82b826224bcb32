"""A run's private directory on its node (its API socket lives there), and the removal of those
whose actor died without removing them.

The actor holds an exclusive flock on the directory for its whole life; the kernel drops it when
the actor's process dies, however it dies (Ray killing it, a lost head, SIGKILL), and `_clean`
never runs. So the next run that starts on the node can tell a dead run's leftovers from a live
run's: it removes every run directory older than GRACE_S whose lock it can take, with the cgroups
of the same name (joblimits.py) and of its watch process (watch_runner.py). Without this each
such run left an empty cgroup per controller and a directory in /tmp behind for good (78 of them
on this development host after a day).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

from rlguard.platform.joblimits import WATCH_SUFFIX, Cgroup

PREFIX = "rlguard-run-"
GRACE_S = 60.0
"""Younger directories are left alone: one may be between its making and its lock."""


class RunDir:
    """A new run directory, locked until `remove` (or the process's death)."""

    def __init__(self, root: Path | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=root))
        self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _abandoned(path: Path) -> bool:
    try:
        if time.time() - path.stat().st_ctime < GRACE_S:
            return False
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # removed meanwhile, or not a directory
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def sweep(root: Path | None = None) -> list[str]:
    """Remove what dead runs left on this node: their directories and cgroups; their names."""
    removed = []
    for path in Path(root or tempfile.gettempdir()).glob(PREFIX + "*"):
        cgroups = (Cgroup.existing(path.name), Cgroup.existing(path.name + WATCH_SUFFIX))
        if _abandoned(path) and all([c.remove(attempts=1) for c in cgroups]):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    return removed
