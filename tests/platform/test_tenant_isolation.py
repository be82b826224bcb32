"""Tenant isolation, as an attacker would try it: tenant B against tenant A's job, and keys that
should not work. Every attempt is refused exactly as if the job did not exist (404) or the key
were unknown (401), nothing of A's job shows in the answers, and A's job is left untouched."""

from __future__ import annotations

import time

import httpx
import pytest
from sqlalchemy import create_engine, text

from conftest import LiveServer, curve_command, free_port, new_database
from rlguard.platform.store import Store
from rlguard.platform.tenants import issue_key

pytestmark = pytest.mark.ray

TOKEN_JOB = 'echo "$RLGUARD_JOB_TOKEN" > "$RLGUARD_OUTPUT_DIR/token"; sleep 60'


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(request, tmp_path_factory):
    db = (
        new_database(request.getfixturevalue("postgres_url")) if request.param != "sqlite" else None
    )
    server = LiveServer(tmp_path_factory.mktemp("iso"), free_port(), db, ["--gpus", "2"]).start()
    try:
        a_id, a_key = server.tenant("alpha", quota_gpus=1)
        _, b_key = server.tenant("beta", quota_gpus=1)
        _, admin_key = server.tenant("ops", quota_gpus=0, admin=True)
        secret_scores = [0.31, 0.32, 0.33] + [0.34] * 200
        a_job = server.client(a_key).submit({"command": curve_command(secret_scores, 0.3)})
        b_job = server.client(b_key).submit({"command": TOKEN_JOB})
        token_file = server.data_dir / "jobs" / b_job["id"] / "output" / "token"
        deadline = time.monotonic() + 60
        while not (token_file.is_file() and token_file.read_text().strip()):
            assert time.monotonic() < deadline, "B's job never started"
            time.sleep(0.2)
        store = Store(server.db_url)
        with store.transaction() as s:
            expired = issue_key(s, a_id, ["read", "submit"], expires_at=time.time() - 1)
            revoked = issue_key(s, a_id, ["read", "submit"])
        with store.transaction() as s:
            s.execute(
                text("update api_keys set revoked_at = 1 where prefix = :p"), {"p": revoked[:12]}
            )
        store.close()
        yield {
            "server": server,
            "a_job": a_job,
            "a_key": a_key,
            "b_key": b_key,
            "admin_key": admin_key,
            "b_token": token_file.read_text().strip(),
            "expired": expired,
            "revoked": revoked,
        }
    finally:
        server.stop()


def _as(world, key: str | None) -> httpx.Client:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return httpx.Client(base_url=world["server"].url, headers=headers, timeout=30)


def _refused(response: httpx.Response, status: int, world) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert world["a_job"]["command"] not in response.text  # nothing of A's job leaks
    assert world["a_job"]["tenant"] not in response.text


ATTEMPTS = [
    ("get", "GET", "/v1/jobs/{a}", None),
    ("events", "GET", "/v1/jobs/{a}/events", None),
    ("stream", "GET", "/v1/jobs/{a}/events?stream=true", None),
    ("cancel", "POST", "/v1/jobs/{a}/cancel", None),
    ("checkpoints", "GET", "/v1/jobs/{a}/checkpoints", None),
    ("decisions", "GET", "/v1/jobs/{a}/decisions", None),
    ("logs", "GET", "/v1/jobs/{a}/logs", None),
    ("cursor", "GET", "/v1/jobs?after={a}", None),
]


@pytest.mark.parametrize(("name", "method", "path", "body"), ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_another_tenants_job_answers_as_a_missing_one(world, name, method, path, body):
    b = _as(world, world["b_key"])
    response = b.request(method, path.format(a=world["a_job"]["id"]), json=body)
    _refused(response, 404, world)
    missing = b.request(method, path.format(a="job-000000000000000000000000"), json=body)
    assert missing.json()["error"]["code"] == response.json()["error"]["code"]


def test_another_tenants_job_is_not_listed(world):
    listed = _as(world, world["b_key"]).get("/v1/jobs", params={"limit": 1000}).json()
    assert world["a_job"]["id"] not in {j["id"] for j in listed["data"]}
    queue = _as(world, world["b_key"]).get("/v1/cluster").json()["queue"]
    assert all(entry["job"] != world["a_job"]["id"] for entry in queue)


def test_usage_shows_only_the_callers_tenant(world):
    usage = _as(world, world["b_key"]).get("/v1/usage").json()
    assert usage["name"] == "beta" and usage["tenant"] != world["a_job"]["tenant"]


def test_reports_to_another_job_are_refused(world):
    report = {"step": 999, "score": 0.0, "progress": 0.5}
    path = f"/v1/jobs/{world['a_job']['id']}/evals"
    _refused(_as(world, world["b_key"]).post(path, json=report), 401, world)  # an API key
    _refused(_as(world, world["b_token"]).post(path, json=report), 401, world)  # B's job token
    checkpoint = {"step": 999, "path": "/tmp/x"}
    path = f"/v1/jobs/{world['a_job']['id']}/checkpoints"
    _refused(_as(world, world["b_token"]).post(path, json=checkpoint), 401, world)


@pytest.mark.parametrize("key", ["forged", "expired", "revoked", "none", "job_token"])
def test_bad_keys_are_refused(world, key):
    keys = {
        "forged": "rlg_" + "x" * 43,
        "expired": world["expired"],
        "revoked": world["revoked"],
        "none": None,
        "job_token": world["b_token"],
    }
    _refused(_as(world, keys[key]).get("/v1/jobs"), 401, world)


def test_the_victims_job_is_untouched_and_the_operator_sees_it(world):
    a_job = world["a_job"]["id"]
    mine = _as(world, world["a_key"]).get(f"/v1/jobs/{a_job}").json()
    assert mine["status"] in ("queued", "starting", "running")
    events = _as(world, world["a_key"]).get(f"/v1/jobs/{a_job}/events?limit=1000").json()["data"]
    assert all(e["data"].get("step") != 999 for e in events)
    assert not any(e["type"] == "state" and e["data"]["status"] == "stopping" for e in events)
    admin = _as(world, world["admin_key"]).get("/v1/jobs", params={"limit": 1000}).json()
    assert a_job in {j["id"] for j in admin["data"]}
    engine = create_engine(world["server"].db_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as c:
        assert c.execute(text("select count(*) from checkpoints where step = 999")).scalar() == 0
    engine.dispose()
