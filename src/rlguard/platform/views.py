"""The API's response objects, in OpenAI's fine-tuning shapes (`object`, integer timestamps,
`{"object": "list", "data": [...], "has_more": ...}` pages)."""

from __future__ import annotations

from typing import Any

from rlguard.platform.db import Checkpoint, DecisionRecord, Event, Job
from rlguard.platform.quotes import estimate_source


def stamp(t: float | None) -> int | None:
    return None if t is None else int(t)


def job_view(
    job: Job,
    tenant_name: str,
    best: Checkpoint | None,
    latest_eval: dict[str, Any] | None,
    queue_position: int | None,
    attempts: int,
    store_limit_bytes: int,
) -> dict[str, Any]:
    body = (
        {"config": job.spec["config"]}
        if job.kind == "train"
        else {
            "command": job.spec["command"],
            "watch": job.spec.get("watch"),
            "working_dir": job.spec.get("working_dir"),  # its uploaded code (workdir.py)
            "requirements": job.spec.get("requirements"),
            "environment": job.spec.get("environment"),  # what they resolved to (jobenv.py)
        }
    )
    return {
        "object": "job",
        "id": job.id,
        "tenant": job.tenant_id,
        "tenant_name": tenant_name,
        "kind": job.kind,
        "job_kind": job.job_kind,
        **body,
        "gpus": job.gpus,
        "cpus": job.cpus,
        "estimate_s": job.estimate_s,
        "estimate_source": estimate_source(job.spec, job.quote),  # user, quote or default
        "setup": job.spec.get("setup"),
        "quote": job.quote,  # predicted at submission (docs/platform.md "Quotes and budgets")
        "budget_gpu_hours": job.spec.get("budget_gpu_hours"),
        "measured": job.measured,  # beside the quote, once it has finished
        "status": job.status,
        "stop_policy": job.stop_policy,
        "stop_reason": job.stop_reason,
        "best_checkpoint": None if best is None else checkpoint_view(best),
        "latest_eval": latest_eval,  # the last eval report, as the job sent it
        "error": job.error,
        "queue_position": queue_position,
        "gpu_hours": round(job.gpu_seconds / 3600, 6),
        "gpu_hours_freed": round(job.gpu_hours_freed, 6),
        "attempts": attempts,
        # every checkpoint it has had uploaded: what --job-max-upload-files/-mb hold it to
        "uploaded": {"files": job.uploaded_files or 0, "bytes": job.uploaded_bytes or 0},
        # what its reports' rows hold in the platform's store, and what --job-store-mb allows
        "store_bytes": job.store_bytes or 0,
        "store_limit_bytes": store_limit_bytes,
        "sandbox": job.sandbox,  # "bwrap", or "none (single-tenant)"
        "disk": job.disk,  # {"limit_bytes", "enforced": "kernel" | "polled"} (volume.py)
        "created_at": stamp(job.created_at),
        "started_at": stamp(job.started_at),
        "finished_at": stamp(job.finished_at),
    }


def event_view(event: Event) -> dict[str, Any]:
    return {
        "object": "job.event",
        "id": event.id,  # the cursor of GET /v1/events, across jobs
        "job": event.job_id,
        "seq": event.seq,
        "created_at": event.created_at,
        "level": event.level,
        "type": event.type,
        "data": event.data,
    }


def checkpoint_view(checkpoint: Checkpoint) -> dict[str, Any]:
    return {
        "object": "job.checkpoint",
        "id": checkpoint.id,
        "job": checkpoint.job_id,
        "run": checkpoint.run_id,
        "step": checkpoint.step,
        "path": checkpoint.path,  # relative to the job's directory
        "metrics": checkpoint.metrics,
        "is_best": checkpoint.is_best,
        "stored": checkpoint.store_key is not None,  # its files can be downloaded
        "created_at": stamp(checkpoint.created_at),
    }


def decision_view(decision: DecisionRecord) -> dict[str, Any]:
    return {
        "object": "job.decision",
        "id": decision.id,
        "job": decision.job_id,
        "event_seq": decision.event_seq,
        "rule": decision.rule,
        "params": decision.params,
        "stop": decision.stop,
        "shadow": decision.shadow,
        "reason": decision.reason,
        "evidence": decision.evidence,
        "created_at": stamp(decision.created_at),
    }


def page(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {"object": "list", "data": data, "has_more": has_more}
