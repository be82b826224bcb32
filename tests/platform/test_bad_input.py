"""Bad input, on one live server per store (SQLite and PostgreSQL): every refusal is a 4xx (never a
500) with the body `{"error": {"message", "type", "param", "code"}}` whose message names the field
and the value given, and the store is exactly as it was (the rows of every table counted before
and after). A bad train config gets the very line `rlguard train` prints for the same YAML. On the
command line, bad input is one line on stderr, `error: ...`, and exit code 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from live_platform import RLGUARD, LiveServer, new_database, row_counts, wait_for

from rlguard.ports import unused_port

pytestmark = pytest.mark.ray

CLUSTER_GPUS = 2
OK = {"command": "true"}
# The platform replaces a train config's output_dir with the job's own directory, so a config
# needs none; `rlguard train` does (without one it says `output_dir: Field required` first).
# Missing, but inside the jobs' view (the tests' mount), so what fails is that it is missing.
MISSING = str(Path(__file__).resolve().parent / "nonexistent")
NO_TASKS = {"policy": {"path": MISSING}, "tasks": []}
TASK = {"name": "t", "prompts": MISSING, "reward": {"function": "m:f"}}
BAD_STEPS = {**NO_TASKS, "tasks": [TASK], "steps": -3}
MISSING_FILE = {**NO_TASKS, "tasks": [TASK]}
OUTSIDE_VIEW = {"policy": {"path": "/etc"}, "tasks": [TASK]}  # exists, but not the job's
# B's token job: dump its environment (its job token) where the test can read it, then idle.
ENV_JOB = 'env > "$RLGUARD_OUTPUT_DIR/env"; sleep 600'


def _http(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def api(request, tmp_path_factory) -> Iterator[dict[str, Any]]:
    """One server (2 virtual GPUs) per store, tenants `small` (quota 1) and `big` (quota 8), and one
    idle job of `big`'s whose token the report tests use. (PostgreSQL: a new database on the
    session's server, what `fresh_postgres_db` gives, taken through `postgres_url` because this
    fixture is module-scoped.)"""
    db = None
    if request.param == "postgresql":
        db = new_database(request.getfixturevalue("postgres_url"))
    server = LiveServer(
        tmp_path_factory.mktemp("bad_input"),
        unused_port(),
        db,
        ["--gpus", str(CLUSTER_GPUS), "--grace-s", "5", "--log-format", "json"],
    )
    clients: list[httpx.Client] = []
    try:
        server.start()
        _, small_key = server.tenant("small", quota_gpus=1)
        _, big_key = server.tenant("big", quota_gpus=8)
        small, big = _http(server.url, small_key), _http(server.url, big_key)
        clients += [small, big]
        job = big.post("/v1/jobs", json={"command": ENV_JOB}).json()
        env_file = server.data_dir / "jobs" / job["id"] / "output" / "env"
        deadline = time.monotonic() + 120
        while "RLGUARD_JOB_TOKEN=" not in (env_file.read_text() if env_file.is_file() else ""):
            assert time.monotonic() < deadline, "the token job never started"
            time.sleep(0.2)
        # The run's actor reports the spawn (the `running` event) on its own, maybe after the
        # process wrote its environment: until then the store is still changing.
        wait_for(
            lambda: big.get(f"/v1/jobs/{job['id']}").json()["status"] == "running",
            60,
            "the token job never reported running",
        )
        env = dict(line.partition("=")[::2] for line in env_file.read_text().splitlines())
        reporter = _http(server.url, env["RLGUARD_JOB_TOKEN"])
        clients.append(reporter)
        yield {
            "server": server,
            "small": small,
            "big": big,
            "big_key": big_key,
            "job": job["id"],
            "reporter": reporter,
        }
    finally:
        for client in clients:
            client.close()
        server.stop()


def _post(client: httpx.Client, path: str, body: Any) -> httpx.Response:
    if isinstance(body, bytes):
        return client.post(path, content=body, headers={"Content-Type": "application/json"})
    return client.post(path, json=body)


def _refused(response: httpx.Response, status: int, param: str | None, says: list[str]) -> None:
    """A 4xx of this status in the API's error shape; the message, one line, says each of `says`
    (the field and the value given)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert error["type"] == "invalid_request_error" and error["param"] == param, error
    assert "\n" not in error["message"], error
    for part in says:
        assert part in error["message"], error


