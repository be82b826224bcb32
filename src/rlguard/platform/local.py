"""A platform on this machine, for the demo and the benchmarks that run lab jobs on it:
`rlguard serve` as a child process (waited for until its API answers), and a lab world opened to
the jobs' uids."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx


def open_to_jobs(root: Path) -> None:
    """Make a built world readable (not writable) by every uid: transformers writes its weights
    0600, and sandboxed jobs read the world as their own uids."""
    for directory, _, files in os.walk(root):
        os.chmod(directory, os.stat(directory).st_mode | 0o555)
        for name in files:
            path = os.path.join(directory, name)
            os.chmod(path, os.stat(path).st_mode | 0o444)


def start_server(
    data: Path, port: int, args: list[str], timeout_s: float = 120
) -> subprocess.Popen:
    """`rlguard serve --data-dir DATA --port PORT ARGS...`, its output in DATA/server.log."""
    data.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "rlguard.cli", "serve", "--data-dir", str(data)]
    with (data / "server.log").open("ab") as log:
        server = subprocess.Popen(
            [*command, "--port", str(port), *args], stdout=log, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited: {_tail(data / 'server.log')}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=2).is_success:
                return server
        except httpx.TransportError:
            time.sleep(0.3)
    server.kill()
    raise RuntimeError(f"the server did not start: {_tail(data / 'server.log')}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]
