"""A run's job directory on the node that runs it: where it is, and what it holds before the job
starts.

Each Ray node keeps its jobs' directories under a root of its own: `RLGUARD_JOBS_ROOT` in the
environment of that node's `ray start` (Ray's worker processes, and so the runs' actors, inherit
it), or, on a node that sets none, the server's `DATA/jobs` path on that node's own disk. Nodes
share nothing there. A new attempt's actor makes the directory, lays out the job's working
directory in it (workdir.py), puts the job's newest complete stored checkpoint back into it
(restore.py), writes a train job's config with `output_dir` in it, and hands it to the job's
uid, all before the job's process starts; a sandboxed job's directory and its runs' logs are on
a volume of its disk limit's size (volume.py). The server never reads a job directory: what
it needs of one comes through the run's actor (a reported checkpoint's name, its upload) and
the artifact store.

Deleting a job reaches every node (`remove_job_files`, a Ray task pinned to each alive node):
the job's directory there, written by the tenant's job and so hostile (planted symlinks), is
removed without following a link, and so are the platform's own files of the job on that node.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlguard.errors import InputError
from rlguard.platform import workdir
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.jobfiles import OUTPUT, write_config
from rlguard.platform.restore import Restored, restore_latest
from rlguard.platform.volume import VOLUMES, JobVolume, VolumeUnavailable, unmount

ROOT_ENV = "RLGUARD_JOBS_ROOT"
PLATFORM_FILES = ".rlguard"
"""Under a node's root, beside its jobs' directories (no job id starts with a dot): the
platform's own files of those jobs, which the jobs never see (jobs run in views of their own)."""
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


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
    log_key: str | None = None  # where the run's log goes in the store when it ends
    working_dir: str | None = None  # the store key of its working directory's zip (workdir.py)

    def directory(self) -> Path:
        """The job's directory on this node."""
        root = os.environ.get(ROOT_ENV) or self.default_root
        if not os.path.isabs(root):
            raise InputError(f"{ROOT_ENV}: must be an absolute path (got {root!r})")
        return Path(root) / self.job_id

    def node_file(self, path: str) -> str:
        """Where this node keeps one of the platform's own files of the job (its run's log, its
        train config), given the server's path for it in the data directory: on a node with a
        root of its own, under that root's PLATFORM_FILES (`ROOT/.rlguard/logs/JOB/...`), so
        the data directory's path need not exist there; elsewhere, at the server's path."""
        return str(node_file(path, self.default_root))


@dataclass(frozen=True)
class Prepared:
    job_dir: Path
    restored: Restored | None
    skipped: list[str]
    volume: JobVolume | None = None  # the job's disk, mounted (volume.py)
    soft_disk: str | None = None  # why this node could not give it one (its limit is polled)
    code: str | None = None  # what of its working directory was laid out, in one line

    def note(self) -> str | None:
        """One line for the run's log and its running event: what the job starts from."""
        r = self.restored
        if r is None:
            return None
        how = "restored from the store" if r.downloaded else "already here (sha256 equal)"
        what = f"{r.source} (step {r.step}, {r.files} files, {r.bytes} bytes)"
        return f"{what} {how} in {r.seconds} s"


def node_root() -> Path | None:
    """This node's own root of jobs' directories (None: it set none, or not an absolute one)."""
    root = os.environ.get(ROOT_ENV)
    return Path(root) if root and os.path.isabs(root) else None


def node_file(path: str, default_root: str) -> Path:
    """`JobHome.node_file`: a path in the server's data directory (the parent of its default
    root of jobs), as this node keeps it. A path outside that directory stays as it is."""
    root, data = node_root(), Path(default_root).parent
    if root is None or root == Path(default_root):
        return Path(path)
    try:
        return root / PLATFORM_FILES / Path(path).relative_to(data)
    except ValueError:
        return Path(path)


def make_private_parents(path: Path, home: JobHome) -> None:
    """Make `path`'s directory, the node's root (if it is under one) made 0700 first, as
    `prepare` makes it: what the platform keeps there is root's alone."""
    root = node_root()
    if root is not None and root != Path(home.default_root) and path.is_relative_to(root):
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)


def volume_base(default_root: str) -> Path:
    """Where this node keeps the jobs' volumes (volume.py): beside their logs and configs."""
    root = node_root()
    if root is None or root == Path(default_root):
        return Path(default_root).parent
    return root / PLATFORM_FILES


