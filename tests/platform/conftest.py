"""Real servers for the platform's tests: `rlguard serve` as a process on loopback, a local Ray
head of virtual GPUs, and (for the PostgreSQL runs) a throwaway PostgreSQL server."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_platform import LiveServer, new_database, postgres_bin
from ray_cluster import RayCluster, running_cluster
from s3_server import S3Server

from rlguard.platform.volume import unmount
from rlguard.ports import unused_port


@pytest.fixture(autouse=True)
def _volumes_unmounted(request: pytest.FixtureRequest) -> Iterator[None]:
    """A job's volume stays mounted after its run until its job is deleted (volume.py); tests
    that run jobs without a server to delete them leave theirs under their own tmp_path, which
    is unmounted here, so a session does not pile up loop devices."""
    # Asked for before the test runs, so tmp_path is torn down after this fixture, not before.
    path = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if path is not None:
        unmount(path)


@pytest.fixture
def live_server(tmp_path) -> Iterator[callable]:
    """A factory of started servers (each stopped, with its Ray head, at the end of the test)."""
    started: list[LiveServer] = []

    def start(*args: str, db: str | None = None, data_dir: Path | None = None) -> LiveServer:
        server = LiveServer(
            data_dir or tmp_path / f"platform{len(started)}", unused_port(), db, list(args)
        )
        server.data_dir.mkdir(parents=True, exist_ok=True)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def ray_cluster(monkeypatch) -> Iterator[RayCluster]:
    """A multi-node Ray cluster on this host (ray_cluster.py), its head started; the test adds
    worker nodes. Its token is in this process's environment, so servers started after it (ask
    for this fixture before `live_server`) and their CLI calls can join it."""
    with running_cluster(monkeypatch) as cluster:
        yield cluster


# ----- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server of its own (initdb in a temporary directory, loopback only).

    CI installs Debian's postgresql package (.ci/run) and sets CI=true: there a missing server
    fails the test run instead of skipping it."""
    bin_dir = postgres_bin()
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
    port = unused_port()
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


@pytest.fixture
def fresh_postgres_db(postgres_url) -> str:
    return new_database(postgres_url)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request) -> str | None:
    """Each test that takes it runs on the embedded SQLite (None: the default) and on PostgreSQL."""
    if request.param == "sqlite":
        return None
    return new_database(request.getfixturevalue("postgres_url"))


# ----- S3 (moto) --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server (s3_server.py says why moto). CI installs the dev extras and sets
    CI=true: there a missing moto fails the run instead of skipping the storage tests."""
    try:
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the S3 storage tests, but: {e}")
        pytest.skip(f"{e}: pip install 'moto[server]' s3fs")
    server = S3Server().start()
    try:
        yield server
    finally:
        server.stop()
