"""Real servers for the platform's tests: `rlguard serve` as a process on loopback, a local Ray
head of virtual GPUs, and (for the PostgreSQL runs) a throwaway PostgreSQL server."""

from __future__ import annotations

import json
import os
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

import httpx
import pytest

from rlguard.platform.client import Client

RLGUARD = [sys.executable, "-m", "rlguard.cli"]
CURVE_JOB = Path(__file__).with_name("curve_job.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def curve_command(scores: list[float], pause_s: float = 0.2) -> str:
    """A command job that reports `scores` as its eval curve (tests/platform/curve_job.py)."""
    return f"{sys.executable} {CURVE_JOB} {','.join(map(str, scores))} {pause_s}"


@dataclass
class LiveServer:
    data_dir: Path
    port: int
    db: str | None
    args: list[str]
    process: subprocess.Popen | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.data_dir / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_url(self) -> str:
        return self.db or f"sqlite:///{self.data_dir / 'platform.db'}"

    def _store_args(self) -> list[str]:
        return ["--data-dir", str(self.data_dir), *(["--db", self.db] if self.db else [])]

    def start(self) -> LiveServer:
        command = [*RLGUARD, "serve", "--port", str(self.port), *self._store_args(), *self.args]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/openapi.json", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"server did not come up: {self.log.read_text()[-2000:]}")

    def tenant(self, name: str, quota_gpus: int = 2, admin: bool = False, weight: float = 1.0):
        """(tenant id, api key) of a new tenant, made with the operator's CLI."""
        command = [*RLGUARD, "tenants", "create", name, "--quota-gpus", str(quota_gpus)]
        command += ["--weight", str(weight), *self._store_args(), "--json"]
        if admin:
            command.append("--admin")
        made = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
        return made["tenant_id"], made["api_key"]

    def client(self, key: str) -> Client:
        return Client(self.url, key)

    def kill(self) -> None:
        """SIGKILL: the crash case (the Ray head and its jobs keep running)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """A graceful stop: running jobs checkpoint and requeue, the local Ray head stops."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._stop_head()

    def _stop_head(self) -> None:
        from rlguard.platform.ray_head import stop_local_head

        stop_local_head(self.data_dir)


@pytest.fixture
def live_server(tmp_path) -> Iterator[callable]:
    """A factory of started servers (each stopped, with its Ray head, at the end of the test)."""
    started: list[LiveServer] = []

    def start(*args: str, db: str | None = None, data_dir: Path | None = None) -> LiveServer:
        server = LiveServer(
            data_dir or tmp_path / f"platform{len(started)}", free_port(), db, list(args)
        )
        server.data_dir.mkdir(parents=True, exist_ok=True)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


# ----- PostgreSQL ---------------------------------------------------------------------------


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server of its own (initdb in a temporary directory, loopback only).

    CI installs Debian's postgresql package (.ci/run) and sets CI=true: there a missing server
    fails the test run instead of skipping it."""
    bin_dir = _postgres_bin()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed, and CI must run the PostgreSQL tests")
        pytest.skip("PostgreSQL server binaries (initdb) not found: apt-get install postgresql")
    # Not under pytest's own temporary directory: its parents are private to root, and the
    # server runs as the postgres user.
    root = Path(tempfile.mkdtemp(prefix="rlguard-postgres-"))
    data = root / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root: run it as Debian's postgres user
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run(
        [*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"],
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [
            *as_user,
            str(bin_dir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(root),
            "-h",
            "127.0.0.1",
            "-c",
            "fsync=on",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres") as c:
                c.autocommit = True
                break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    yield f"postgresql://postgres@127.0.0.1:{port}"
    server.terminate()
    server.wait(timeout=30)
    shutil.rmtree(root, ignore_errors=True)


def new_database(postgres_url: str) -> str:
    """A new, empty database on the session's PostgreSQL server."""
    import psycopg

    name = f"t{os.urandom(6).hex()}"
    with psycopg.connect(f"{postgres_url}/postgres", autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return f"{postgres_url}/{name}"


@pytest.fixture
def fresh_postgres_db(postgres_url) -> str:
    return new_database(postgres_url)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request) -> str | None:
    """Each test that takes it runs on the embedded SQLite (None: the default) and on PostgreSQL."""
    if request.param == "sqlite":
        return None
    return new_database(request.getfixturevalue("postgres_url"))
