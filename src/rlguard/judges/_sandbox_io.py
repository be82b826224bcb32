"""Talking to the sandbox child with bounded memory and a hard deadline.

One select loop feeds the config to the child's stdin and drains stdout, stderr and the status
pipe, keeping only a tail of each, so a program printing a gigabyte costs the judge a few KiB and
is stopped at the output cap. The loop ends when the child exits, the wall clock runs out or the
output cap is hit; `stop` (kill everything the sandbox owns) is called once at that moment, then
the pipes get a short grace period to reach EOF. A grandchild that escaped the kill while holding
a pipe (possible only without a dedicated uid) cannot keep the judge waiting past that grace.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

CHUNK = 1 << 16
GRACE_S = 0.5
TICK_S = 0.02  # exit polling, only where pidfd_open is unavailable


@dataclass
class Tail:
    """The last `keep` bytes of a stream (its first, with `head`), and how many bytes it carried
    in total."""

    keep: int
    head: bool = False
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.head:
            self.data += chunk[: max(self.keep - len(self.data), 0)]
            return
        self.data += chunk
        if len(self.data) > self.keep:
            del self.data[: len(self.data) - self.keep]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


@dataclass
class Pumped:
    stdout: Tail
    stderr: Tail
    status: bytes
    cause: str  # "exit", "timeout" or "output"


def exited(pid: int) -> bool:
    """Whether pid has exited, without reaping it (its pid must stay reserved until killpg)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def pump(
    proc: subprocess.Popen[bytes],
    status_fd: int,
    payload: bytes,
    *,
    deadline: float,
    output_limit: int,
    keep: int,
    stop: Callable[[], None],
) -> Pumped:
    assert proc.stdin and proc.stdout and proc.stderr
    # The status pipe carries the tests' checks: all of it is kept, and it counts as output; a
    # flood past the limit kills the program and keeps the start, whose "ready" says it ran.
    out, err, status = Tail(keep), Tail(keep), Tail(output_limit + 1, head=True)
    sinks = {proc.stdout.fileno(): out, proc.stderr.fileno(): err, status_fd: status}
    stdin_fd, pidfd = proc.stdin.fileno(), _pidfd(proc.pid)
    sel = selectors.DefaultSelector()
    for fd in (*sinks, stdin_fd):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_WRITE if fd == stdin_fd else selectors.EVENT_READ)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ)
    pending, cause, stopped_at = memoryview(payload), "", 0.0
    try:
        while True:
            now = time.monotonic()
            if not cause:
                cause = "exit" if exited(proc.pid) else "timeout" if now >= deadline else ""
                if cause:
                    stop()
                    stopped_at = now = time.monotonic()
            if cause and (now >= stopped_at + GRACE_S or not sinks.keys() & sel.get_map().keys()):
                break
            until = stopped_at + GRACE_S if cause else deadline
            wait = until - now if cause or pidfd is not None else min(TICK_S, until - now)
            for key, _ in sel.select(max(wait, 0)):
                if key.fd == pidfd:
                    sel.unregister(pidfd)  # the loop head sees the exit
                elif key.fd == stdin_fd:
                    pending = _feed(sel, stdin_fd, pending)
                    if not pending:
                        proc.stdin.close()  # EOF: the child reads its config up to here
                elif (
                    _drain(sel, key.fd, sinks[key.fd])
                    and not cause
                    and out.total + err.total + status.total > output_limit
                ):
                    cause = "output"
                    stop()
                    stopped_at = time.monotonic()
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        proc.stdin.close()
    return Pumped(out, err, bytes(status.data), cause)


def _feed(sel: selectors.BaseSelector, fd: int, pending: memoryview) -> memoryview:
    try:
        pending = pending[os.write(fd, pending) :]
    except BlockingIOError:
        return pending
    except OSError:  # the child closed stdin or died
        pending = pending[:0]
    if not pending:
        sel.unregister(fd)
    return pending


def _drain(sel: selectors.BaseSelector, fd: int, sink: Tail) -> bool:
    """Read what is there into sink; False at EOF (and the fd leaves the selector)."""
    try:
        chunk = os.read(fd, CHUNK)
    except BlockingIOError:
        return True
    except OSError:
        chunk = b""
    if not chunk:
        sel.unregister(fd)
        return False
    sink.add(chunk)
    return True
