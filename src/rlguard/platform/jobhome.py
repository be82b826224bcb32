"""A run's job directory on the node that runs it: where it is, and what it holds before the job
starts.

Each Ray node keeps its jobs' directories under a root of its own: `RLGUARD_JOBS_ROOT` in the
environment of that node's `ray start` (Ray's worker processes, and so the runs' actors, inherit
it), or, on a node that sets none, the server's `DATA/jobs` path on that node's own disk. Nodes
share nothing there. A new attempt's actor makes the directory, puts the job's newest complete
stored checkpoint back into it (restore.py), writes a train job's config with `output_dir` in it,
and hands it to the job's uid, all before the job's process starts. The server never reads a
job directory: what it needs of one comes through the run's actor (a reported checkpoint's name,
its upload) and the artifact store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlguard.errors import InputError
from rlguard.platform import jobspec
from rlguard.platform.restore import Restored, restore_latest

ROOT_ENV = "RLGUARD_JOBS_ROOT"


@dataclass(frozen=True)
class JobHome:
    """What the server tells a run's actor about the job's directory."""

    job_id: str
    default_root: str  # the server's DATA/jobs: where a node that sets no root keeps them
    uid: int | None = None  # sandboxed: the job's uid, which owns its directory
    config: dict[str, Any] | None = None  # a train job's config, written on the node
    config_path: str | None = None  # where (the platform's file, outside the job directory)
    store_uri: str | None = None
    restore: tuple[str, ...] = field(default=())  # its stored checkpoints' keys, newest first

    def directory(self) -> Path:
        """The job's directory on this node."""
        root = os.environ.get(ROOT_ENV) or self.default_root
        if not os.path.isabs(root):
            raise InputError(f"{ROOT_ENV}: must be an absolute path (got {root!r})")
        return Path(root) / self.job_id


@dataclass(frozen=True)
class Prepared:
    job_dir: Path
    restored: Restored | None
    skipped: list[str]

    def note(self) -> str | None:
        """One line for the run's log and its running event: what the job starts from."""
        r = self.restored
        if r is None:
            return None
        how = "restored from the store" if r.downloaded else "already here (sha256 equal)"
        what = f"{r.source} (step {r.step}, {r.files} files, {r.bytes} bytes)"
        return f"{what} {how} in {r.seconds} s"


def prepare(home: JobHome) -> Prepared:
    """Make the job's directory on this node ready for its next attempt."""
    job_dir = home.directory()
    job_dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    (job_dir / jobspec.OUTPUT).mkdir(parents=True, exist_ok=True)
    restored, skipped = None, []
    if home.restore and home.store_uri:
        restored, skipped = restore_latest(home.store_uri, str(job_dir), home.restore, home.uid)
    if home.config is not None and home.config_path is not None:
        jobspec.write_config(Path(home.config_path), home.config, job_dir)
    if home.uid is not None:
        hand_over(job_dir, home.uid)
    return Prepared(job_dir, restored, skipped)


def hand_over(job_dir: Path, uid: int) -> None:
    """The job directory belongs to the job's uid (all of it, the first time). The platform
    keeps its own files of the job (logs, the config) outside it: root never writes where a
    job could have planted a symlink."""
    if job_dir.stat().st_uid != uid:
        for directory, dirs, files in os.walk(job_dir):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(directory, name), uid, uid)
        os.chown(job_dir, uid, uid)
    job_dir.chmod(0o700)
