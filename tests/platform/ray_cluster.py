"""A multi-node Ray cluster on one host for the platform's tests: a head without GPUs and worker
nodes of one virtual GPU each. Every node is a `ray start --block` of its own, in its own process
group with its own temp dir, so SIGKILLing that group is a machine dying: its raylet, object
store and workers (the jobs' actors) go at once, and only Ray's health checks notice."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rlguard.ports import unused_port

RAY = str(Path(sys.executable).with_name("ray"))
NO_DRAIN = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}
"""A node's `ray start` waits up to 30 s on SIGTERM for its node to drain (for Ray Serve's
replicas); a test cluster's nodes stop at once."""


@dataclass
class RayCluster:
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rlg-rc-")))
    port: int = field(default_factory=unused_port)
    nodes: dict[str, subprocess.Popen] = field(default_factory=dict)
    jobs_roots: dict[str, Path] = field(default_factory=dict)  # a worker's own, by its name
    nice: int = 0  # its processes' niceness: >0 leaves the host's CPU to a server beside it

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """Token authentication, as docs/platform.md asks of a multi-node cluster: every node,
        the server and any driver need these."""
        token = self.root / "token"
        if not token.is_file():
            token.write_text(secrets.token_hex(32))
            token.chmod(0o600)
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}

    def _start(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        # Short temp dirs: Ray's socket paths live under them.
        command = ["nice", "-n", str(self.nice), RAY, "start", "--block"]
        command += ["--node-ip-address=127.0.0.1", *args]
        command += ["--disable-usage-stats", f"--temp-dir={self.root / name}"]
        with (self.root / f"{name}.log").open("ab") as log:
            self.nodes[name] = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env, **NO_DRAIN, **(env or {})},
                start_new_session=True,
            )

    def start(self, head_env: dict[str, str] | None = None) -> RayCluster:
        """The head: no GPUs, so every job runs on a worker node. Returns once its GCS port
        answers: a worker started before that gives up (seen at a load average of 17).
        `head_env`: Ray settings for its GCS (`RAY_health_check_period_ms`, ...)."""
        head = ("--head", f"--port={self.port}", "--num-gpus=0", "--num-cpus=1")
        self._start("head", *head, "--include-dashboard=false", env=head_env)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.nodes["head"].poll() is not None:
                raise RuntimeError(f"ray start --head exited: {self.log('head')}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                return self
            time.sleep(0.3)
        raise RuntimeError(f"the head did not come up in 180 s: {self.log('head')}")

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")[-2000:]

    def add_worker(
        self, name: str, gpus: int = 1, cpus: int = 2, jobs_root: Path | None = None
    ) -> None:
        """A worker node; `jobs_root`: the job-directory root of its own (RLGUARD_JOBS_ROOT in
        its `ray start`'s environment, as an operator sets it on each machine)."""
        env = {}
        if jobs_root is not None:
            env["RLGUARD_JOBS_ROOT"] = str(jobs_root)
            self.jobs_roots[name] = jobs_root
        args = (f"--address={self.address}", f"--num-gpus={gpus}", f"--num-cpus={cpus}")
        self._start(name, *args, env=env)

    def kill(self, name: str) -> None:
        """SIGKILL every process of the node, as a machine that died: `ray start` and all its
        descendants (Ray starts its workers in process groups of their own)."""
        for pid in [root := self.nodes.pop(name).pid, *descendants(root)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def node_of(self, pid: int) -> str:
        """The node whose `ray start` process `pid` descends from."""
        roots = {process.pid: name for name, process in self.nodes.items()}
        while pid not in roots:
            pid = parent(pid)
            if pid <= 1:
                raise LookupError("not a process of this cluster's nodes")
        return roots[pid]

    def stop(self) -> None:
        for process in self.nodes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for process in self.nodes.values():
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        self.nodes.clear()
        for log in sorted(self.root.glob("*.log")):  # pytest shows it when a test failed
            print(f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}")
        shutil.rmtree(self.root, ignore_errors=True)


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("PPid:")))


def descendants(root: int) -> list[int]:
    """Every process below `root`, read from /proc at once."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, StopIteration):
                children.setdefault(parent(int(entry)), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


@contextlib.contextmanager
def running_cluster(
    monkeypatch: pytest.MonkeyPatch, head_env: dict[str, str] | None = None
) -> Iterator[RayCluster]:
    """A started cluster, its token in this process's environment (servers started after it and
    their CLI calls join it), stopped at the end."""
    cluster = RayCluster().start(head_env)
    for name, value in cluster.env.items():
        monkeypatch.setenv(name, value)
    try:
        yield cluster
    finally:
        cluster.stop()