# (name, tenant, body, status, param, what the message must say)
SUBMISSIONS = [
    ("malformed_json", "big", b'{"command": "true", ', 400, None, ["not valid JSON"]),
    ("not_an_object", "big", b"[1, 2]", 422, "body", ["body", "(got [1, 2])"]),
    ("null_body", "big", b"null", 422, "body", ["body", "(got null)"]),
    ("unknown_field", "big", {**OK, "gpu": 1}, 422, "gpu", ["gpu", "not permitted", "(got 1)"]),
    (
        "unknown_stop_field",
        "big",
        {**OK, "stop_policy": {"kk": 5}},
        422,
        "stop_policy.kk",
        ["stop_policy.kk", "not permitted", "(got 5)"],
    ),
    (
        "train_config_no_tasks",
        "big",
        {"config": NO_TASKS},
        422,
        "config.tasks",
        ["config: tasks: at least one task is needed"],
    ),
    (
        "train_config_bad_value",
        "big",
        {"config": BAD_STEPS},
        422,
        "config.steps",
        ["config: steps:", "(got -3)"],
    ),
    (
        "train_config_missing_file",
        "big",
        {"config": MISSING_FILE},
        422,
        "config.policy.path",
        [f"config: policy.path: no such file or directory {MISSING}"],
    ),
    (
        "train_config_path_outside_the_view",
        "big",
        {"config": OUTSIDE_VIEW},
        422,
        "config.policy.path",
        ["config: policy.path: '/etc' is outside this job's view"],
    ),
    (
        "train_config_unknown_stage",
        "big",
        {"config": {"stage": "rm"}},
        422,
        "config.stage",
        ["stage", "'rm'"],
    ),
    ("train_config_not_a_mapping", "big", {"config": [1]}, 422, "config", ["config", "(got [1])"]),
    (
        "train_config_with_env",
        "big",
        {"config": MISSING_FILE, "env": {"A": "b"}},
        422,
        "body",
        ["kind and env are for command jobs"],
    ),
    ("gpus_negative", "big", {**OK, "gpus": -1}, 422, "gpus", ["gpus", "(got -1)"]),
    ("gpus_zero", "big", {**OK, "gpus": 0}, 422, "gpus", ["gpus", "(got 0)"]),
    (
        "gpus_over_quota",
        "small",
        {**OK, "gpus": 2},
        422,
        "gpus",
        ["gpus: 2 exceeds tenant 'small''s quota of 1"],
    ),
    (
        "gpus_over_cluster",
        "big",
        {**OK, "gpus": CLUSTER_GPUS + 1},
        422,
        "gpus",
        [f"gpus: {CLUSTER_GPUS + 1} exceeds the cluster's {CLUSTER_GPUS} GPUs"],
    ),
    ("gpus_over_any_job", "big", {**OK, "gpus": 5000}, 422, "gpus", ["gpus", "(got 5000)"]),
    ("gpus_not_a_number", "big", {**OK, "gpus": "two"}, 422, "gpus", ["gpus", '(got "two")']),
    ("cpus_nan", "big", b'{"command": "true", "cpus": NaN}', 422, "cpus", ["cpus", "NaN"]),
    (
        "unknown_stop_rule",
        "big",
        {**OK, "stop_policy": {"rule": "nope"}},
        422,
        "stop_policy.rule",
        ["stop_policy.rule: unknown rule 'nope'"],
    ),
    (
        "stop_k_zero",
        "big",
        {**OK, "stop_policy": {"k": 0}},
        422,
        "stop_policy.k",
        ["stop_policy.k", "(got 0)"],
    ),
    (
        "stop_min_delta_negative",
        "big",
        {**OK, "stop_policy": {"min_delta": -0.5}},
        422,
        "stop_policy.min_delta",
        ["stop_policy.min_delta", "(got -0.5)"],
    ),
    (
        "both_config_and_command",
        "big",
        {**OK, "config": MISSING_FILE},
        422,
        "body",
        ["exactly one of config or command"],
    ),
    ("neither", "big", {"gpus": 1}, 422, "body", ["exactly one of config or command"]),
    ("empty_command", "big", {"command": ""}, 422, "command", ["command", '(got "")']),
    ("bad_kind", "big", {**OK, "kind": "RLHF!"}, 422, "kind", ["kind", '(got "RLHF!")']),
    ("env_not_a_string", "big", {**OK, "env": {"A": 1}}, 422, "env.A", ["env.A", "(got 1)"]),
    (
        "oversized",
        "big",
        {**OK, "env": {"X": "a" * (1 << 20)}},
        413,
        None,
        ["exceeds 1048576 bytes"],
    ),
]


