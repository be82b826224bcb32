"""A TCP port for a server this process starts a moment later (the Ray head, torchrun's rendezvous
under `rlguard train --nproc`, `rlguard serve` in the demo, the benchmarks and the tests).

Asking the kernel for port 0 returns one from the ephemeral range (Linux: 32768-60999), the same
range every outgoing connection takes its local port from; a server that binds seconds later (the
API after its Ray connection, ~15 s) can find it taken by one of Ray's own connections. So the
port is drawn at random below that range and above Ray's worker ports (10002-19999), and checked
free: another process can still take it in between, but nothing allocates from there on its own.
"""

from __future__ import annotations

import random
import socket

LOW, HIGH = 20000, 32767
TRIES = 200


def unused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now, from LOW-HIGH."""
    for port in random.sample(range(LOW, HIGH + 1), TRIES):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port among {TRIES} tried in {LOW}-{HIGH}")
