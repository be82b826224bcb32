"""A job's working directory: the zip a tenant ships its code in (`rlguard jobs submit
--working-dir DIR`), packed by the client, checked by the server before it is stored, and laid
out in the job's directory on the node of each attempt.

Ray Jobs' `--working-dir` is the model: the directory is zipped without `.git`, `__pycache__`,
what its `.gitignore` names and the user's excludes, kept once by content hash, and every
attempt starts with those bytes. The pack is deterministic (sorted names, one fixed time stamp),
so the same tree is the same hash and is uploaded once.

The archive is the tenant's, so hostile: only regular files and directories (no links or
devices), names that stay inside (no absolute paths, `..`, empty or NUL parts, no
duplicates), at most MAX_FILES files and the operator's byte cap unpacked, every CRC read
through before it is accepted. Laying it out runs as root in a directory an earlier attempt
wrote, so it never follows a link: each directory is opened O_NOFOLLOW by descriptor and each
file replaced, created O_EXCL, whatever the job left at its name.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pathspec

from rlguard.errors import InputError

MAX_FILES = 50_000
MAX_NAME = 1024
DEFAULT_EXCLUDES = (".git", "__pycache__", "*.pyc", ".venv", ".mypy_cache", ".pytest_cache")
STAMP = (1980, 1, 1, 0, 0, 0)  # zip's earliest: one time for every file, so the hash is the tree's
CHUNK = 1 << 20
EXECUTABLE = 0o755
PLAIN = 0o644


class BadArchive(ValueError):
    """An upload that is not a working directory the platform takes (the reason names it)."""


class ArchiveTooLarge(BadArchive):
    """An upload over the operator's cap, unpacked."""


@dataclass(frozen=True)
class Archive:
    sha256: str
    files: int
    bytes: int  # unpacked

    @property
    def id(self) -> str:
        return f"sha256:{self.sha256}"


