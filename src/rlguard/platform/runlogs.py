"""A run's log (the job's stdout and stderr), readable through the API whichever node ran it.

The run's Ray actor writes the log on its node (jobhome.py: under the node's root, or at the data
directory's path on a node without one), which the server's disk need not share. So:
- while the run's actor lives (once it has started the job: an actor Ray has yet to place
  cannot answer), the server asks it for the log's tail (`JobProcess.log_tail`);
- when the job's process has exited, before the actor answers `wait` (and so before the server
  kills it), the actor puts the log's tail into the artifact store beside the job's checkpoints
  (`TENANT/JOB/logs/attempt-N.log`), where it stays until the job is deleted;
- the server reads its own disk first (the run ran on its node, or the disk is shared), then
  the store.
Every copy is bounded: the last LOG_MAX_BYTES of the log, from the first whole line in them (a
job may print without end; what it printed first is what matters least for its failure), and so
is the text served (`as_text`), whatever bytes the job printed.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING

from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.log_format import about

if TYPE_CHECKING:
    from rlguard.platform.service import Platform

log = logging.getLogger(__name__)

LOG_MAX_BYTES = 4 << 20
"""The most of a run's log the API serves, an actor sends and the store keeps: its last 4 MiB."""


def log_key(tenant_id: str, job_id: str, attempt: int) -> str:
    """Where a run's log is kept in the store: under its job's prefix, so it goes with the job."""
    return f"{ArtifactStore.job_key(tenant_id, job_id)}/logs/attempt-{attempt}.log"


def whole_lines(data: bytes, cut: bool) -> bytes:
    """`data` from its first whole line when it is the tail of something longer (`cut`)."""
    if not cut:
        return data
    newline = data.find(b"\n")
    return data[newline + 1 :] if newline >= 0 else b""


def file_tail(path: str, max_bytes: int = LOG_MAX_BYTES) -> bytes | None:
    """The last `max_bytes` of a file, from a whole line; None if there is no such file. Opened
    without following a link (the platform's own file, but read as root)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(fd).st_size
        f.seek(max(size - max_bytes, 0))
        return whole_lines(f.read(max_bytes), size > max_bytes)


def keep_log(store_uri: str, key: str, path: str, max_bytes: int = LOG_MAX_BYTES) -> bool:
    """The log's tail into the store (the run's actor, once the job's process has exited);
    whether it is there. A store that does not take it costs the log only: the run ends."""
    data = file_tail(path, max_bytes)
    if data is None:
        return False
    try:
        ArtifactStore(store_uri).put(key, data)
    except Exception as e:  # the store away: the node's own copy is what is left
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        with contextlib.suppress(OSError), open(path, "a") as f:
            f.write(f"rlguard: this log could not be kept in the store: {reason}\n")
        return False
    return True


def as_text(data: bytes, max_bytes: int = LOG_MAX_BYTES) -> str:
    """A log's bytes as text of at most `max_bytes` in UTF-8, from a whole line: each byte that
    is not UTF-8 becomes U+FFFD, three bytes, so a tail of binary output would triple."""
    text = data.decode(errors="replace")
    encoded = text.encode()
    if len(encoded) <= max_bytes:
        return text
    return whole_lines(encoded[-max_bytes:], cut=True).decode(errors="replace")


def read_log(
    platform: Platform, tenant_id: str, job_id: str, attempt: int, ask_actor: bool = True
) -> str:
    """A run's log tail as text (`as_text`), wherever it is: from its live actor, the server's
    own disk or the store (empty if none has it: a run lost with its node, say)."""
    active = platform.active.get(job_id) if ask_actor else None
    handle = active.handle if active is not None and active.attempt == attempt else None
    if handle is not None and getattr(handle, "running", False):  # not while Ray places it
        live = platform.executor.log_tail(handle, LOG_MAX_BYTES)
        if live is not None:
            return as_text(live)
    local = file_tail(str(platform.log_path(job_id, attempt)))
    if local is not None:
        return as_text(local)
    if platform.artifacts is None:
        return ""
    try:
        stored = platform.artifacts.get(log_key(tenant_id, job_id, attempt), LOG_MAX_BYTES)
    except Exception as e:  # the store away: say so in the server's log, answer what we have
        log.warning(
            "log of %s attempt %d: the store did not answer: %s",
            job_id,
            attempt,
            e,
            extra=about(job_id=job_id),
        )
        return ""
    return "" if stored is None else as_text(stored)