@pytest.mark.parametrize(
    ("name", "tenant", "body", "status", "param", "says"),
    SUBMISSIONS,
    ids=[s[0] for s in SUBMISSIONS],
)
def test_a_bad_submission_is_a_clear_4xx_and_writes_nothing(
    api, name, tenant, body, status, param, says
):
    before = row_counts(api["server"].db_url)
    _refused(_post(api[tenant], "/v1/jobs", body), status, param, says)
    assert row_counts(api["server"].db_url) == before


TRAIN_CONFIGS = {"no_tasks": NO_TASKS, "bad_value": BAD_STEPS, "missing_file": MISSING_FILE}


@pytest.fixture(scope="module")
def train_cli(tmp_path_factory) -> dict[str, tuple[Path, subprocess.CompletedProcess]]:
    """`rlguard train` on each config as YAML (once for both stores): (the file, the run). The
    YAML gets an output_dir, which the platform sets itself; without one the CLI complains of
    that first (`output_dir: Field required`)."""
    runs = {}
    for name, config in TRAIN_CONFIGS.items():
        path = tmp_path_factory.mktemp("train") / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**config, "output_dir": str(path.parent / "out")}))
        runs[name] = path, _cli("train", str(path))
    return runs


@pytest.mark.parametrize("name", TRAIN_CONFIGS)
def test_a_bad_train_config_gets_the_clis_own_line(api, train_cli, name):
    """The API's message is `rlguard train`'s stderr line for the same config, but for the
    source it names (`config` in the API, the YAML file on the command line)."""
    before = row_counts(api["server"].db_url)
    response = api["big"].post("/v1/jobs", json={"config": TRAIN_CONFIGS[name]})
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert message.startswith("config: ")
    path, cli = train_cli[name]
    assert cli.returncode == 2, cli.stderr
    assert cli.stderr.splitlines() == [f"error: {path}: {message.removeprefix('config: ')}"]
    assert row_counts(api["server"].db_url) == before


REPORTS = [
    ("eval_step_negative", "evals", {"step": -1, "score": 0.5, "progress": 0.1}, "step"),
    ("eval_progress_over_1", "evals", {"step": 1, "score": 0.5, "progress": 1.5}, "progress"),
    ("eval_score_missing", "evals", {"step": 1, "progress": 0.5}, "score"),
    ("eval_unknown_field", "evals", {"step": 1, "score": 0.5, "progress": 0.1, "x": 1}, "x"),
    ("checkpoint_no_path", "checkpoints", {"step": 1, "path": ""}, "path"),
    (
        "checkpoint_nan_metric",
        "checkpoints",
        b'{"step": 1, "path": "p", "metrics": {"m": NaN}}',
        "metrics.m",
    ),
    (  # one record's JSON stays within 4 KiB (the store's per-job allowance bounds the sum)
        "warning_data_over_4_kib",
        "warnings",
        {"code": "big", "message": "m", "data": {"blob": "x" * 5000}},
        "data",
    ),
    (
        "checkpoint_metrics_over_4_kib",
        "checkpoints",
        {"step": 1, "path": "p", "metrics": {f"m{i}": 0.5 for i in range(500)}},
        "metrics",
    ),
]


@pytest.mark.parametrize(("name", "what", "body", "param"), REPORTS, ids=[r[0] for r in REPORTS])
def test_a_bad_report_is_a_clear_4xx_and_writes_nothing(api, name, what, body, param):
    before = row_counts(api["server"].db_url)
    response = _post(api["reporter"], f"/v1/jobs/{api['job']}/{what}", body)
    _refused(response, 422, param, [param])
    assert row_counts(api["server"].db_url) == before


# ----- bodies and reports that once got past validation -----------------------------------


def test_a_chunked_oversized_body_is_413(api):
    before = row_counts(api["server"].db_url)

    def chunks() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding: chunked
        yield b'{"command": "true", "env": {"X": "'
        for _ in range(12):
            yield b"a" * 100_000
        yield b'"}}'

    response = api["big"].post(
        "/v1/jobs", content=chunks(), headers={"Content-Type": "application/json"}
    )
    _refused(response, 413, None, ["exceeds 1048576 bytes"])
    assert row_counts(api["server"].db_url) == before


def test_an_integer_too_long_to_parse_is_invalid_json(api):
    before = row_counts(api["server"].db_url)
    body = b'{"command": "true", "gpus": 1' + b"0" * 5000 + b"}"
    _refused(_post(api["big"], "/v1/jobs", body), 400, None, ["not valid JSON"])
    assert row_counts(api["server"].db_url) == before


