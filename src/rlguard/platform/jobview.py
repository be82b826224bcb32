"""The server's side of the job sandbox: whose job sees what, and whether this host can do it.

`JobViews` turns the operator's choices (`--mount`, the default limits, `--single-tenant`) into
each run's `JobSandbox` (sandbox.py) and vets a train config's paths against its tenant's view
(the run's actor hands the job's directory to its uid: jobhome.py). `host_problem()` is the
start-up check `rlguard serve` refuses to start on, unless the operator asked for a
single-tenant platform.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import rlguard
from rlguard.platform import mounts as mounts_
from rlguard.platform import seccomp as seccomp_
from rlguard.platform.sandbox import UID_BASE, JobSandbox, Limits, bwrap_argv

SANDBOXED = "bwrap"
SINGLE_TENANT = "none (single-tenant)"
MiB = 1 << 20


@dataclass(frozen=True)
class Defaults:
    """A job's limits where its request does not set them, and whether its sandbox applies the
    seccomp filter (seccomp.py; `rlguard serve --no-job-seccomp` opts out)."""

    memory_mb: int = 16384
    pids: int = 4096
    disk_mb: int = 51200
    tmp_mb: int = 1024
    seccomp: bool = True


def code_roots() -> list[str]:
    """What a job needs to run the platform's own code: this package's source root, the
    virtualenv, the interpreter's installation, site-packages and PYTHONPATH (read-only)."""
    found = [Path(rlguard.__file__).resolve().parent.parent, Path(sys.prefix).resolve()]
    found += [Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parent.parent]
    found += [Path(p).resolve() for p in site.getsitepackages()]
    found += [Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    roots: list[str] = []
    for path in found:
        text = str(path)
        if path.is_dir() and not mounts_.inside(text, "/usr") and text not in roots:
            roots.append(text)
    return roots


def host_problem(seccomp: bool = True) -> str | None:
    """Why this host cannot sandbox jobs (None: it can: a trial sandbox ran, under the seccomp
    filter unless `seccomp` is False)."""
    if os.geteuid() != 0:
        return "the platform must run as root to give each job its own uid"
    for tool in ("bwrap", "setpriv"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install bubblewrap util-linux)"
    try:
        fd = seccomp_.program_fd() if seccomp else None
    except seccomp_.SeccompUnavailable as e:
        return f"{e} (or --no-job-seccomp: jobs without the filter)"
    try:
        return _trial(fd)
    finally:
        if fd is not None:
            os.close(fd)


def _trial(seccomp_fd: int | None) -> str | None:
    """Run `touch` in a sandbox of a scratch job directory."""
    with tempfile.TemporaryDirectory(prefix="rlguard-trial-") as tmp:
        job, data, socket = Path(tmp, "data", "job"), Path(tmp, "data"), Path(tmp, "sock")
        job.mkdir(parents=True)
        socket.touch()
        os.chown(job, UID_BASE, UID_BASE)
        limits = Limits(64 * MiB, 64, 0, 64 * MiB, 16 * MiB)
        trial = JobSandbox(UID_BASE, str(job), str(data), (), limits, "http://127.0.0.1:1")
        touch = ["/bin/sh", "-c", "touch ok"]
        argv = bwrap_argv(trial, touch, str(job), str(socket), seccomp_fd=seccomp_fd)
        fds = () if seccomp_fd is None else (seccomp_fd,)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, pass_fds=fds)
        if done.returncode != 0 or not (job / "ok").is_file():
            error = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return f"a trial sandbox failed (exit {done.returncode}): {error}"
    return None


class JobViews:
    def __init__(
        self,
        sandboxed: bool,
        data_dir: Path,
        mounts: list[mounts_.Mount],
        url: str,
        defaults: Defaults,
    ) -> None:
        self.sandboxed, self.data_dir, self.mounts = sandboxed, data_dir.resolve(), mounts
        self.url, self.defaults = url, defaults
        self.code = code_roots()
        self.label = SANDBOXED if sandboxed else SINGLE_TENANT

    def roots(self, tenant: str) -> list[str]:
        return mounts_.roots_for(self.mounts, tenant)

    def vet(self, tenant: str, job_dir: Path):  # type: ignore[no-untyped-def]
        """The check a tenant's train config's paths go through at submission."""
        roots = self.roots(tenant)
        return lambda paths: mounts_.check_config_paths(paths, job_dir, roots)

    def sandbox(
        self,
        uid: int,
        tenant: str,
        job_dir: Path,
        cpus: float,
        memory_mb: int | None,
        files: tuple[str, ...] = (),
    ) -> JobSandbox | None:
        """One run's sandbox (None: single-tenant); `files`: the platform's files of the job it
        reads (its train config), bound read-only."""
        if not self.sandboxed:
            return None
        d = self.defaults
        limits = Limits(
            memory_bytes=(memory_mb or d.memory_mb) * MiB,
            pids=d.pids,
            cpus=cpus,
            disk_bytes=d.disk_mb * MiB,
            tmp_bytes=min(d.tmp_mb, memory_mb or d.memory_mb) * MiB,
        )
        read_only = (*self.code, *self.roots(tenant), *files)
        data = str(self.data_dir)
        return JobSandbox(uid, str(job_dir), data, read_only, limits, self.url, seccomp=d.seccomp)
