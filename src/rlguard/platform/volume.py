"""A job's disk on its node: a filesystem image of its own, as large as its disk limit.

A limit that is polled (summing the job directory's blocks a few times a second) is no limit: a
single `fallocate` puts a gigabyte on disk in a millisecond, a file unlinked while open holds its
blocks where no walk finds them, and a job's stdout lives outside its directory. So each job gets
an ext4 image file of exactly its disk limit (sparse: the host spends only what the job writes),
loop-mounted under the node's root, holding the job's directory and the platform's logs of its
runs, each bind-mounted where the platform keeps it (jobhome.py). The kernel
then refuses every block past the image's end, whoever asks: writes, fallocate, unlinked files,
the job's stdout. ext4's own metadata (inode tables, journal) comes out of the same size, so a
job can use a little less than its limit (84% of 64 MiB, 93% of 1 GiB, 98% of 50 GiB), never
more; a job's first attach takes 35-70 ms, a later one 20-25 ms (benchmarks/bench_job_volume.py).

Chosen over the alternatives: XFS or ext4 project quotas need the node's filesystem formatted and
mounted for them (an operator's step on every node), and a tmpfs holds the job's files in memory.
An image needs root, `mkfs.ext4` (e2fsprogs) and loop devices; where any is missing, `attach`
raises VolumeUnavailable and the run falls back to the polled watch, which the job's `disk`
field then says (soft). A volume stays mounted after its run, as a job's files always stayed on
its node, until the job is deleted (`jobhome.remove_job_files` unmounts it and removes the
image) or the server's own local Ray head stops (`unmount` of the data directory); a node that
restarts mounts it again for the job's next attempt there. A job holds a loop device and two
mounts, plus one per attempt's log, on each node it ran on.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

VOLUMES = "volumes"
"""Under a node's PLATFORM_FILES directory (jobhome.py): the jobs' images and mount points."""
MOUNT_OPTIONS = "loop,nosuid,nodev,noatime"
MKFS = [
    "mkfs.ext4",
    "-q",
    "-F",
    "-m",
    "0",
    "-E",
    "nodiscard,lazy_itable_init=1,lazy_journal_init=1",
]
"""No blocks reserved for root (the job is never root); inode tables and journal not zeroed up
front, so a new image is made in milliseconds and holds a few MiB of the host's disk, not its
journal's size (273 MB for 50 GiB zeroed; mke2fs's own caveat: a host crash before the journal
was once written through can confuse its replay)."""
JOB, LOGS = "job", "logs"  # the image's two directories
TIMEOUT_S = 60
FULL_BYTES = 2 << 20
EXT4_RESERVE_MAX = 16 << 20
"""A job's disk is full under FULL_BYTES free plus what ext4 holds back for delayed allocation
(2% of the filesystem, at most 4096 clusters): a write can be refused ENOSPC while statvfs
still shows that much available."""


class VolumeUnavailable(RuntimeError):
    """This node cannot give the job a volume (not root, no mkfs.ext4, no loop device)."""


def _run(argv: list[str]) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise VolumeUnavailable(f"{argv[0]}: {e}") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise VolumeUnavailable(f"{' '.join(argv[:2])}: {said}")


def mounted(path: Path) -> bool:
    """Whether something is mounted at `path` (a bind of a file included)."""
    return str(path) in _mount_points()


def _mount_points() -> list[str]:
    """This mount namespace's mount points, from /proc/self/mountinfo (its fifth field, with
    the kernel's octal escapes of spaces and the like undone)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), p) for p in points]


def unmount(path: Path) -> None:
    """Unmount what is mounted at `path` or under it, deepest first; lazily where busy (a
    process the kill missed still holds a file): gone from the tree now, its blocks released
    when the last one ends."""
    root = str(path).rstrip("/")
    below = [p for p in _mount_points() if p == root or p.startswith(root + "/")]
    for point in sorted(set(below), key=len, reverse=True):
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", point], capture_output=True)


@dataclass(frozen=True)
class Usage:
    used_bytes: int
    size_bytes: int
    free_bytes: int  # what the job can still write


@dataclass(frozen=True)
class JobVolume:
    """The volume of one job on this node: `base` is the node's PLATFORM_FILES directory."""

    base: Path
    job_id: str
    size_bytes: int

    @property
    def image(self) -> Path:
        return self.base / VOLUMES / f"{self.job_id}.img"

    @property
    def mountpoint(self) -> Path:
        return self.base / VOLUMES / self.job_id

    def attach(self, job_dir: Path, log: Path) -> None:
        """Make the image if it is new, mount it, and bind its job directory at `job_dir` and a
        file of its logs at `log` (the run's log); VolumeUnavailable (and nothing left mounted)
        where this node cannot."""
        if os.geteuid() != 0:
            raise VolumeUnavailable("only root can mount a job's volume")
        if shutil.which("mkfs.ext4") is None:
            raise VolumeUnavailable("mkfs.ext4 is not installed (apt-get install e2fsprogs)")
        self.mountpoint.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            if not self.image.exists():
                self._make()
            if not mounted(self.mountpoint):
                _run(["mount", "-o", MOUNT_OPTIONS, str(self.image), str(self.mountpoint)])
            (self.mountpoint / JOB).mkdir(mode=0o700, exist_ok=True)
            (self.mountpoint / LOGS).mkdir(mode=0o700, exist_ok=True)
            job_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            for path in (self.mountpoint / LOGS / log.name, log):
                path.touch(mode=0o600)
            for inside, target in (
                (self.mountpoint / JOB, job_dir),
                (self.mountpoint / LOGS / log.name, log),
            ):
                if not mounted(target):
                    _run(["mount", "--bind", str(inside), str(target)])
        except (VolumeUnavailable, OSError) as e:
            self.detach(job_dir, log)
            raise VolumeUnavailable(str(e)) from None

    def _make(self) -> None:
        """A sparse file of the limit's size, formatted; written under a temporary name, so a
        half-made image is never taken for one."""
        partial = self.image.with_suffix(".partial")
        with open(partial, "wb") as f:
            f.truncate(self.size_bytes)
        try:
            _run([*MKFS, str(partial)])
        except VolumeUnavailable:
            partial.unlink(missing_ok=True)
            raise
        partial.rename(self.image)

    def detach(self, job_dir: Path, log: Path) -> None:
        """Unmount the binds and the image (the run is over); the image stays. The log's empty
        placeholder goes too: a reader then finds no copy on this disk and asks the store."""
        for path in (job_dir, log, self.mountpoint):
            unmount(path)
        with contextlib.suppress(OSError):
            if not mounted(log) and log.stat().st_size == 0:
                log.unlink()

    def usage(self) -> Usage:
        found = os.statvfs(self.mountpoint)
        size = found.f_blocks * found.f_frsize
        return Usage(size - found.f_bfree * found.f_frsize, size, found.f_bavail * found.f_frsize)

    def full(self) -> str | None:
        """Why the job's disk counts as full (EXT4_RESERVE_MAX's note); None while it is not."""
        usage = self.usage()
        if usage.free_bytes >= FULL_BYTES + min(usage.size_bytes // 50, EXT4_RESERVE_MAX):
            return None
        return (
            f"the job's disk is full ({usage.used_bytes} of {usage.size_bytes} bytes in use, "
            f"its disk limit of {self.size_bytes} enforced by the kernel)"
        )

    def remove(self) -> None:
        """The job is deleted: its image and mount point go (unmounted first)."""
        unmount(self.mountpoint)
        self.image.unlink(missing_ok=True)
        self.image.with_suffix(".partial").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.mountpoint.rmdir()
