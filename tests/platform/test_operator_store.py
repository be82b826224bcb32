"""An operator's command finds the store the server uses, or refuses in one line: it never makes
a store of its own, takes `RLGUARD_DATA_DIR` as `rlguard serve` does, and, asked for no store in
particular while a server runs on another, names that server's. The registry of running servers
is believed only where no other user can write, and only for processes still alive. On a real
server, a tenant made with `RLGUARD_DATA_DIR` set gets a key the server accepts."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_platform import RLGUARD, LiveServer
from sqlalchemy import select

from rlguard.errors import InputError
from rlguard.platform.db import Tenant
from rlguard.platform.servers import operator_store, recorded, running
from rlguard.platform.store import Store, default_url
from rlguard.ports import unused_port


def made_store(data_dir: Path) -> str:
    data_dir.mkdir(parents=True, exist_ok=True)
    Store(default_url(data_dir)).close()
    return default_url(data_dir)


def tenants(url: str) -> list[str]:
    store = Store(url)
    try:
        with store.transaction() as s:
            return list(s.scalars(select(Tenant.name)))
    finally:
        store.close()


def create(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`rlguard tenants create acme ...` in `cwd`, with this test's environment."""
    command = [*RLGUARD, "tenants", "create", "acme", "--quota-gpus", "1", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=60)


