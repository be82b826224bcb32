"""A new attempt's latest checkpoint, from the artifact store back into its job directory.

Run by the run's Ray actor on the node that runs the job, as root and outside the sandbox,
before the job's process starts (jobhome.py). The server names the candidates, newest first: the
job's recorded checkpoints still in the store. The first one whose manifest is there and whose
every file arrives with the manifest's size and sha256 is put back at the path the job reported
it from (the manifest's `source`), so the job's own resume (`rlguard train`'s newest
`checkpoints/step-N`, a command job's files) finds it where it left it, on any node. One without
a manifest (an upload that never finished) or with a file that does not match is never put in
place: the one before it is tried. If the job directory already holds that checkpoint, every file
equal by sha256 (the same node again), nothing is downloaded.

Every step goes through directory descriptors and never follows a symlink, as the uploader's:
the directory may hold links a job planted on an earlier attempt, and root must not be led out of
it. Files are downloaded aside (a fresh directory beside the target) and renamed into place only
once all of them match, so a failed restore leaves the directory as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rlguard.platform.artifacts import CHUNK, ArtifactStore, FileEntry, StoreUnavailable

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class NotRestorable(Exception):
    """This stored checkpoint cannot be put back (why, in one line); an older one may."""


@dataclass(frozen=True)
class Restored:
    key: str
    source: str  # where it lies in the job directory, relative to it
    step: int
    files: int
    bytes: int
    downloaded: bool  # False: the job directory already held it, byte for byte
    seconds: float  # how long finding, checking and putting it back took


def restore_latest(
    store_uri: str, job_dir: str, keys: Sequence[str], owner: int | None = None
) -> tuple[Restored | None, list[str]]:
    """Put the newest restorable of `keys` (newest first) into `job_dir`, its files owned by
    `owner` (the job's uid; None: left as they are made); what was put back, and why each newer
    key was skipped."""
    store = ArtifactStore(store_uri)
    skipped = []
    for key in keys:
        try:
            return restore(store, job_dir, key, owner), skipped
        except NotRestorable as e:
            skipped.append(f"{key}: {e}")
    return None, skipped


def restore(store: ArtifactStore, job_dir: str, key: str, owner: int | None) -> Restored:
    """Put one stored checkpoint back into `job_dir` (NotRestorable: it is left as it was)."""
    began = time.monotonic()
    try:
        manifest = store.manifest(key)
    except StoreUnavailable as e:
        raise NotRestorable(f"the store did not answer: {e}") from None
    if manifest is None:
        raise NotRestorable("no manifest (its upload never finished)")
    parts = _relative(manifest.get("source", ""), "source")
    files = [FileEntry(**entry) for entry in manifest["files"]]
    for entry in files:
        _relative(entry.name, "file name")
    single = _is_file(manifest, parts, files)
    top = os.open(job_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with _below(top, parts[:-1], owner) as parent:
            downloaded = not _holds(parent, parts[-1], files, single)
            if downloaded:
                _put_back(store, key, files, parent, parts[-1], single, owner)
    finally:
        os.close(top)
    source, size = "/".join(parts), manifest["bytes"]
    seconds = round(time.monotonic() - began, 3)
    return Restored(key, source, manifest["step"], len(files), size, downloaded, seconds)


def _put_back(
    store: ArtifactStore,
    key: str,
    files: list[FileEntry],
    parent: int,
    name: str,
    single: bool,
    owner: int | None,
) -> None:
    """Download every file into a fresh directory beside `name`, then rename it into place."""
    staging = f".rlguard-restore-{secrets.token_hex(4)}"
    os.mkdir(staging, 0o700, dir_fd=parent)
    try:
        with _below(parent, [staging], None) as aside:
            for entry in files:
                _download(store, key, entry, aside, owner)
            if owner is not None:
                os.fchown(aside, owner, owner)
        _replace(parent, f"{staging}/{files[0].name}" if single else staging, name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(staging, dir_fd=parent)


def _relative(name: str, what: str) -> list[str]:
    """The components of a '/'-separated path that stays inside where it is put."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise NotRestorable(f"its manifest's {what} {name!r} is not a path inside the job")
    return parts


def _is_file(manifest: dict, parts: list[str], files: list[FileEntry]) -> bool:
    """Whether the job reported a file (manifests before `kind`: one file named as the source)."""
    kind = manifest.get("kind")
    if kind is not None:
        return kind == "file"
    return len(files) == 1 and files[0].name == parts[-1]


@contextlib.contextmanager
def _below(top: int, parts: list[str], owner: int | None) -> Iterator[int]:
    """A descriptor of top/parts, each directory made (owned by `owner`) where missing and
    reached without following a link: anything else where a directory should be is
    NotRestorable."""
    fd = os.dup(top)
    try:
        for part in parts:
            try:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
                    if owner is not None:
                        os.chown(part, owner, owner, dir_fd=fd, follow_symlinks=False)
                below = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                why = f"{part!r} is not a directory it can use ({e.strerror})"
                raise NotRestorable(why) from None
            os.close(fd)
            fd = below
        yield fd
    finally:
        os.close(fd)


def _sha256(fd: int) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    while chunk := os.read(fd, CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def _holds(parent: int, name: str, files: list[FileEntry], single: bool) -> bool:
    """Whether `name` under `parent` already holds every file of the checkpoint, equal by size
    and sha256 (read without following a link)."""
    try:
        top = os.open(name, READ_FLAGS if single else DIR_FLAGS, dir_fd=parent)
    except OSError:
        return False
    try:
        for entry in files:
            fd = os.dup(top) if single else _open_below(top, entry.name)
            if fd is None:
                return False
            try:
                os.set_blocking(fd, True)
                if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size != entry.size:
                    return False
                if _sha256(fd) != (entry.size, entry.sha256):
                    return False
            finally:
                os.close(fd)
        return True
    finally:
        os.close(top)


def _open_below(top: int, name: str) -> int | None:
    """A descriptor of the file `name` ('/'-separated) under `top`, or None."""
    *dirs, leaf = name.split("/")
    fds = [os.dup(top)]
    try:
        for part in dirs:
            fds.append(os.open(part, DIR_FLAGS, dir_fd=fds[-1]))
        return os.open(leaf, READ_FLAGS, dir_fd=fds[-1])
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _download(store: ArtifactStore, key: str, entry: FileEntry, aside: int, owner: int | None):  # type: ignore[no-untyped-def]
    """One file into the staging directory, checked against its manifest entry as it arrives."""
    *dirs, leaf = entry.name.split("/")
    with _below(aside, dirs, owner) as directory:
        fd = os.open(leaf, NEW_FLAGS, 0o644, dir_fd=directory)
        digest, size = hashlib.sha256(), 0
        try:
            with open(fd, "wb", closefd=False) as sink:
                for chunk in store.read(key, entry.name):
                    digest.update(chunk)
                    sink.write(chunk)
                    size += len(chunk)
            if owner is not None:
                os.fchown(fd, owner, owner)
        except FileNotFoundError:
            why = f"{entry.name}: listed in its manifest, absent in the store"
            raise NotRestorable(why) from None
        except OSError as e:
            raise NotRestorable(f"{entry.name}: could not be read or written ({e})") from None
        finally:
            os.close(fd)
    if (size, digest.hexdigest()) != (entry.size, entry.sha256):
        raise NotRestorable(
            f"{entry.name}: {size} bytes with sha256 {digest.hexdigest()[:12]}..., its manifest "
            f"says {entry.size} bytes with {entry.sha256[:12]}..."
        )


def _replace(parent: int, staged: str, name: str) -> None:
    """Rename `staged` to `name` under `parent`; whatever held that name (an older or partial
    copy, or a planted link: renamed, never followed) is moved aside first, then removed."""
    aside = f".rlguard-replaced-{secrets.token_hex(4)}"
    try:
        os.rename(name, aside, src_dir_fd=parent, dst_dir_fd=parent)
    except FileNotFoundError:
        aside = ""
    os.rename(staged, name, src_dir_fd=parent, dst_dir_fd=parent)
    if not aside:
        return
    if stat.S_ISDIR(os.stat(aside, dir_fd=parent, follow_symlinks=False).st_mode):
        shutil.rmtree(aside, dir_fd=parent)
    else:
        os.unlink(aside, dir_fd=parent)
