"""A leader and its standby on one PostgreSQL store (docs/servers.md), as an operator runs them:
a Ray cluster on this host, HAProxy in front with the docs' configuration, jobs reporting through
it. The standby forwards what it is sent; SIGKILLing the leader while its jobs report makes the
standby lead within the lease's bound, reattached to the same runs: every job finishes with each
eval stored once and exactly one run, launched under the first epoch. The killed server, started
again, stands by. A leader paused past its lease (SIGSTOP: a frozen host) is deposed the same way,
and once resumed it exits rather than act: its job is not run twice."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import httpx
import pytest
from doc_blocks import blocks
from live_platform import curve_command, sql_engine, wait_for
from sqlalchemy import text

from rlguard.platform.client import Client
from rlguard.platform.lease import RENEW_S, TTL_S
from rlguard.ports import unused_port

pytestmark = [pytest.mark.ray, pytest.mark.slow]

EVALS = 40  # 0.5 s apart: the jobs report through the takeover and after it
PLACED_S = 600  # until a job reports: on a loaded machine Ray may take minutes to start a run


@pytest.fixture
def balancer(tmp_path):
    """HAProxy with docs/servers.md's configuration; `start(port_a, port_b)` its URL."""
    binary = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the standby test: no `haproxy` (Debian's package)")
        pytest.skip("no `haproxy` binary (Debian's `haproxy` package)")
    (written,) = [b.text for b in blocks("servers.md") if b.text.startswith("global")]
    port, started = unused_port(), []

    def start(port_a: int, port_b: int) -> str:
        config = tmp_path / "haproxy.cfg"
        config.write_text(
            written.replace("127.0.0.1:8320", f"127.0.0.1:{port}")
            .replace("127.0.0.1:8321", f"127.0.0.1:{port_a}")
            .replace("127.0.0.1:8322", f"127.0.0.1:{port_b}")
        )
        log = (tmp_path / "haproxy.log").open("w")
        started.append(subprocess.Popen([binary, "-f", str(config)], stdout=log, stderr=log))
        return f"http://127.0.0.1:{port}"

    yield port, start
    for process in started:
        process.terminate()
        process.wait(timeout=30)


def _role(url: str) -> str | None:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).json()["role"]
    except httpx.TransportError:
        return None


def _live(db: str, job_id: str) -> list[tuple] | None:
    """The job's runs if its last one is live (None once it has ended): any before it are runs
    Ray did not place within the platform's 15 s (a loaded machine), requeued unstarted."""
    runs = _runs(db, job_id)
    assert all(r[2] == "unplaced" for r in runs[:-1]), runs
    return runs if runs[-1][2] is None else None


def _ended_unchanged(db: str, job_id: str, before: list[tuple]) -> None:
    """The live run then is the job's last, ended by its own exit: reattached, never re-run."""
    *unplaced, (attempt, epoch, _) = before
    assert epoch == 1
    assert _runs(db, job_id) == [*unplaced, (attempt, epoch, "exited")]