@contextlib.contextmanager
def another_server(port: int, data_dir: Path) -> Iterator[None]:
    """A second process recorded as a server on SQLite in `data_dir` while the block runs."""
    code = (
        "import sys; from pathlib import Path; from rlguard.platform.servers import recorded\n"
        f"with recorded({port}, Path({str(data_dir)!r}), {default_url(data_dir)!r}):\n"
        "    print('recorded', flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "recorded\n"
        yield
    finally:
        child.communicate("", timeout=30)


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A registry of servers of this test's own, no RLGUARD_DATA_DIR, and a scratch cwd."""
    monkeypatch.setenv("RLGUARD_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("RLGUARD_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_no_store_is_made_where_none_is(isolated: Path) -> None:
    done = create(isolated)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: no platform store in runs/platform (the server makes it): pass the server's "
        "--data-dir or --db, or set RLGUARD_DATA_DIR"
    ]
    done = create(isolated, "--data-dir", "elsewhere")
    assert done.returncode == 2
    assert done.stderr.startswith("error: no platform store in elsewhere (the server makes it)")
    assert not (isolated / "runs").exists() and not (isolated / "elsewhere").exists()


def test_rlguard_data_dir_is_where_the_store_is_found(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = made_store(isolated / "platform-a")
    monkeypatch.setenv("RLGUARD_DATA_DIR", str(isolated / "platform-a"))
    done = create(isolated, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["api_key"].startswith("rlg_")
    assert tenants(url) == ["acme"]


def test_a_command_aimed_at_another_store_than_the_running_servers_is_refused(
    isolated: Path,
) -> None:
    served = made_store(isolated / "served")
    default = made_store(isolated / "runs" / "platform")  # the default, but not the server's
    with recorded(8321, isolated / "served", served):
        assert [r.data_dir for r in running()] == [str(isolated / "served")]
        done = create(isolated)
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [
            f"error: the running server (pid {os.getpid()}, port 8321) uses the store in "
            f"{isolated / 'served'}, not runs/platform: pass --data-dir {isolated / 'served'} "
            "(or set RLGUARD_DATA_DIR)"
        ]
        assert tenants(default) == []
        assert create(isolated, "--data-dir", str(isolated / "served")).returncode == 0
        assert tenants(served) == ["acme"]
        # named explicitly, a store no server runs on is the operator's choice (a stopped one's)
        assert operator_store(None, Path("runs/platform")) == default_url(Path("runs/platform"))
    assert running() == []


def test_the_refusal_names_every_running_server_and_hides_a_urls_password(
    isolated: Path,
) -> None:
    made_store(isolated / "runs" / "platform")
    postgres = "postgresql+psycopg://rlguard:s3cret@db.internal/rlguard"
    with recorded(8321, isolated / "a", postgres):
        with pytest.raises(InputError) as refused:
            operator_store(None, None)
        said = str(refused.value)
        assert said.endswith(
            "uses the store at postgresql+psycopg://rlguard:***@db.internal/rlguard, not "
            "runs/platform: pass --db postgresql+psycopg://rlguard:***@db.internal/rlguard"
        )
        two_running = pytest.raises(InputError, match=r"^2 running servers use other stores")
        with another_server(8322, isolated / "b"), two_running as two:
            operator_store(None, None)
    assert "s3cret" not in said + str(two.value)
    assert f"port 8322, in {isolated / 'b'}" in str(two.value)


def test_a_registry_others_can_write_is_not_believed(isolated: Path) -> None:
    served = made_store(isolated / "served")
    registry = isolated / "run" / "servers"
    registry.mkdir(parents=True)
    registry.chmod(0o777)
    with recorded(8321, isolated / "served", served):
        assert list(registry.iterdir()) == [] and running() == []
    registry.chmod(0o700)
    (isolated / "run").chmod(0o777)
    with recorded(8321, isolated / "served", served):
        assert running() == []


def test_a_record_of_a_dead_server_is_not_believed_and_is_dropped(isolated: Path) -> None:
    served = made_store(isolated / "served")
    with recorded(8321, isolated / "served", served):
        (path,) = (isolated / "run" / "servers").iterdir()
        record = json.loads(path.read_text())
    dead = subprocess.Popen(["true"])
    dead.wait()
    reused = {**record, "pid": os.getpid(), "started": record["started"] - 1}  # a pid reused
    for pid, body in ((dead.pid, {**record, "pid": dead.pid}), (os.getpid() + 1, reused)):
        (path.parent / f"{pid}.json").write_text(json.dumps(body))
    (path.parent / "junk.json").write_text("{")
    assert running() == []
    with recorded(8322, isolated / "served", served):
        assert [p.name for p in path.parent.iterdir()] == [f"{os.getpid()}.json"]


@pytest.mark.ray
def test_a_tenant_made_with_rlguard_data_dir_is_the_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLGUARD_RUNTIME_DIR", str(tmp_path / "run"))  # the server's and ours
    server = LiveServer(tmp_path / "data", unused_port(), None, ["--gpus", "1"]).start()
    try:
        env = {**os.environ, "RLGUARD_DATA_DIR": str(server.data_dir)}
        made = subprocess.run(
            [*RLGUARD, "tenants", "create", "acme", "--quota-gpus", "1", "--json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            check=True,
        )
        key = json.loads(made.stdout)["api_key"]
        assert server.client(key).usage()["quota_gpus"] == 1
        elsewhere = tmp_path / "other"
        made_store(elsewhere / "runs" / "platform")
        env.pop("RLGUARD_DATA_DIR")
        refused = subprocess.run(
            [*RLGUARD, "tenants", "create", "beta", "--quota-gpus", "1"],
            capture_output=True,
            text=True,
            env=env,
            cwd=elsewhere,
        )
        assert refused.returncode == 2
        (line,) = refused.stderr.strip().splitlines()
        assert f"(pid {server.process.pid}, port {server.port}) uses the store in " in line
        assert f"{server.data_dir.resolve()}, not runs/platform" in line
    finally:
        server.stop()


def test_a_second_server_on_a_sqlite_store_is_refused(isolated: Path) -> None:
    data_dir = isolated / "data"
    made_store(data_dir)
    with another_server(4242, data_dir):
        command = [*RLGUARD, "serve", "--data-dir", str(data_dir), "--single-tenant"]
        refused = subprocess.run(
            [*command, "--port", str(unused_port())], capture_output=True, text=True, timeout=120
        )
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert "port 4242) already runs on the store in" in line
    assert "a SQLite store has one server" in line
    assert not (data_dir / "ray-head.json").exists()  # refused before it started anything