def prepare(home: JobHome, disk_bytes: int | None = None, log: Path | None = None) -> Prepared:
    """Make the job's directory on this node ready for its next attempt. With `disk_bytes`, the
    directory and `log` (the run's log) are on a volume of that size (volume.py), where this
    node can give one."""
    job_dir = home.directory()
    job_dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    volume, soft = None, None
    if disk_bytes is not None and log is not None:
        volume = JobVolume(volume_base(home.default_root), home.job_id, disk_bytes)
        try:
            volume.attach(job_dir, log)
        except VolumeUnavailable as e:
            volume, soft = None, str(e)
    (job_dir / OUTPUT).mkdir(parents=True, exist_ok=True)
    code = None
    if home.working_dir is not None and home.store_uri is not None:
        code = lay_out_code(home.store_uri, home.working_dir, job_dir, home.uid)
    restored, skipped = None, []
    if home.restore and home.store_uri:
        restored, skipped = restore_latest(home.store_uri, str(job_dir), home.restore, home.uid)
    if home.config is not None and home.config_path is not None:
        write_config(Path(home.node_file(home.config_path)), home.config, job_dir)
    if home.uid is not None:
        hand_over(job_dir, home.uid)
    return Prepared(job_dir, restored, skipped, volume, soft, code)


def lay_out_code(store_uri: str, key: str, job_dir: Path, uid: int | None) -> str:
    """The job's working directory from the store into its directory, as it was uploaded
    (every attempt: what an earlier one edited is put back); one line saying what and how long."""
    start = time.monotonic()
    with ArtifactStore(store_uri).open_object(key) as archive:
        written = workdir.lay_out(archive, job_dir, uid)
    name = key.rsplit("/", 1)[-1].removesuffix(".zip")
    seconds = time.monotonic() - start
    return f"working directory sha256:{name[:12]} ({written} bytes) in {seconds:.2f} s"


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


def job_paths(job_id: str, default_root: str) -> list[Path]:
    """Every place this node may keep files of the job: its directory under the node's root and
    under the server's default root (a node that set no root then), its runs' logs and its train
    config under the node's root (`node_file`) and at the data directory's paths."""
    if not JOB_ID.fullmatch(job_id):  # one plain path component, never `..` or a path
        raise ValueError(f"not a job id: {job_id!r}")
    default, root = Path(default_root), node_root()
    roots = [default] if root in (None, default) else [root, default]
    bases = [default.parent] + ([root / PLATFORM_FILES] if root not in (None, default) else [])
    platform = [p for b in bases for p in (b / "logs" / job_id, b / "configs" / f"{job_id}.yaml")]
    volumes = [p for b in bases for p in (b / VOLUMES / job_id, b / VOLUMES / f"{job_id}.img")]
    return [*(r / job_id for r in roots), *platform, *volumes]


def remove_job_files(job_id: str, default_root: str) -> dict[str, Any]:
    """Remove the job's files on this node (`job_paths`); what was removed, and any error.
    Idempotent. Run as a Ray task on each node by `RayExecutor.clear_job`.

    The job's directory holds what the tenant's job wrote, planted symlinks included: a link is
    unlinked, never followed. `shutil.rmtree` walks by directory descriptors opened with
    O_NOFOLLOW where the platform has them (`rmtree.avoids_symlink_attacks`, true on Linux), so
    a link swapped in for a directory mid-walk is not followed either; where it is not, this
    refuses rather than walk by path."""
    if not shutil.rmtree.avoids_symlink_attacks:
        raise RuntimeError("shutil.rmtree cannot avoid symlink attacks on this platform")
    removed: list[str] = []
    errors: list[str] = []

    def failed(_function: Any, path: str, exc_info: Any) -> None:
        errors.append(f"{path}: {exc_info[1]}")

    paths = job_paths(job_id, default_root)
    for path in paths:  # a run whose actor died left its volume mounted
        unmount(path)
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(mode):  # lstat's: a link to a directory is not one
            shutil.rmtree(path, onerror=failed)
        else:
            try:
                os.unlink(path)  # a file, or a link: the link itself, never its target
            except FileNotFoundError:
                continue
            except OSError as e:
                errors.append(f"{path}: {e}")
        if not os.path.lexists(path):
            removed.append(str(path))
    return {"removed": removed, "errors": errors}
