"""Tenant isolation, attempted the way an attacker would: tenant B against tenant A's running job,
and keys that must not work, on one live server per store (SQLite and PostgreSQL).

Every attempt is answered exactly as the same request for a job that does not exist (404
`job_not_found`), or as an unknown key (401); no answer carries anything of A's job (its command,
its log line, its checkpoint paths, its tenant id); and afterwards A's job is still running with
exactly the events, checkpoints and decisions it had, and no table of the store has a row more.
An admin key sees both tenants' jobs.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from live_platform import LiveServer, curve_command, new_database, row_counts
from sqlalchemy import select

from rlguard.platform.db import ApiKey
from rlguard.platform.keys import digest
from rlguard.platform.store import Store
from rlguard.platform.tenants import issue_key
from rlguard.ports import unused_port

pytestmark = pytest.mark.ray

MISSING = "job-" + "0" * 24  # a well-formed id no job has
REPORT = {"step": 999, "score": 0.0, "progress": 0.5}
CHECKPOINT = {"step": 999, "path": "/tmp/planted"}
WARNING = {"code": "no_eval_yet", "message": "forged by another tenant's job"}
STEP = {"step": 999, "gen_s": 1.0, "update_actor_s": 1.0}  # forged timings for A's measured
DELIVERY = {
    "best_step": 1,
    "best_score": 0.9,
    "step": 1,
    "path": "x",
    "rule": "at_best_eval",
    "reason": "forged by another tenant's job",
}
# B's job: dump its environment (its job token with it) where the test can read it, then idle.
ENV_JOB = 'env > "$RLGUARD_OUTPUT_DIR/env"; sleep 600'


def _wait_for(what: str, check, timeout_s: float = 120.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def _http(url: str, key: str | None) -> httpx.Client:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return httpx.Client(base_url=url, headers=headers, timeout=30)


def _job_state(a: httpx.Client, job_id: str) -> dict[str, Any]:
    """What A itself sees of its job: every event, checkpoint and decision."""
    return {
        path: a.get(f"/v1/jobs/{job_id}/{path}", params=params).json()["data"]
        for path, params in (("events", {"limit": 1000}), ("checkpoints", {}), ("decisions", {}))
    }


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(request, tmp_path_factory) -> Iterator[dict[str, Any]]:
    """One server per store: A's job reported three evals with checkpoints, logged its secret and
    idles (running); B's job idles with its token dumped; A also has an expired and a revoked key.
    (PostgreSQL: a new database on the session's server, what `fresh_postgres_db` gives, taken
    here through `postgres_url` because this fixture is module-scoped.)"""
    db = None
    if request.param == "postgresql":
        db = new_database(request.getfixturevalue("postgres_url"))
    server = LiveServer(
        tmp_path_factory.mktemp("isolation"), unused_port(), db, ["--gpus", "2", "--grace-s", "5"]
    )
    clients: list[httpx.Client] = []
    try:
        server.start()
        a_tenant, a_key = server.tenant("alpha", quota_gpus=1)
        b_tenant, b_key = server.tenant("beta", quota_gpus=1)
        _, admin_key = server.tenant("ops", quota_gpus=0, admin=True)
        a, b, admin = (_http(server.url, k) for k in (a_key, b_key, admin_key))
        clients += [a, b, admin]

        secret = f"alpha-secret-{secrets.token_hex(8)}"
        a_command = f"{curve_command([0.1, 0.2, 0.3], 0.05)} && echo {secret} && sleep 600"
        a_job = a.post("/v1/jobs", json={"command": a_command}).json()
        b_job = b.post("/v1/jobs", json={"command": ENV_JOB}).json()
        _wait_for(
            "A's job to log its secret",
            lambda: secret in a.get(f"/v1/jobs/{a_job['id']}/logs").text,
        )
        env_file = server.data_dir / "jobs" / b_job["id"] / "output" / "env"

        def b_token() -> str | None:
            lines = env_file.read_text().splitlines() if env_file.is_file() else []
            found = [v for k, _, v in (x.partition("=") for x in lines) if k == "RLGUARD_JOB_TOKEN"]
            return found[0] if found else None

        token = _wait_for("B's job token", b_token)
        # A control: B's token is live (for B's own job), so its refusals on A's job below are
        # about the job, not a dead token.
        own = httpx.post(
            f"{server.url}/v1/jobs/{b_job['id']}/evals",
            json={"step": 1, "score": 0.5, "progress": 0.1},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert own.status_code == 200, own.text

        store = Store(server.db_url)  # keys of A's tenant that must no longer work
        try:
            with store.transaction() as s:
                expired = issue_key(s, a_tenant, ["read", "submit"], expires_at=time.time() - 60)
                revoked = issue_key(s, a_tenant, ["read", "submit"])
            with store.transaction() as s:
                s.scalar(
                    select(ApiKey).where(ApiKey.digest == digest(revoked))
                ).revoked_at = time.time()
        finally:
            store.close()

        state = _job_state(a, a_job["id"])
        assert len(state["checkpoints"]) == 3 and len(state["decisions"]) == 3
        assert a.get(f"/v1/jobs/{a_job['id']}").json()["status"] == "running"
        # B's actor reports the spawn on its own: the rows below must not move after this.
        _wait_for(
            "B's job to be running",
            lambda: b.get(f"/v1/jobs/{b_job['id']}").json()["status"] == "running",
        )
        yield {
            "server": server,
            "a_job": a_job["id"],
            "b_job": b_job["id"],
            "a_tenant": a_tenant,
            "b_tenant": b_tenant,
            # what must never show in B's answers: A's command, log line, paths and tenant id
            "secrets": [a_command, secret, str(server.data_dir / "jobs" / a_job["id"]), a_tenant],
            "a": a,
            "b": b,
            "admin": admin,
            "keys": {
                "forged": "rlg_" + secrets.token_urlsafe(32),
                "expired": expired,
                "revoked": revoked,
                "job_token": token,
            },
            "a_state": state,
            "rows": row_counts(server.db_url),
        }
    finally:
        for client in clients:
            client.close()
        server.stop()


def _no_leak(world, response: httpx.Response) -> None:
    for secret in world["secrets"]:
        assert secret not in response.text, f"{secret!r} leaked: {response.text[:500]}"


def _error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


def _send(client: httpx.Client, method: str, path: str, body: Any) -> httpx.Response:
    """One request; a stream that would open (a 200) is not read, only reported."""
    with client.stream(method, path, json=body) as response:
        if response.status_code < 400:
            return httpx.Response(response.status_code, text="<an open stream>")
        response.read()
        return response


# (name, method, path, body, who): who is B's API key, or B's job token for the job's reports.
ATTEMPTS = [
    ("get", "GET", "/v1/jobs/{job}", None, "key"),
    ("events", "GET", "/v1/jobs/{job}/events", None, "key"),
    ("events_after", "GET", "/v1/jobs/{job}/events?after=1&limit=5", None, "key"),
    ("stream", "GET", "/v1/jobs/{job}/events?stream=true", None, "key"),
    ("cancel", "POST", "/v1/jobs/{job}/cancel", None, "key"),
    ("pause", "POST", "/v1/jobs/{job}/pause", None, "key"),
    ("resume", "POST", "/v1/jobs/{job}/resume", None, "key"),
    ("checkpoints", "GET", "/v1/jobs/{job}/checkpoints", None, "key"),
    ("decisions", "GET", "/v1/jobs/{job}/decisions?stops_only=false", None, "key"),
    ("logs", "GET", "/v1/jobs/{job}/logs?tail=1000", None, "key"),
    ("list_after", "GET", "/v1/jobs?after={job}", None, "key"),
    ("evals_with_api_key", "POST", "/v1/jobs/{job}/evals", REPORT, "key"),
    ("evals_with_own_token", "POST", "/v1/jobs/{job}/evals", REPORT, "token"),
    ("checkpoint_with_own_token", "POST", "/v1/jobs/{job}/checkpoints", CHECKPOINT, "token"),
    ("warning_with_own_token", "POST", "/v1/jobs/{job}/warnings", WARNING, "token"),
    ("delivery_with_own_token", "POST", "/v1/jobs/{job}/delivery", DELIVERY, "token"),
    ("steps_with_api_key", "POST", "/v1/jobs/{job}/steps", STEP, "key"),
    ("steps_with_own_token", "POST", "/v1/jobs/{job}/steps", STEP, "token"),
]


def _attempt(world, method: str, path: str, body: Any, who: str, job: str) -> httpx.Response:
    if who == "key":
        return _send(world["b"], method, path.format(job=job), body)
    with _http(world["server"].url, world["keys"]["job_token"]) as as_job:
        return _send(as_job, method, path.format(job=job), body)


@pytest.mark.parametrize(
    ("name", "method", "path", "body", "who"), ATTEMPTS, ids=[a[0] for a in ATTEMPTS]
)
def test_another_tenants_job_answers_exactly_as_a_missing_one(world, name, method, path, body, who):
    real = _attempt(world, method, path, body, who, world["a_job"])
    missing = _attempt(world, method, path, body, who, MISSING)
    expected = 401 if who == "token" or name.endswith("_with_api_key") else 404  # reports
    assert real.status_code == missing.status_code == expected, real.text
    _no_leak(world, real)
    error, reference = _error(real), _error(missing)
    assert error["code"] == ("job_not_found" if expected == 404 else "invalid_job_token")
    assert error == {
        k: v.replace(MISSING, world["a_job"]) if isinstance(v, str) else v
        for k, v in reference.items()
    }


def test_another_tenants_job_is_not_listed(world):
    b = world["b"]
    for params in ({"limit": 1000}, {"limit": 1000, "status": "running"}):
        listed = b.get("/v1/jobs", params=params)
        assert listed.status_code == 200
        _no_leak(world, listed)
        assert [j["id"] for j in listed.json()["data"]] == [world["b_job"]]
    cluster = b.get("/v1/cluster")
    _no_leak(world, cluster)
    assert all(entry["tenant"] == world["b_tenant"] for entry in cluster.json()["queue"])


def _streamed_jobs(client: httpx.Client, path: str, events: int) -> set[str]:
    """The jobs of the first `events` server-sent events of `path`."""
    jobs: set[str] = set()
    with client.stream("GET", path) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:"):
                jobs.add(json.loads(line[5:])["job"])
                events -= 1
                if not events:
                    return jobs
    return jobs


def test_the_event_feed_holds_only_the_callers_jobs(world):
    b, admin = world["b"], world["admin"]
    for order in ("asc", "desc"):
        feed = b.get("/v1/events", params={"limit": 1000, "order": order})
        _no_leak(world, feed)
        assert {e["job"] for e in feed.json()["data"]} == {world["b_job"]}
    b_events = len(b.get("/v1/events", params={"limit": 1000}).json()["data"])
    assert _streamed_jobs(b, "/v1/events?stream=true", b_events) == {world["b_job"]}
    everything = admin.get("/v1/events", params={"limit": 1000}).json()["data"]
    assert {world["a_job"], world["b_job"]} <= {e["job"] for e in everything}


def test_usage_shows_only_the_callers_tenant(world):
    response = world["b"].get("/v1/usage")
    assert response.status_code == 200
    _no_leak(world, response)
    usage = response.json()
    assert (usage["tenant"], usage["name"]) == (world["b_tenant"], "beta")
    assert usage["jobs"] == {"running": 1} and usage["gpus_in_use"] == 1
    everyone = world["b"].get("/v1/usage/tenants")  # every tenant's usage: admin keys only
    assert everyone.status_code == 403 and _error(everyone)["code"] == "insufficient_scope"
    _no_leak(world, everyone)
    listed = world["admin"].get("/v1/usage/tenants").json()["data"]
    assert {t["name"] for t in listed} == {"alpha", "beta", "ops"}


KEYS = ["forged", "expired", "revoked", "job_token", "none", "basic_scheme", "bearer_no_key"]


def _headers(world, key: str) -> dict[str, str]:
    if key == "none":
        return {}
    if key == "basic_scheme":  # A's real key, but not as a Bearer token
        return {"Authorization": f"Basic {world['a'].headers['authorization'].split()[1]}"}
    if key == "bearer_no_key":
        return {"Authorization": "Bearer"}
    return {"Authorization": f"Bearer {world['keys'][key]}"}


@pytest.mark.parametrize("key", KEYS)
def test_bad_keys_are_refused_as_unknown(world, key):
    """Wherever it is sent, a bad key is a 401 (never a 404 that would say more), on the job
    list, on A's job and on a cancel of A's job."""
    code = "missing_api_key" if key in ("none", "basic_scheme", "bearer_no_key") else None
    with httpx.Client(base_url=world["server"].url, headers=_headers(world, key)) as client:
        for method, path in (
            ("GET", "/v1/jobs"),
            ("GET", f"/v1/jobs/{world['a_job']}"),
            ("GET", f"/v1/jobs/{world['a_job']}/events?stream=true"),
            ("GET", "/v1/events?stream=true"),
            ("POST", f"/v1/jobs/{world['a_job']}/cancel"),
            ("GET", "/v1/usage"),
        ):
            response = _send(client, method, path, None)
            assert response.status_code == 401, (method, path, response.text)
            _no_leak(world, response)
            assert _error(response)["code"] == (code or "invalid_api_key")


def test_admin_sees_every_tenants_jobs(world):
    admin = world["admin"]
    listed = {j["id"]: j for j in admin.get("/v1/jobs", params={"limit": 1000}).json()["data"]}
    assert {world["a_job"], world["b_job"]} <= listed.keys()
    assert listed[world["a_job"]]["tenant"] == world["a_tenant"]
    assert admin.get(f"/v1/jobs/{world['a_job']}/events").status_code == 200
    queue = admin.get("/v1/cluster").json()
    assert queue["running"] == 2


def test_the_victims_job_is_untouched(world):
    """After every attempt above (made again here, so this holds however the tests are picked),
    A's job still runs with exactly what it had, and the store has no row more or less."""
    for _, method, path, body, who in ATTEMPTS:
        _attempt(world, method, path, body, who, world["a_job"])
    for key in KEYS:
        with httpx.Client(base_url=world["server"].url, headers=_headers(world, key)) as client:
            client.post(f"/v1/jobs/{world['a_job']}/cancel")
    job = world["a"].get(f"/v1/jobs/{world['a_job']}").json()
    assert job["status"] == "running" and job["stop_reason"] is None and job["attempts"] == 1
    assert _job_state(world["a"], world["a_job"]) == world["a_state"]
    assert row_counts(world["server"].db_url) == world["rows"]
