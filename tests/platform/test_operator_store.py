"""An operator's command finds the store the server uses, or refuses in one line: it never makes
a store of its own, takes `RLGUARD_DATA_DIR` as `rlguard serve` does, and, asked for no store in
particular while a server runs on another, names that server's. On a real server, a tenant made
with `RLGUARD_DATA_DIR` set gets a key the server accepts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from live_platform import RLGUARD, LiveServer

from rlguard.errors import InputError
from rlguard.platform.servers import operator_store, recorded, running
from rlguard.platform.store import Store, default_url
from rlguard.ports import unused_port


def made_store(data_dir: Path) -> str:
    data_dir.mkdir(parents=True, exist_ok=True)
    Store(default_url(data_dir)).close()
    return default_url(data_dir)


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A registry of servers of this test's own, no RLGUARD_DATA_DIR, and a scratch cwd."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("RLGUARD_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_no_store_is_made_where_none_is(isolated: Path) -> None:
    with pytest.raises(InputError, match=r"no platform store in runs/platform \(the server"):
        operator_store(None, None)
    with pytest.raises(InputError, match=r"no platform store in .*elsewhere"):
        operator_store(None, isolated / "elsewhere")
    assert not (isolated / "runs").exists() and not (isolated / "elsewhere").exists()


def test_rlguard_data_dir_is_where_the_store_is_found(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = made_store(isolated / "platform-a")
    monkeypatch.setenv("RLGUARD_DATA_DIR", str(isolated / "platform-a"))
    assert operator_store(None, None) == url


def test_a_command_aimed_at_another_store_than_the_running_servers_is_refused(
    isolated: Path,
) -> None:
    served = made_store(isolated / "served")
    made_store(isolated / "runs" / "platform")  # the default, but not the server's
    with recorded(8321, isolated / "served", served):
        assert [r.data_dir for r in running()] == [str(isolated / "served")]
        with pytest.raises(InputError, match=r"running server \(pid \d+, port 8321\) uses"):
            operator_store(None, None)
        assert operator_store(None, isolated / "served") == served
        assert operator_store(None, Path("runs/platform")).endswith("runs/platform/platform.db")
    assert running() == []


def test_a_tenant_made_with_rlguard_data_dir_is_the_servers(tmp_path: Path) -> None:
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
        assert f"uses the store in {server.data_dir.resolve()}" in line
    finally:
        server.stop()
