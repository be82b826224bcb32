"""A real platform for the tests: `rlguard serve` as a process on loopback, its tenants made
with the operator's CLI, and the command jobs the tests submit. Imported by the tests by this
module's own name (`conftest` is ambiguous across the suite's folders)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rlguard.platform.client import Client
from rlguard.platform.local import start_server
from rlguard.platform.volume import mounted, unmount

RLGUARD = [sys.executable, "-m", "rlguard.cli"]
CURVE_JOB = Path(__file__).with_name("curve_job.py")
TESTS_MOUNT = f"tests={Path(__file__).resolve().parents[1]}:ro"  # the jobs' scripts and helpers


def curve_command(scores: list[float], pause_s: float = 0.2, hacked: bool = False) -> str:
    """A command job that reports `scores` as its eval curve (tests/platform/curve_job.py);
    `hacked`: with a proxy reward that keeps rising, and a KL."""
    scores_csv = ",".join(map(str, scores))
    return f"{sys.executable} {CURVE_JOB} {scores_csv} {pause_s}{' hacked' if hacked else ''}"


def toy_train_config(root: Path, policy: Path, name: str, **settings) -> dict:  # type: ignore[no-untyped-def]
    """A CGPO `rlguard train` config on the toy world at `root` (rlguard.train.toy_runs), as a
    train job's JSON body takes it."""
    from rlguard.train.toy_runs import toy_config

    config = toy_config(root, policy, name, **settings)
    config = config.model_dump(mode="json", exclude_defaults=True)  # JSON has no inf (kl_max)
    config["stage"] = "cgpo"
    return config


def toy_world(root: Path) -> tuple[Path, str]:
    """The toy world and its SFT policy under `root`, readable by sandboxed jobs' uids
    (transformers writes weights 0600): the policy, and the `--mount` that shows it to jobs."""
    from rlguard.train.toy_runs import sft_toy

    policy = sft_toy(root, seed=1, epochs=2)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    return policy, f"toy={root}:ro"


def require_sandbox(what: str) -> None:
    """Skip the caller where this host cannot sandbox jobs, except in CI, where it fails: CI
    must run `what`."""
    import pytest

    from rlguard.platform.jobview import host_problem

    problem = host_problem()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run {what}: {problem}")
        pytest.skip(f"this host cannot sandbox jobs: {problem}")


def sandbox_args() -> list[str]:
    """Sandboxed where the host can (root, bwrap: this project's machines and CI, where a host
    that cannot is an error); elsewhere the tests run the platform single-tenant."""
    from rlguard.platform.jobview import host_problem

    problem = host_problem()
    if problem is None:
        return []
    if os.environ.get("CI"):
        raise RuntimeError(f"CI runs the platform sandboxed, but: {problem}")
    return ["--single-tenant"]


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
        db = ["--db", self.db] if self.db else []
        args = [*db, "--mount", TESTS_MOUNT, *sandbox_args(), *self.args]
        self.process = start_server(self.data_dir, self.port, args)
        return self

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
        unmount(self.data_dir)  # volumes of runs whose actors died with the head

    @contextlib.contextmanager
    def job_files(self, job_id: str) -> Iterator[Path]:
        """A job's directory to read: where it is while its run's volume is mounted; a
        read-only mount of its image once the run ended (volume.py)."""
        job_dir = self.data_dir / "jobs" / job_id
        image = self.data_dir / "volumes" / f"{job_id}.img"
        if mounted(job_dir) or not image.exists():
            yield job_dir
            return
        with tempfile.TemporaryDirectory(prefix="rlguard-job-files-") as view:
            subprocess.run(["mount", "-o", "loop,ro", str(image), view], check=True)
            try:
                yield Path(view) / "job"
            finally:
                unmount(Path(view))


def postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def new_database(postgres_url: str) -> str:
    """A new, empty database on the session's PostgreSQL server."""
    import psycopg

    name = f"t{os.urandom(6).hex()}"
    with psycopg.connect(f"{postgres_url}/postgres", autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return f"{postgres_url}/{name}"


def sql_engine(url: str):  # type: ignore[no-untyped-def]
    """An SQLAlchemy engine on a server's store URL (psycopg 3 for PostgreSQL)."""
    from sqlalchemy import create_engine

    return create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


def row_counts(url: str) -> dict[str, int]:
    """Rows of every table: a refused request must leave these exactly as they were."""
    from sqlalchemy import inspect, text

    engine = sql_engine(url)
    try:
        with engine.connect() as c:
            tables = inspect(c).get_table_names()
            return {t: c.execute(text(f'select count(*) from "{t}"')).scalar_one() for t in tables}
    finally:
        engine.dispose()


def assert_replayed(job: dict, events: list[dict], decisions: list[dict]) -> None:
    """The platform's decisions are the cluster stop rule's: a fresh rule of the job's stop
    policy, fed the job's recorded eval events in order, decides exactly as it did live."""
    from rlguard.platform.replay import replay_decisions

    live = {d["event_seq"]: (d["stop"], d["reason"]) for d in decisions}
    assert replay_decisions(job, events) == live


def wait_for(check, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    """Poll `check` until it returns something truthy; that, with the seconds it took."""
    import time

    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        value = check()
        if value:
            return value, time.monotonic() - start
        time.sleep(0.2)
    raise TimeoutError(f"{what} after {timeout_s} s")
