"""Bad input: a clear 4xx JSON error naming the field and the value, never a 500, and the store
exactly as it was; on the CLI, one line on stderr and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest
import yaml
from sqlalchemy import create_engine, inspect, text

from conftest import RLGUARD, LiveServer, free_port, new_database

pytestmark = pytest.mark.ray

VALID = {"command": "true", "gpus": 1}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def api(request, tmp_path_factory):
    db = (
        new_database(request.getfixturevalue("postgres_url")) if request.param != "sqlite" else None
    )
    server = LiveServer(tmp_path_factory.mktemp("bad"), free_port(), db, ["--gpus", "2"]).start()
    _, key = server.tenant("acme", quota_gpus=1)
    http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    yield server, http
    server.stop()


def _rows(server: LiveServer) -> dict[str, int]:
    engine = create_engine(server.db_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as c:
        tables = inspect(c).get_table_names()
        counts = {t: c.execute(text(f"select count(*) from {t}")).scalar() for t in tables}
    engine.dispose()
    return counts


BAD_CONFIG = {"policy": {"path": "/nonexistent"}, "tasks": [], "output_dir": "x"}
TASK = {"name": "t", "prompts": "/nonexistent", "reward": {"function": "m:f"}}
CASES = [
    ("malformed json", b'{"command": "true", ', 400, None, "not valid JSON"),
    ("unknown field", {**VALID, "gpu": 1}, 422, "gpu", "Extra inputs are not permitted"),
    ("unknown stop field", {**VALID, "stop_policy": {"kk": 1}}, 422, "stop_policy.kk", "Extra"),
    ("negative gpus", {**VALID, "gpus": -1}, 422, "gpus", "(got -1)"),
    ("zero gpus", {**VALID, "gpus": 0}, 422, "gpus", "(got 0)"),
    ("gpus over quota", {**VALID, "gpus": 2}, 422, "gpus", "quota of 1"),
    ("gpus over cluster", {**VALID, "gpus": 5000}, 422, "gpus", "(got 5000)"),
    ("unknown rule", {**VALID, "stop_policy": {"rule": "nope"}}, 422, "stop_policy.rule", "'nope'"),
    ("k of 0", {**VALID, "stop_policy": {"k": 0}}, 422, "stop_policy.k", "(got 0)"),
    ("both bodies", {**VALID, "config": {}}, 422, "body", "exactly one of config or command"),
    ("neither body", {"gpus": 1}, 422, "body", "exactly one of config or command"),
    ("bad config", {"config": BAD_CONFIG}, 422, "config.tasks", "at least one task"),
    (
        "bad config value",
        {"config": {**BAD_CONFIG, "tasks": [TASK], "steps": -3}},
        422,
        "config.steps",
        "(got -3)",
    ),
    (
        "missing input file",
        {"config": {**BAD_CONFIG, "tasks": [TASK]}},
        422,
        "config.policy.path",
        "no such file or directory /nonexistent",
    ),
    ("not an object", [1, 2], 422, "body", "(got [1, 2])"),
    ("oversized", {**VALID, "env": {"X": "a" * (1 << 20)}}, 413, None, "exceeds"),
]


@pytest.mark.parametrize(
    ("name", "body", "status", "param", "says"), CASES, ids=[c[0] for c in CASES]
)
def test_refused_with_a_clear_error_and_nothing_written(api, name, body, status, param, says):
    server, http = api
    before = _rows(server)
    if isinstance(body, bytes):
        response = http.post("/v1/jobs", content=body, headers={"Content-Type": "application/json"})
    else:
        response = http.post("/v1/jobs", json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert says in error["message"], error
    if param is not None:
        assert error["param"] == param, error
    assert _rows(server) == before


def test_a_train_config_gets_the_clis_own_message(api, tmp_path):
    """The API's message for a bad train config is `rlguard train`'s line for the same YAML."""
    _, http = api
    config = {**BAD_CONFIG, "tasks": [{"name": "t", "prompts": "/nonexistent", "k": 0}]}
    api_message = http.post("/v1/jobs", json={"config": config}).json()["error"]["message"]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    cli = subprocess.run([*RLGUARD, "train", str(path)], capture_output=True, text=True)
    assert cli.returncode == 2
    assert cli.stderr.strip() == f"error: {api_message.replace('config: ', f'{path}: ', 1)}"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*RLGUARD, *args], capture_output=True, text=True, env=env, timeout=120)


def test_cli_bad_input_is_one_line_and_exit_2(api, tmp_path):
    server, _ = api
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLGUARD_")}
    key = json.loads(
        _cli(
            "tenants",
            "create",
            "cli",
            "--quota-gpus",
            "1",
            "--data-dir",
            str(server.data_dir),
            *(["--db", server.db] if server.db else []),
            "--json",
        ).stdout
    )["api_key"]
    with_server = {**env, "RLGUARD_URL": server.url, "RLGUARD_API_KEY": key}
    runs = [
        _cli("jobs", "submit", "--command", "true", env=env),  # no RLGUARD_URL
        _cli("jobs", "submit", "--command", "true", "--gpus", "-1", env=with_server),
        _cli("jobs", "get", "job-000000000000000000000000", env=with_server),
        _cli("serve", "--policy", "nope", "--data-dir", str(tmp_path)),
        _cli("serve", "--policy-args", "[1]", "--data-dir", str(tmp_path)),
        _cli(
            "serve",
            "--policy",
            "tiresias",
            "--policy-args",
            '{"tick_s": -1}',
            "--data-dir",
            str(tmp_path),
        ),
        _cli("tenants", "create", "x", "--quota-gpus", "-1", "--data-dir", str(tmp_path)),
        _cli("tenants", "create", "x", "--quota-gpus", "1", "--db", "mysql://nope"),
    ]
    for run in runs:
        assert run.returncode == 2, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
