"""Atomic file writes: a reader (or a crash) never sees a half-written output."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; move it into place only if the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    # mkstemp makes it 0600; the file in place has the mode a plain write gives (umask 022), so
    # another uid allowed to read the directory (a sandboxed job, its mounts) can read it
    os.chmod(tmp, 0o644)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: Path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2) + "\n")
