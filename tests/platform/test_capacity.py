"""Capacity and placement follow Ray: in process, the platform takes Ray's capacity each time it
asks; on a real multi-node cluster on one host (ray_cluster.py: a head without GPUs, worker
nodes of one virtual GPU each) and `rlguard serve --address`, `/v1/cluster` shows the GPUs of the
nodes Ray holds alive as nodes join and die, and a run Ray cannot place goes back to the queue
without having held or billed a GPU."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import pytest
from in_process import in_process_platform
from live_platform import curve_command, wait_for
from sqlalchemy import select

from rlguard.platform.db import Event, Tenant
from rlguard.platform.executor import RunHandle
from rlguard.platform.loop import schedule
from rlguard.platform.schemas import JobCreate
from rlguard.platform.service import PLACE_TIMEOUT_MAX_S, PLACE_TIMEOUT_S, place_timeout
from rlguard.platform.tenants import create_tenant
from rlguard.platform.usage import cluster_view


def test_the_platform_takes_rays_capacity_each_time_it_asks(tmp_path):
    with in_process_platform(tmp_path) as platform:
        tenant_id, _ = create_tenant(platform.store, "acme", 2)
        with platform.store.transaction() as s:
            tenant = s.get(Tenant, tenant_id)
        job_id = platform.submit(tenant, JobCreate.model_validate({"command": "true"}))
        platform.active[job_id].held_until = math.inf  # as after a run Ray could not place
        assert not platform.may_launch(job_id, now=0.0)
        platform.dirty.clear()
        platform.executor.gpus = 1  # a node left
        platform.refresh_capacity()
        view = cluster_view(platform, None)
        assert (view["gpus"], view["gpus_free"]) == (1, 1)
        assert platform.dirty.is_set()  # a pass is due
        assert platform.may_launch(job_id, now=0.0)  # a capacity change ends the hold


def test_the_placement_timeout_doubles_with_each_run_taken_back_unplaced(tmp_path):
    """On a node so loaded that Ray's workers start slower than 15 s, a job is launched again a
    few times with a longer wait, not killed and relaunched every 15 s forever."""
    assert [place_timeout(n) for n in range(6)] == [15, 30, 60, 120, 120, 120]
    with in_process_platform(tmp_path) as platform:
        tenant_id, _ = create_tenant(platform.store, "acme", 2)
        with platform.store.transaction() as s:
            tenant = s.get(Tenant, tenant_id)
        job_id = platform.submit(tenant, JobCreate.model_validate({"command": "true"}))
        active = platform.active[job_id]
        requeued_after = []
        for launched_at in (1000.0, 2000.0, 3000.0):
            platform.launch(job_id)
            active.handle = RunHandle(active.run_id, None, None, None, launched_at=launched_at)
            timeout = place_timeout(len(requeued_after))
            platform.take_back_unplaced(launched_at + timeout - 1)
            assert active.handle is not None  # still waiting to be placed
            platform.take_back_unplaced(launched_at + timeout + 1)
            assert active.handle is None and active.held_until == launched_at + timeout + 31
            with platform.store.transaction() as s:
                last = s.scalars(select(Event).where(Event.job_id == job_id)).all()[-1]
            requeued_after.append((last.data["status"], last.data["reason"]))
        assert requeued_after == [("queued", f"not placed by Ray in {t} s") for t in (15, 30, 60)]
        platform.launch(job_id)
        platform.run_started(job_id, pid=7, node_id="n" * 40)
        assert active.unplaced_runs == 0  # placed at last: the next wait starts at 15 s again


def test_a_run_starting_on_a_node_that_can_hold_it_is_waited_for(tmp_path):
    """Ray holds its lease request at a node with its GPUs and CPUs: its worker is starting (a
    burst of launches on a loaded node takes tens of seconds), taken back only after 120 s."""
    with in_process_platform(tmp_path) as platform:
        tenant_id, _ = create_tenant(platform.store, "acme", 2)
        with platform.store.transaction() as s:
            tenant = s.get(Tenant, tenant_id)
        job_id = platform.submit(tenant, JobCreate.model_validate({"command": "true"}))
        platform.executor.placing = "starting"
        platform.launch(job_id)
        active = platform.active[job_id]
        active.handle = RunHandle(active.run_id, None, None, None, launched_at=1000.0)
        platform.take_back_unplaced(1000.0 + PLACE_TIMEOUT_MAX_S - 1)
        assert active.handle is not None
        platform.take_back_unplaced(1000.0 + PLACE_TIMEOUT_MAX_S + 1)
        assert active.handle is None and active.status == "queued"


def _gpus(client, expected: int, timeout_s: float, what: str) -> float:
    return wait_for(lambda: client.cluster()["gpus"] == expected, timeout_s, what)[1]


@pytest.mark.ray
@pytest.mark.slow
def test_cluster_gpus_follow_the_nodes_ray_holds_alive(ray_cluster, live_server):
    ray_cluster.add_worker("w1")
    server = live_server("--address", ray_cluster.address)
    _, key = server.tenant("acme", quota_gpus=2)
    client = server.client(key)
    _gpus(client, 1, 300, "the first worker never counted")
    ray_cluster.add_worker("w2")
    joined = _gpus(client, 2, 120, "a joining node never counted")
    ray_cluster.kill("w2")
    left = _gpus(client, 1, 120, "a dead node still counted")
    print(f"\nnode joined -> counted: {joined:.1f} s; node SIGKILLed -> gone: {left:.1f} s")
    assert client.cluster()["gpus_free"] == 1


@pytest.mark.ray
@pytest.mark.slow
def test_a_run_ray_cannot_place_goes_back_to_the_queue_unbilled(ray_cluster, live_server):
    ray_cluster.add_worker("w1")
    ray_cluster.add_worker("w2")
    server = live_server("--address", ray_cluster.address)
    _, key = server.tenant("acme", quota_gpus=2)
    client = server.client(key)
    _gpus(client, 2, 300, "the workers never counted")
    # 2 GPUs in the cluster, but one per node: Ray cannot place a run that needs both at once.
    big = client.submit({"command": curve_command([0.5] * 3), "gpus": 2})["id"]

    def requeued():
        states = [e["data"] for e in client.all_events(big) if e["type"] == "state"]
        return states if states[-1]["status"] == "queued" and len(states) > 3 else None

    states, took = wait_for(requeued, PLACE_TIMEOUT_S + 60, "the unplaced run was never requeued")
    print(f"\nunplaced run requeued after {took:.1f} s")
    assert [s["status"] for s in states] == [
        "validating",
        "queued",
        "starting",
        "preempted",
        "queued",
    ]
    assert states[-1]["reason"] == f"not placed by Ray in {PLACE_TIMEOUT_S:.0f} s"
    job = client.job(big)
    assert (job["gpu_hours"], job["started_at"]) == (0, None)
    assert client.usage()["gpu_hours"] == 0
    assert client.http.get("/v1/cluster/occupancy").json()["runs"] == []  # it held no GPU
    assert client.cluster()["gpus_in_use"] == 0

    # Held back after it could not be placed, it leaves the GPUs to a job that fits.
    small = client.submit({"command": curve_command([0.5] * 3), "gpus": 1})["id"]
    assert client.wait(small, timeout_s=120)["status"] == "succeeded"
    client.cancel(big)
    assert client.wait(big, timeout_s=PLACE_TIMEOUT_S + 60)["status"] == "cancelled"
    assert client.job(big)["gpu_hours"] == 0


PLACEMENTS = """
import json, sys, time
import ray
from rlguard.platform.raystate import placement
ray.init(address=sys.argv[1], log_to_driver=False)
while ray.cluster_resources().get("GPU", 0) < 1:
    time.sleep(0.5)