# (name, report, body, param, value): a report the store cannot hold. Checkpoint.step is an
# INTEGER (64 bits on SQLite, 32 on PostgreSQL) and PostgreSQL text cannot hold a NUL character.
UNSTORABLE = [
    ("eval_step_2_63", "evals", {"step": 2**63, "score": 0.5, "progress": 0.1, "checkpoint": "c"}),
    ("eval_step_2_31", "evals", {"step": 2**31, "score": 0.5, "progress": 0.1, "checkpoint": "c"}),
    ("checkpoint_step_2_63", "checkpoints", {"step": 2**63, "path": "p"}),
    ("checkpoint_step_2_31", "checkpoints", {"step": 2**31, "path": "p"}),
    ("checkpoint_nul_in_path", "checkpoints", {"step": 7, "path": "p\x00q"}),
    (
        "eval_nul_in_checkpoint",
        "evals",
        {"step": 8, "score": 0.5, "progress": 0.1, "checkpoint": "\x00"},
    ),
]


@pytest.mark.parametrize(("name", "what", "body"), UNSTORABLE, ids=[u[0] for u in UNSTORABLE])
def test_a_report_the_store_cannot_hold_is_refused(api, name, what, body):
    before = row_counts(api["server"].db_url)
    response = _post(api["reporter"], f"/v1/jobs/{api['job']}/{what}", body)
    param = "step" if "step" in name else ("path" if what == "checkpoints" else "checkpoint")
    _refused(response, 422, param, [param])
    assert row_counts(api["server"].db_url) == before


@pytest.mark.parametrize(
    "body",
    [{"command": "echo a\x00b"}, {**OK, "env": {"A=B": "x"}}, {**OK, "env": {"A": "x\x00"}}],
    ids=["nul_in_command", "equals_in_env_name", "nul_in_env_value"],
)
def test_a_command_that_cannot_start_is_refused(api, body):
    before = row_counts(api["server"].db_url)
    response = api["big"].post("/v1/jobs", json=body)
    if response.status_code == 201:  # leave the shared server as it was: no job looping on
        job = response.json()["id"]
        api["big"].post(f"/v1/jobs/{job}/cancel")
        deadline = time.monotonic() + 60
        while api["big"].get(f"/v1/jobs/{job}").json()["finished_at"] is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job} did not end when cancelled")
            time.sleep(0.2)
    param = "command" if "command" in body and body["command"] != "true" else "env"
    _refused(response, 422, param, [param])
    assert row_counts(api["server"].db_url) == before


# ----- the command line ----------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*RLGUARD, *args], capture_output=True, text=True, env=env, timeout=120)


def _one_error_line(run: subprocess.CompletedProcess, *says: str) -> None:
    assert run.returncode == 2, (run.returncode, run.stderr)
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    for part in says:
        assert part in lines[0], run.stderr


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RLGUARD_")}


def test_cli_bad_input_without_a_server_is_one_line_and_exit_2(tmp_path: Path):
    _one_error_line(_cli("jobs", "submit", "--command", "true", env=_clean_env()), "RLGUARD_URL")
    _one_error_line(
        _cli("serve", "--policy", "nope", "--data-dir", str(tmp_path)), "--policy", "'nope'"
    )
    _one_error_line(
        _cli("serve", "--policy-args", "[1]", "--data-dir", str(tmp_path)), "--policy-args", "[1]"
    )
    _one_error_line(
        _cli("serve", "--log-format", "xml", "--data-dir", str(tmp_path)), "--log-format", "'xml'"
    )
    assert not (tmp_path / "ray_head.json").exists() and not any(tmp_path.iterdir())


def test_the_server_logs_json_lines_when_asked(api):
    lines = api["server"].log.read_text().splitlines()
    serving = [json.loads(line) for line in lines if '"serving on' in line]
    assert len(serving) == 1 and serving[0]["logger"] == "rlguard.platform"
    assert serving[0]["level"] == "INFO" and serving[0]["message"].startswith("serving on http")


def test_cli_refusals_against_the_server_are_one_line_and_exit_2(api):
    server = api["server"]
    before = row_counts(server.db_url)
    env = {**_clean_env(), "RLGUARD_URL": server.url, "RLGUARD_API_KEY": api["big_key"]}
    _one_error_line(
        _cli("jobs", "submit", "--command", "true", "--gpus", "-1", env=env),
        "the platform refused it (422)",
        "gpus",
        "(got -1)",
    )
    store = ["--data-dir", str(server.data_dir), *(["--db", server.db] if server.db else [])]
    _one_error_line(
        _cli("tenants", "create", "x", "--quota-gpus", "-1", *store), "--quota-gpus", "(got -1)"
    )
    _one_error_line(
        _cli("tenants", "create", "small", "--quota-gpus", "1", *store), "'small' exists already"
    )
    assert row_counts(server.db_url) == before
