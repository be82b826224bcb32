"""Finding the job's files, opening them safely, and tailing a text file by lines.

The watcher runs outside the job's sandbox, with more privilege than the job, so a path is used
only if it resolves inside the job directory: a symlink the job planted towards another job's
files or the platform's is skipped. Checking a path and then opening it leaves a race (the job
swaps a file for a link in between), so every read goes through `open_inside`, which checks
the file it actually opened.
"""

from __future__ import annotations

import os
import stat as stat_mode
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from rlguard.platform.watchers.points import Warn, WatchWarning


def inside(job_dir: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(job_dir.resolve())
    except (ValueError, OSError):
        return False
    return True


def open_inside(job_dir: Path, path: Path) -> BinaryIO | None:
    """`path` opened for reading if what was opened is a regular file inside `job_dir`; None
    otherwise. The last component may not be a link (O_NOFOLLOW); a linked directory on the way
    is caught after the open, from the opened file's own name (/proc/self/fd), so no swap between
    a check and the open can make the watcher read a file outside. O_NONBLOCK: a FIFO planted
    under a watched name cannot hang the watcher (and is refused as not a regular file)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if stat_mode.S_ISREG(os.fstat(fd).st_mode) and opened.is_relative_to(job_dir.resolve()):
            return os.fdopen(fd, "rb")
    except OSError:
        pass
    os.close(fd)
    return None


WHOLE_FILE_MAX = 16 << 20
"""The largest file read whole (a trainer_state.json, a JSON with the total steps): parsed, such
a file takes many times its size in memory, in a watch process limited to WATCH_LIMITS."""


def read_inside(job_dir: Path, path: Path, limit: int = WHOLE_FILE_MAX) -> bytes | None:
    """A whole file's bytes through `open_inside` (None if refused or over `limit` bytes; one
    over it is not read at all)."""
    f = open_inside(job_dir, path)
    if f is None:
        return None
    with f:
        if os.fstat(f.fileno()).st_size > limit:
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def matches(job_dir: Path, pattern: str) -> list[Path]:
    """Paths under `job_dir` matching the glob `pattern`, sorted, those leaving it dropped."""
    found = job_dir.glob(pattern) if any(c in pattern for c in "*?[") else [job_dir / pattern]
    return sorted(p for p in found if p.exists() and inside(job_dir, p))


def near(job_dir: Path, pattern: str) -> str | None:
    """A path like `pattern` that matches where it does not: a directory shallower, or one
    deeper (a framework's output directory elsewhere than the spec says). Looked for once, when
    a watch warns that it has read nothing."""
    parts = PurePosixPath(pattern).parts
    for k in range(1, len(parts)):
        shallower = str(PurePosixPath(*parts[k:]))
        if matches(job_dir, shallower):
            return shallower
    for path in matches(job_dir, "*/" + pattern):
        return f"{path.relative_to(job_dir).parts[0]}/{pattern}"
    return None


def shown(job_dir: Path, path: Path) -> str:
    try:
        return str(path.relative_to(job_dir))
    except ValueError:
        return str(path)


class LineTail:
    """New complete lines of a growing text file, from a kept offset (a partial last line waits).

    A file that shrinks, is replaced (another inode) or is rewritten in place (its first bytes
    changed: verl's FileLogger reopens its file with "wb" on a restart, and the new attempt may
    have written more than the old one by the next poll) is read again from its start, with a
    `file_replaced` warning; one that disappears gives `file_gone` once, and is read from its
    start if it comes back; one replaced by a link gives `file_refused` once and is not read.
    """

    HEAD = 256  # bytes kept to recognise a file rewritten in place
    MAX_READ = 8 << 20  # per poll: a job writing gigabytes at once is read over several polls
    MAX_LINE = 1 << 20  # a line without an end in sight is dropped, not held in memory

    def __init__(self, job_dir: Path, path: Path, name: str, warn: Warn) -> None:
        self.job_dir, self.path, self.name, self.warn = job_dir, path, name, warn
        self.offset, self.inode, self.partial = 0, None, b""
        self.gone, self.refused, self.head = False, False, b""

    def lines(self) -> list[str]:
        f = open_inside(self.job_dir, self.path)
        if f is None:
            self._missing()
            return []
        with f:
            stat = os.fstat(f.fileno())
            if self.gone or (self.inode is not None and stat.st_ino != self.inode):
                self._restart("came back" if self.gone else "was replaced")
            elif stat.st_size < self.offset:
                self._restart(f"shrank from {self.offset} to {stat.st_size} bytes")
            self.gone, self.refused, self.inode = False, False, stat.st_ino
            if stat.st_size == self.offset:
                return []
            if self.head and f.read(len(self.head)) != self.head:
                self._restart("was rewritten from its start")
            f.seek(self.offset)
            chunk = f.read(min(stat.st_size - self.offset, self.MAX_READ))
        if self.offset < self.HEAD:
            self.head = (self.head + chunk)[: self.HEAD]
        self.offset += len(chunk)
        *complete, self.partial = (self.partial + chunk).split(b"\n")
        if len(self.partial) > self.MAX_LINE:
            message = f"{self.name}: a line longer than {self.MAX_LINE} bytes; skipped"
            self.warn(WatchWarning("bad_line", message, {"file": self.name}))
            self.partial = b""  # the rest of that line is read as a (bad) line of its own
        return [line.decode("utf-8", "replace") for line in complete]

    def _missing(self) -> None:
        """Warn once that the file is gone, or that what is there now is not read."""
        if not os.path.lexists(self.path):
            if not self.gone:
                self.gone = True
                message = f"{self.name} disappeared"
                self.warn(WatchWarning("file_gone", message, {"file": self.name}))
        elif not self.refused:
            self.refused = True
            message = (
                f"{self.name} is a link, or not a regular file inside the job directory; not read"
            )
            self.warn(WatchWarning("file_refused", message, {"file": self.name}))

    def _restart(self, why: str) -> None:
        if self.offset or self.inode is not None:
            data = {"file": self.name}
            self.warn(WatchWarning("file_replaced", f"{self.name} {why}; reading it again", data))
        self.offset, self.partial, self.head = 0, b"", b""