@ray.remote
class Run:
    def ping(self):
        return 1
big = Run.options(num_gpus=2, num_cpus=1).remote()  # no node has 2 GPUs
first = Run.options(num_gpus=1, num_cpus=0.5).remote()
ray.get(first.ping.remote())
second = Run.options(num_gpus=1, num_cpus=0.5).remote()  # waits at w1 for first's GPU
time.sleep(3)
seen = [placement(big, 2, 1), placement(first, 1, 0.5), placement(second, 1, 0.5)]
ray.kill(first)
ray.get(second.ping.remote(), timeout=60)
print(json.dumps(seen + [placement(second, 1, 0.5)]))
"""


@pytest.mark.ray
@pytest.mark.slow
def test_ray_says_which_runs_no_node_can_hold_and_which_wait_at_one(ray_cluster):
    ray_cluster.add_worker("w1", gpus=1, cpus=2)
    command = [sys.executable, "-c", PLACEMENTS, ray_cluster.address]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    big, first, second, second_later = json.loads(done.stdout.splitlines()[-1])
    assert (big, first, second, second_later) == ("unplaced", "created", "starting", "created")


def test_a_burst_of_launches_waits_for_the_runs_starting_before_it(tmp_path):
    with in_process_platform(tmp_path) as platform:
        platform.executor.gpus = 10
        platform.refresh_capacity()
        tenant_id, _ = create_tenant(platform.store, "acme", 10)
        with platform.store.transaction() as s:
            tenant = s.get(Tenant, tenant_id)
        body = JobCreate.model_validate({"command": "true"})
        jobs = [platform.submit(tenant, body) for _ in range(5)]

        def starting() -> list[str]:
            return [j for j in jobs if platform.active[j].status == "starting"]

        with platform.lock:
            schedule(platform, time.time(), round_due=True, max_starting=2)
            schedule(platform, time.time(), round_due=True, max_starting=2)
        assert starting() == jobs[:2]  # in queue order; the other three wait with GPUs free
        platform.dirty.clear()
        platform.run_started(jobs[0], pid=7, node_id="n" * 40)
        assert platform.dirty.is_set()  # a pass is due
        with platform.lock:
            schedule(platform, time.time(), round_due=True, max_starting=2)
        assert starting() == [jobs[1], jobs[2]]
