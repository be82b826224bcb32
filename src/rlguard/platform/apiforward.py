"""The platform's API inside a job's sandbox: a unix socket piped to the server's TCP address.

A sandboxed job has no network but its own loopback, so it cannot reach Ray's ports or anything
else on the host; the run's actor (outside the sandbox, on the job's node) listens on a unix
socket that is bound into the sandbox, and pipes each connection to the platform's URL. A job
speaks HTTP over it with the platform's client (`RLGUARD_SOCKET`). Connections are few (evals
and checkpoints), so a thread per direction is enough; a job holds at most MAX_CONNECTIONS at
once (so at most twice as many threads of the actor and as many connections to the server), and
one more is closed as soon as it is accepted (the job's client retries it).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from urllib.parse import urlsplit

MAX_CONNECTIONS = 8
"""A job's connections through its socket at once: its client opens one per request."""


class ApiForward:
    def __init__(self, path: str, url: str) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        os.chmod(path, 0o666)  # the job's uid must be allowed to connect
        self.listener.listen(64)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        threading.Thread(target=self._accept, daemon=True, name="api-forward").start()

    def _accept(self) -> None:
        while True:
            try:
                inner, _ = self.listener.accept()
            except OSError:  # closed
                return
            if not self.slots.acquire(blocking=False):
                inner.close()  # over its share: dropped, as the server being away would be
                continue
            try:
                outer = socket.create_connection(self.target, timeout=30)
                outer.settimeout(None)
                # a request's head and body arrive as separate writes: without this, Nagle
                # holds the second until the server's delayed ACK (40 ms per eval, measured)
                outer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                inner.close()  # the job's client sees a dropped connection and retries
                self.slots.release()
                continue
            ends = threading.Barrier(2, action=self.slots.release)  # both directions done
            for a, b in ((inner, outer), (outer, inner)):
                threading.Thread(target=_pump, args=(a, b, ends), daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _pump(source: socket.socket, sink: socket.socket, ends: threading.Barrier) -> None:
    """Copy one direction until it ends, then pass the end on (half-close); the second
    direction to end closes the pair and frees its slot."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
    finally:
        with contextlib.suppress(OSError):
            source.shutdown(socket.SHUT_RD)
        if ends.wait() == 0:
            source.close()
            sink.close()
