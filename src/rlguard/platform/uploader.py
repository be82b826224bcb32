"""A job's checkpoint into the artifact store, from the job's node: what its Ray actor runs.

The actor sits outside the sandbox with more privilege than the job (root, the store's
credentials), so it reads the job's files as a hostile job left them: the reported path must lie
inside the job's directory, and every file is opened relative to its parent's descriptor with
O_NOFOLLOW (os.fwalk walks by descriptors), so no symlink, planted or swapped in mid-walk, leads
it out of that directory. Only regular files are uploaded. Sizes and sha256 are taken from the
bytes actually sent, so the manifest describes what the store holds even if the job keeps writing.

The operator's limits (`rlguard serve --checkpoint-max-files/-mb`, `--job-max-upload-files/-mb`)
are checked before a byte is sent, by the same walk (lstat, no link followed): a checkpoint over
any of them raises CheckpointOverLimit and nothing goes to the store. One that grows past them
while it is sent (the job keeps writing) is cut off and its key removed: never sealed, never
recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from rlguard.platform.artifacts import CHUNK, ArtifactStore, FileEntry

MiB = 1 << 20

OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class BadCheckpointPath(ValueError):
    """The reported path is not a file or directory inside the job's directory."""


@dataclass(frozen=True)
class UploadLimits:
    """The operator's limits on what jobs have uploaded to the shared store (`rlguard serve`).
    Per checkpoint, a job's whole directory may be one (`--job-disk-mb`, 50 GiB by default);
    per job, every checkpoint it had uploaded, pruned ones included, over all its attempts."""

    checkpoint_files: int = 10_000
    checkpoint_mb: int = 51_200
    job_files: int = 100_000
    job_mb: int = 1_048_576  # 1 TiB


@dataclass(frozen=True)
class Allowance:
    """What one upload may hold: the limits, less what the job has had uploaded so far."""

    limits: UploadLimits = UploadLimits()
    used_files: int = 0
    used_bytes: int = 0

    def check(self, reported: str, files: int, size: int, growing: bool = False) -> None:
        """CheckpointOverLimit for the first limit `files` and `size` (bytes) pass."""
        lim = self.limits
        for option, limit, value, total, unit in (
            ("--checkpoint-max-files", lim.checkpoint_files, files, False, "files"),
            ("--checkpoint-max-mb", lim.checkpoint_mb, size, False, "bytes"),
            ("--job-max-upload-files", lim.job_files, self.used_files + files, True, "files"),
            ("--job-max-upload-mb", lim.job_mb, self.used_bytes + size, True, "bytes"),
        ):
            allowed = limit * MiB if unit == "bytes" else limit
            if value > allowed:
                raise CheckpointOverLimit(reported, option, limit, value, unit, total, growing)


class CheckpointOverLimit(ValueError):
    """A reported checkpoint over one of the operator's upload limits. Its args are plain
    values (Ray sends it back to the server pickled)."""

    def __init__(
        self,
        reported: str,
        option: str,
        limit: int,
        value: int,
        unit: str,
        per_job: bool,
        growing: bool = False,
    ) -> None:
        super().__init__(reported, option, limit, value, unit, per_job, growing)
        self.reported, self.option, self.limit, self.value = reported, option, limit, value
        self.unit, self.per_job, self.growing = unit, per_job, growing

    @property
    def allowed(self) -> int:
        return self.limit * MiB if self.unit == "bytes" else self.limit

    def __str__(self) -> str:
        what = "grew to more than" if self.growing else "holds"
        if self.per_job:
            what = "would bring this job's uploads to"
        scope = "per job" if self.per_job else "per checkpoint"
        return (
            f"path: {self.reported!r} {what} {self.value} {self.unit}, over the limit of "
            f"{self.allowed} {self.unit} {scope} ({self.option} {self.limit})"
        )


def inside_job(job_dir: str, reported: str) -> list[str]:
    """The reported path's components below the job directory (an absolute path as the job
    sees it, which is the same path: its directory is bound at its own path; or a relative one)."""
    path = os.path.normpath(os.path.join(job_dir, reported))
    relative = os.path.relpath(path, os.path.normpath(job_dir))
    if relative == "." or relative.startswith(".."):
        raise BadCheckpointPath(f"path: must be inside the job's directory (got {reported!r})")
    return relative.split(os.sep)