def _excludes(directory: Path, extra: tuple[str, ...]) -> pathspec.PathSpec:
    lines = [*DEFAULT_EXCLUDES, *extra]
    ignore = directory / ".gitignore"
    if ignore.is_file():
        lines += ignore.read_text(errors="replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def pack(directory: Path, excludes: tuple[str, ...] = (), max_bytes: int | None = None) -> bytes:
    """The zip of `directory`'s files (InputError naming a link, a special file or the size)."""
    if not directory.is_dir():
        raise InputError(f"option --working-dir: {directory} is not a directory")
    spec = _excludes(directory, excludes)
    names = []
    for root, dirs, files in os.walk(directory):
        rel = Path(root).relative_to(directory)
        dirs[:] = sorted(d for d in dirs if not spec.match_file(f"{(rel / d).as_posix()}/"))
        for d in dirs:
            if (Path(root) / d).is_symlink():
                raise InputError(f"option --working-dir: {rel / d} is a link (ship its target)")
        names += [rel / f for f in files if not spec.match_file((rel / f).as_posix())]
    buffer, total = io.BytesIO(), 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(names, key=lambda p: p.as_posix()):
            path = directory / name
            mode = path.lstat().st_mode
            if not stat.S_ISREG(mode):
                what = "a link" if stat.S_ISLNK(mode) else "not a regular file"
                raise InputError(f"option --working-dir: {name} is {what}")
            total += path.stat().st_size
            if max_bytes is not None and total > max_bytes:
                raise InputError(
                    f"option --working-dir: {directory} holds over {max_bytes} bytes "
                    "(exclude what the job does not need: --exclude PATTERN)"
                )
            info = zipfile.ZipInfo(name.as_posix(), STAMP)
            info.external_attr = (stat.S_IFREG | _mode(mode)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as src, archive.open(info, "w") as dst:
                shutil.copyfileobj(src, dst, CHUNK)
    return buffer.getvalue()


def _mode(st_mode: int) -> int:
    return EXECUTABLE if st_mode & 0o100 else PLAIN


def _checked_name(name: str) -> str:
    parts = name.split("/")
    bad = (
        not name
        or len(name) > MAX_NAME
        or name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or any(p in ("", ".", "..") for p in parts)
    )
    if bad:
        raise BadArchive(f"the name {name[:200]!r} is not a relative path inside the directory")
    return name


def check(source: BinaryIO, max_bytes: int) -> Archive:
    """Read an uploaded archive through (seekable `source`); its hash, files and unpacked size,
    or BadArchive saying what is wrong with it."""
    digest = hashlib.sha256()
    source.seek(0)
    while chunk := source.read(CHUNK):
        digest.update(chunk)
    source.seek(0)
    try:
        with zipfile.ZipFile(source) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_FILES:
                raise BadArchive(f"{len(infos)} files, over the limit of {MAX_FILES}")
            files: set[str] = set()
            dirs: set[str] = set()
            total = 0
            for info in infos:
                name = _checked_name(info.filename.removesuffix("/"))
                kind = stat.S_IFMT(info.external_attr >> 16)
                if info.is_dir() and kind in (0, stat.S_IFDIR):
                    if name in files:
                        raise BadArchive(f"{name} is in the archive twice")
                    dirs.add(name)
                    continue
                if kind not in (0, stat.S_IFREG):
                    what = "a link" if kind == stat.S_IFLNK else "not a regular file"
                    raise BadArchive(f"{name} is {what} (a working directory holds only files)")
                if name in files or name in dirs or any(p in files for p in _parents(name)):
                    raise BadArchive(f"{name} is in the archive twice")
                files.add(name)
                total += info.file_size
                if total > max_bytes:
                    raise ArchiveTooLarge(f"over {max_bytes} bytes unpacked (the operator's cap)")
            for info in infos:  # every CRC, and no member longer than it says
                with archive.open(info) as member:
                    while member.read(CHUNK):
                        pass
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as e:
        raise BadArchive(f"not a zip archive the platform can read: {e}") from None
    return Archive(digest.hexdigest(), len(infos), total)


def _parents(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def lay_out(source: BinaryIO, job_dir: Path, uid: int | None) -> int:
    """Write a checked archive's files into `job_dir`, replacing whatever is at their names
    (an earlier attempt's edits, a planted link), owned by `uid`; the bytes written."""
    written = 0
    root = os.open(job_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                parts = _checked_name(info.filename.removesuffix("/")).split("/")
                directory = info.is_dir()
                parent = _open_dirs(root, parts if directory else parts[:-1], uid)
                try:
                    if not directory:
                        written += _replace(archive, info, parent, parts[-1], uid)
                finally:
                    if parent != root:
                        os.close(parent)
    finally:
        os.close(root)
    return written


def _open_dirs(root: int, parts: list[str], uid: int | None) -> int:
    """A descriptor of the directory `parts` under `root`, made where missing; anything else at
    one of those names (a file, a link) is removed first."""
    fd = root
    for part in parts:
        try:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            child = _make_dir(fd, part, uid)
        except OSError as e:
            if e.errno not in (errno.ENOTDIR, errno.ELOOP):  # a file, or a link
                raise
            os.unlink(part, dir_fd=fd)
            child = _make_dir(fd, part, uid)
        if fd != root:
            os.close(fd)
        fd = child
    return fd


def _make_dir(parent: int, name: str, uid: int | None) -> int:
    os.mkdir(name, 0o755, dir_fd=parent)
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    if uid is not None:
        os.fchown(fd, uid, uid)
    return fd


def _replace(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, parent: int, name: str, uid: int | None
) -> int:
    try:
        os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(name, dir_fd=parent)
    mode = _mode(info.external_attr >> 16)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, mode, dir_fd=parent)
    with os.fdopen(fd, "wb") as out, archive.open(info) as member:
        shutil.copyfileobj(member, out, CHUNK)
        if uid is not None:
            os.fchown(out.fileno(), uid, uid)
        os.fchmod(out.fileno(), mode)
        return out.tell()
