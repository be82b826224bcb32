"""Capacity and placement follow Ray: in process, the platform takes Ray's capacity each time it
asks; on a real multi-node cluster on one host (ray_cluster.py: a head without GPUs, worker
nodes of one virtual GPU each) and `rlguard serve --address`, `/v1/cluster` shows the GPUs of the
nodes Ray holds alive as nodes join and die, and a run Ray cannot place goes back to the queue
without having held or billed a GPU."""

from __future__ import annotations

import math

import pytest
from in_process import in_process_platform
from live_platform import curve_command, wait_for
from sqlalchemy import select

from rlguard.platform.db import Event, Tenant
from rlguard.platform.executor import RunHandle
from rlguard.platform.schemas import JobCreate
from rlguard.platform.service import PLACE_TIMEOUT_S, place_timeout
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