def _runs(db: str, job_id: str) -> list[tuple]:
    engine = sql_engine(db)
    with engine.connect() as c:
        rows = c.execute(
            text("select attempt, epoch, end_reason from runs where job_id = :j order by attempt"),
            {"j": job_id},
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def _pair(ray_cluster, live_server, db, balancer, tmp_path):
    """A leader and its standby behind the balancer: (a, b, the tenant's client, its key)."""
    ray_cluster.add_worker("w1", gpus=2, cpus=2)
    lb_port, start_balancer = balancer
    shared = [
        "--address",
        ray_cluster.address,
        "--storage",
        str(tmp_path / "artifacts"),
        "--public-url",
        f"http://127.0.0.1:{lb_port}",
    ]
    a = live_server(*shared, db=db)
    b = live_server(*shared, db=db)  # its API answers: forwarded to a
    assert (_role(a.url), _role(b.url)) == ("leader", "standby")
    lb = start_balancer(a.port, b.port)
    _, key = a.tenant("acme", quota_gpus=2)
    client = Client(lb, key)
    wait_for(lambda: client.cluster()["gpus"] == 2, 300, "the worker's GPUs uncounted")
    return a, b, client, key


def _evals(client: Client, job_id: str) -> list[int]:
    return [e["data"]["step"] for e in client.all_events(job_id) if e["type"] == "eval"]


def _reporting(evals: int) -> dict:
    """A command job reporting `evals` rising scores (never stopped), 0.5 s apart."""
    scores = [round(0.3 + 0.01 * i, 2) for i in range(evals)]
    return {"command": curve_command(scores, pause_s=0.5)}


def test_the_standby_takes_over_a_killed_leaders_running_jobs(
    ray_cluster, live_server, fresh_postgres_db, balancer, tmp_path
):
    a, b, client, key = _pair(ray_cluster, live_server, fresh_postgres_db, balancer, tmp_path)
    body = _reporting(EVALS)
    jobs = [client.submit(body)["id"], Client(b.url, key).submit(body)["id"]]
    # the standby forwards a caller's key as sent: the leader refuses as it would directly
    forged = httpx.get(f"{b.url}/v1/jobs", headers={"Authorization": "Bearer rlg_forged"})
    assert forged.status_code == 401
    _, other = a.tenant("other", quota_gpus=1)
    peek = httpx.get(f"{b.url}/v1/jobs/{jobs[0]}", headers={"Authorization": f"Bearer {other}"})
    assert peek.status_code == 404  # another tenant's job, as for one that does not exist
    wait_for(lambda: all(len(_evals(client, j)) >= 3 for j in jobs), PLACED_S, "jobs not reporting")
    # on a loaded machine one job may have run to its end before Ray started the other
    before = {j: runs for j in jobs if (runs := _live(fresh_postgres_db, j))}
    assert before  # the job that reported its third eval last is running
    a.kill()
    killed = time.monotonic()
    wait_for(lambda: _role(b.url) == "leader", 120, "the standby never led")
    takeover_s = time.monotonic() - killed
    print(f"takeover: {takeover_s:.1f} s after the leader's SIGKILL")
    # the lease expires TTL_S after its last renewal, the standby looks every RENEW_S, then it
    # connects to Ray and reattaches: a bound with room for a loaded CI machine
    assert takeover_s < TTL_S + RENEW_S + 30

    done = wait_for(
        lambda: all(client.job(j)["status"] == "succeeded" for j in jobs), 300, "not done"
    )
    assert done
    _, admin = b.tenant("ops", quota_gpus=0, admin=True)
    lb = f"http://127.0.0.1:{balancer[0]}"
    scraped = Client(lb, admin).http.get("/metrics").text  # through the balancer: b answers
    assert "rlguard_control_epoch 2.0" in scraped.splitlines()
    passes = dict(s.rsplit(" ", 1) for s in scraped.splitlines() if not s.startswith("#"))
    assert float(passes["rlguard_scheduling_pass_seconds_count"]) > 0  # the new leader's
    for job_id in jobs:
        assert _evals(client, job_id) == list(range(1, EVALS + 1))  # each stored once, none lost
    for job_id, runs in before.items():
        _ended_unchanged(fresh_postgres_db, job_id, runs)

    a.start()  # the killed server, restarted, stands by behind the new leader
    assert _role(a.url) == "standby"
    late = Client(a.url, key).submit({"command": curve_command([0.5], pause_s=0.1)})["id"]
    wait_for(lambda: client.job(late)["status"] == "succeeded", PLACED_S, "late job not done")
    *unplaced, last = _runs(fresh_postgres_db, late)
    assert last[1:] == (2, "exited") and all(r[1:] == (2, "unplaced") for r in unplaced)


def test_a_paused_leader_is_deposed_and_exits_when_resumed(
    ray_cluster, live_server, fresh_postgres_db, balancer, tmp_path
):
    a, b, client, _ = _pair(ray_cluster, live_server, fresh_postgres_db, balancer, tmp_path)
    job_id = client.submit(_reporting(EVALS))["id"]
    wait_for(lambda: len(_evals(client, job_id)) >= 3, PLACED_S, "the job not reporting")
    before = _live(fresh_postgres_db, job_id)
    assert before is not None  # it has 37 evals to go
    os.kill(a.process.pid, signal.SIGSTOP)  # frozen past its lease, its connections still open
    try:
        _, took = wait_for(lambda: _role(b.url) == "leader", 120, "the standby never led")
        print(f"takeover: {took:.1f} s after the leader froze")
    finally:
        os.kill(a.process.pid, signal.SIGCONT)
    # resumed, it finds it no longer leads before it acts on a job, or on the job's eval report
    # that reached it while it was frozen: it exits, and the report is sent again, to b
    assert a.process.wait(timeout=60) == 1
    assert "this server no longer leads" in a.log.read_text()
    wait_for(lambda: client.job(job_id)["status"] == "succeeded", 300, "the job not done")
    assert _evals(client, job_id) == list(range(1, EVALS + 1))
    _ended_unchanged(fresh_postgres_db, job_id, before)
