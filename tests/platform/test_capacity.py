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

from rlguard.platform.db import Tenant
from rlguard.platform.schemas import JobCreate
from rlguard.platform.service import PLACE_TIMEOUT_S
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
