"""What a tenant has used and what EvalStop gave back to the cluster, and the cluster's state."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlguard.platform import states
from rlguard.platform.db import Job, Run, Tenant
from rlguard.platform.service import Platform


def usage_view(s: Session, platform: Platform, tenant: Tenant) -> dict[str, Any]:
    now = time.time()
    jobs = s.scalars(select(Job).where(Job.tenant_id == tenant.id)).all()
    running = s.execute(  # billed from when the process started: a run never placed costs 0
        select(Run.running_at, Job.gpus)
        .join(Job, Job.id == Run.job_id)
        .where(Job.tenant_id == tenant.id, Run.ended_at.is_(None), Run.running_at.is_not(None))
    ).all()
    gpu_seconds = sum(j.gpu_seconds for j in jobs) + sum(g * (now - t) for t, g in running)
    in_use = sum(
        a.gpus
        for a in list(platform.active.values())  # one copy: submissions change it meanwhile
        if a.tenant_id == tenant.id and a.status in states.ON_GPUS
    )
    return {
        "object": "usage",
        "tenant": tenant.id,
        "name": tenant.name,
        "quota_gpus": tenant.quota_gpus,
        "weight": tenant.weight,
        "gpus_in_use": in_use,
        "jobs": dict(Counter(j.status for j in jobs)),
        "gpu_hours": round(gpu_seconds / 3600, 6),
        "gpu_hours_freed": round(sum(j.gpu_hours_freed for j in jobs), 6),
    }


def cluster_view(platform: Platform, tenant_id: str | None) -> dict[str, Any]:
    """The cluster as a whole; a tenant (`tenant_id`) sees only its own jobs in the queue."""
    active = list(platform.active.values())
    in_use = sum(a.gpus for a in active if a.status in states.ON_GPUS)
    queued = sorted(
        (a for a in active if a.status == states.QUEUED),
        key=lambda a: a.queue_position or 1 << 30,
    )
    return {
        "object": "cluster",
        "gpus": platform.capacity,
        "gpus_in_use": in_use,
        "gpus_free": platform.capacity - in_use,
        "policy": platform.rules.scheduler.policy.name,
        "stop_rule": platform.rules.default.as_dict(),
        "running": sum(a.status in states.ON_GPUS for a in active),
        "queued": len(queued),
        "queue": [
            {"job": a.job_id, "tenant": a.tenant_id, "gpus": a.gpus, "position": a.queue_position}
            for a in queued
            if tenant_id is None or a.tenant_id == tenant_id
        ],
    }


def occupancy_view(s: Session, tenant_id: str | None, since: float) -> dict[str, Any]:
    """Which runs held GPUs since `since`, from when their process started (a run Ray never
    placed held none): the caller's with their job and node, another tenant's only as GPUs held
    (who and what stay hidden, as everywhere in the API)."""
    rows = s.execute(
        select(Run, Job.tenant_id, Job.gpus, Tenant.name)
        .join(Job, Job.id == Run.job_id)
        .join(Tenant, Tenant.id == Job.tenant_id)
        .where(Run.running_at.is_not(None), (Run.ended_at.is_(None)) | (Run.ended_at >= since))
        .order_by(Run.running_at)
    ).all()
    runs = []
    for run, owner, gpus, name in rows:
        mine = tenant_id is None or owner == tenant_id
        runs.append(
            {
                "job": run.job_id if mine else None,
                "tenant_name": name if mine else None,
                "attempt": run.attempt if mine else None,
                "gpus": gpus,
                "node": run.node_id if mine else None,
                "started_at": run.running_at,
                "ended_at": run.ended_at,
                "end_reason": run.end_reason if mine else None,
            }
        )
    return {"object": "cluster.occupancy", "since": since, "now": time.time(), "runs": runs}
