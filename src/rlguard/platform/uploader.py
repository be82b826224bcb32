"""A job's checkpoint into the artifact store, from the job's node: what its Ray actor runs.

The actor sits outside the sandbox with more privilege than the job (root, the store's
credentials), so it reads the job's files as a hostile job left them: the reported path must lie
inside the job's directory, and every file is opened relative to its parent's descriptor with
O_NOFOLLOW (os.fwalk walks by descriptors), so no symlink, planted or swapped in mid-walk, leads
it out of that directory. Only regular files are uploaded. Sizes and sha256 are taken from the
bytes actually sent, so the manifest describes what the store holds even if the job keeps writing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator

from rlguard.platform.artifacts import CHUNK, ArtifactStore, FileEntry

OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class BadCheckpointPath(ValueError):
    """The reported path is not a file or directory inside the job's directory."""


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


def _send(source, sink) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    digest, size = hashlib.sha256(), 0
    while chunk := source.read(CHUNK):
        digest.update(chunk)
        sink.write(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def upload_checkpoint(
    store_uri: str, job_dir: str, reported: str, key: str, step: int
) -> dict[str, object]:
    """Upload the checkpoint at `reported` under `key`, then seal it with its manifest; the
    manifest. Raises BadCheckpointPath for a path outside the job, anything else for the store."""
    parts = inside_job(job_dir, reported)
    store = ArtifactStore(store_uri)
    entries: list[FileEntry] = []
    with _opened(job_dir, parts) as top:
        kind = "file" if stat.S_ISREG(os.fstat(top).st_mode) else "directory"
        for name, fd in _regular_files(top, parts[-1]):
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb") as source, store.open_file(key, name) as sink:
                size, sha256 = _send(source, sink)
            entries.append(FileEntry(name, size, sha256))
    if not entries:
        raise BadCheckpointPath(f"path: {reported!r} holds no regular file")
    return store.seal(key, step, "/".join(parts), entries, kind)
