"""Finding the job's files, and tailing a text file by lines.

The watcher runs outside the job's sandbox, so a path is used only if it resolves inside the job
directory: a symlink the job planted towards another job's files or the platform's is skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from rlguard.platform.watchers.points import Warn, WatchWarning


def inside(job_dir: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(job_dir.resolve())
    except (ValueError, OSError):
        return False
    return True


def matches(job_dir: Path, pattern: str) -> list[Path]:
    """Paths under `job_dir` matching the glob `pattern`, sorted, those leaving it dropped."""
    found = job_dir.glob(pattern) if any(c in pattern for c in "*?[") else [job_dir / pattern]
    return sorted(p for p in found if p.exists() and inside(job_dir, p))


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
    start if it comes back.
    """

    HEAD = 256  # bytes kept to recognise a file rewritten in place

    def __init__(self, path: Path, name: str, warn: Warn) -> None:
        self.path, self.name, self.warn = path, name, warn
        self.offset, self.inode, self.partial = 0, None, b""
        self.gone, self.head = False, b""

    def lines(self) -> list[str]:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            if not self.gone:
                self.gone = True
                message = f"{self.name} disappeared"
                self.warn(WatchWarning("file_gone", message, {"file": self.name}))
            return []
        if self.gone or (self.inode is not None and stat.st_ino != self.inode):
            self._restart("came back" if self.gone else "was replaced")
        elif stat.st_size < self.offset:
            self._restart(f"shrank from {self.offset} to {stat.st_size} bytes")
        self.gone, self.inode = False, stat.st_ino
        if stat.st_size == self.offset:
            return []
        with open(self.path, "rb") as f:
            if self.head and f.read(len(self.head)) != self.head:
                self._restart("was rewritten from its start")
            f.seek(self.offset)
            chunk = f.read(stat.st_size - self.offset)
        if self.offset < self.HEAD:
            self.head = (self.head + chunk)[: self.HEAD]
        self.offset += len(chunk)
        *complete, self.partial = (self.partial + chunk).split(b"\n")
        return [line.decode("utf-8", "replace") for line in complete]

    def _restart(self, why: str) -> None:
        if self.offset or self.inode is not None:
            data = {"file": self.name}
            self.warn(WatchWarning("file_replaced", f"{self.name} {why}; reading it again", data))
        self.offset, self.partial, self.head = 0, b"", b""