@contextlib.contextmanager
def _opened(job_dir: str, parts: list[str]) -> Iterator[int]:
    """A descriptor of the reported path, reached one component at a time without following a
    symlink."""
    fds = [os.open(job_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    try:
        for part in parts:
            try:
                fds.append(os.open(part, OPEN_FLAGS, dir_fd=fds[-1]))
            except OSError as e:
                raise BadCheckpointPath(
                    f"path: cannot open {'/'.join(parts)!r} in the job's directory without "
                    f"following a link ({e.strerror})"
                ) from None
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)


def _regular_files(top: int, single: str) -> Iterator[tuple[str, int]]:
    """(name relative to the checkpoint, an open descriptor) of each regular file under `top`
    (a directory), or of `top` itself (a file, named `single`)."""
    if stat.S_ISREG(os.fstat(top).st_mode):
        yield single, os.dup(top)
        return
    if not stat.S_ISDIR(os.fstat(top).st_mode):
        raise BadCheckpointPath(f"path: {single!r} is neither a file nor a directory")
    for directory, _, files, dir_fd in os.fwalk(".", dir_fd=top):
        for name in sorted(files):
            try:
                fd = os.open(name, OPEN_FLAGS, dir_fd=dir_fd)
            except OSError:  # a symlink (ELOOP) or gone meanwhile: not part of the checkpoint
                continue
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                continue
            yield os.path.normpath(os.path.join(directory, name)).replace(os.sep, "/"), fd


def measure(top: int, reported: str, allowance: Allowance) -> tuple[int, int]:
    """(regular files, bytes) under `top` (a directory's descriptor, or a file's), by lstat
    through directory descriptors, no link followed; CheckpointOverLimit as soon as the count
    passes a limit (the walk stops there)."""
    st = os.fstat(top)
    if stat.S_ISREG(st.st_mode):
        allowance.check(reported, 1, st.st_size)
        return 1, st.st_size
    files = size = 0
    for _, _, names, dir_fd in os.fwalk(".", dir_fd=top):
        for name in names:
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:  # gone meanwhile
                continue
            if stat.S_ISREG(st.st_mode):
                files, size = files + 1, size + st.st_size
        allowance.check(reported, files, size)
    return files, size


def _send(source, sink, budget: int) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """Copy `source` to `sink`; (bytes, sha256). Stops once past `budget` bytes (returning
    more than it: the caller refuses the checkpoint)."""
    digest, size = hashlib.sha256(), 0
    while size <= budget and (chunk := source.read(CHUNK)):
        digest.update(chunk)
        sink.write(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def upload_checkpoint(
    store_uri: str,
    job_dir: str,
    reported: str,
    key: str,
    step: int,
    allowance: Allowance | None = None,
) -> dict[str, object]:
    """Upload the checkpoint at `reported` under `key`, then seal it with its manifest; the
    manifest. Raises BadCheckpointPath for a path outside the job, CheckpointOverLimit for one
    over the operator's limits (nothing left in the store), anything else for the store."""
    allowance = allowance or Allowance()
    parts = inside_job(job_dir, reported)
    store = ArtifactStore(store_uri)
    entries: list[FileEntry] = []
    with _opened(job_dir, parts) as top:
        kind = "file" if stat.S_ISREG(os.fstat(top).st_mode) else "directory"
        measure(top, reported, allowance)  # before a byte is sent
        sent = 0
        try:
            for name, fd in _regular_files(top, parts[-1]):
                allowance.check(reported, len(entries) + 1, sent, growing=True)
                budget = _bytes_left(allowance) - sent
                os.set_blocking(fd, True)
                with os.fdopen(fd, "rb") as source, store.open_file(key, name) as sink:
                    size, sha256 = _send(source, sink, budget)
                sent += size
                allowance.check(reported, len(entries) + 1, sent, growing=True)
                entries.append(FileEntry(name, size, sha256))
        except CheckpointOverLimit:  # it grew while it was sent: nothing of it stays
            store.remove(key)
            raise
    if not entries:
        raise BadCheckpointPath(f"path: {reported!r} holds no regular file")
    return store.seal(key, step, "/".join(parts), entries, kind)


def _bytes_left(allowance: Allowance) -> int:
    lim = allowance.limits
    return min(lim.checkpoint_mb * MiB, lim.job_mb * MiB - allowance.used_bytes)
