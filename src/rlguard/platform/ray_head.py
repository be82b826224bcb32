"""The Ray cluster the platform runs on: an existing one by address, or a local head it starts.

A local head is started as its own process session (`ray start --head --block`), recorded in the
data directory, and reused by the next server: so a server that is killed and restarted finds its
jobs' Ray actors still running and reattaches to them. Stopping the head (SIGTERM to `ray start
--block`) stops every Ray process it started.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlguard.errors import InputError
from rlguard.io import write_json
from rlguard.ports import unused_port

NAMESPACE = "rlguard"
START_TIMEOUT_S = 60.0


def process_alive(pid: int) -> bool:
    """Whether `pid` runs (an exited child of ours is reaped, and is not)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child, and it has exited (reaped)
            return False
    except ChildProcessError:
        pass  # started by an earlier server: not ours to reap
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ray_command() -> str:
    beside = Path(sys.executable).parent / "ray"
    found = str(beside) if beside.is_file() else shutil.which("ray")
    if not found:
        raise InputError("the `ray` command is not installed beside this Python")
    return found


def token_path(data_dir: Path) -> Path:
    """The local head's token: Ray's token authentication (RAY_AUTH_MODE=token) on every
    connection to its control plane; 0600 in the 0700 data directory, so only the platform's
    user reads it (sandboxed jobs cannot reach Ray's ports at all)."""
    return data_dir / "ray-token"


def auth_env(data_dir: Path) -> dict[str, str]:
    """What a process of the platform needs in its environment to speak to the local head."""
    path = token_path(data_dir)
    if not path.is_file():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path.resolve())}


def local_head(data_dir: Path, gpus: int, cpus: int) -> str:
    """The address of this data directory's local Ray head, started if none is running."""
    record = data_dir / "ray-head.json"
    if record.is_file():
        known = json.loads(record.read_text())
        if process_alive(known["pid"]):
            return known["address"]
    port = unused_port()
    log = (data_dir / "ray-head.log").open("ab")
    # Its own temp dir: Ray records "the current cluster" there, so a plain `ray.init()` elsewhere
    # on the host (the simulator, the lab) starts its own cluster rather than joining ours. Short,
    # because Ray's socket paths live under it.
    temp = temp_dir(data_dir)
    process = subprocess.Popen(
        [
            _ray_command(),
            "start",
            "--head",
            "--block",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            f"--num-gpus={gpus}",
            f"--num-cpus={cpus}",
            "--include-dashboard=false",
            # The platform's driver reads no worker output through Ray (log_to_driver=False;
            # jobs' logs are its own files), so the process that tails every worker's log and
            # streams it to drivers is left out.
            "--include-log-monitor=false",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        # A head on loopback for this host's server, with token authentication.
        env={**os.environ, **auth_env(data_dir)},
        start_new_session=True,  # outlives a killed server, so jobs can be reattached
    )
    address = f"127.0.0.1:{port}"
    write_json(record, {"pid": process.pid, "address": address})
    _wait_until_up(address, process)
    return address


def temp_dir(data_dir: Path) -> Path:
    """The local head's Ray temp dir (sessions, sockets, logs) of this data directory."""
    digest = hashlib.sha1(str(data_dir.resolve()).encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"rlguard-ray-{digest}"


def _wait_until_up(address: str, process: subprocess.Popen) -> None:
    host, port = address.split(":")
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"ray start exited with code {process.returncode}")
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the local Ray head at {address} did not come up in {START_TIMEOUT_S} s")


def stop_local_head(data_dir: Path) -> None:
    """Stop the local head of this data directory, if one runs (and its jobs' processes)."""
    record = data_dir / "ray-head.json"
    if not record.is_file():
        return
    pid = json.loads(record.read_text())["pid"]
    if process_alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
    record.unlink(missing_ok=True)
    shutil.rmtree(temp_dir(data_dir), ignore_errors=True)
