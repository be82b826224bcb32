"""OpenAI's `/v1/models`: the operator's base models (base_models.py), as OpenAI lists its own,
and the tenant's fine-tuned models (`ft:BASE:TENANT:SUFFIX:ID`, one per finished job, its
checkpoints as `...:ckpt-step-N`), which only their tenant sees and may delete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy import select
from sqlalchemy.orm import Session

from rlguard.platform.api import Caller, Reader, Submitter
from rlguard.platform.db import Checkpoint, FineTuningJob, Job
from rlguard.platform.errors import ApiError
from rlguard.platform.finetune import job_views
from rlguard.platform.finetune.base_models import RegisteredModel

router = APIRouter()


def _models(request: Request) -> dict[str, RegisteredModel]:
    return request.app.state.platform.models


def model_not_found(model_id: str) -> ApiError:
    return ApiError(404, f"The model '{model_id}' does not exist", "model_not_found", "model")


def fine_tuned(s: Session, who: Caller, model_id: str) -> tuple[FineTuningJob, Checkpoint] | None:
    """The tenant's fine-tuned model (or one of its checkpoints) of this name and the stored
    checkpoint that holds its weights; None for any other name, another tenant's included."""
    parts = model_id.split(":")
    if parts[0] != "ft" or len(parts) not in (5, 6):
        return None
    ft = s.get(FineTuningJob, f"ftjob-{parts[4]}")
    if ft is None or ft.tenant_id != who.tenant.id or ft.model_deleted:
        return None
    base = job_views.model_name(ft, who.tenant.name)
    saved = job_views.job_checkpoints(s, ft.job_id)
    if len(parts) == 6:
        wanted = [
            c for c in saved if job_views.is_model(c) and f"{base}:ckpt-step-{c.step}" == model_id
        ]
        return (ft, wanted[-1]) if wanted else None
    checkpoint = job_views.delivered(s.get(Job, ft.job_id), saved)
    return (ft, checkpoint) if checkpoint is not None and base == model_id else None


def _fine_tuned_view(ft: FineTuningJob, checkpoint: Checkpoint, who: Caller) -> dict[str, Any]:
    return {
        "id": job_views.model_name(ft, who.tenant.name),
        "object": "model",
        "created": int(checkpoint.created_at),
        "owned_by": who.tenant.name,
    }


@router.get("/v1/models")
def list_models(request: Request, who: Reader) -> dict[str, Any]:
    data = [m.view() for m in sorted(_models(request).values(), key=lambda m: m.name)]
    with request.app.state.platform.store.transaction() as s:
        query = select(FineTuningJob).where(
            FineTuningJob.tenant_id == who.tenant.id, FineTuningJob.model_deleted.is_(False)
        )
        for ft in s.scalars(query.order_by(FineTuningJob.created_at)):
            checkpoint = job_views.delivered(
                s.get(Job, ft.job_id), job_views.job_checkpoints(s, ft.job_id)
            )
            if checkpoint is not None:
                data.append(_fine_tuned_view(ft, checkpoint, who))
    return {"object": "list", "data": data}


@router.get("/v1/models/{model_id}")
def retrieve(model_id: str, request: Request, who: Reader) -> dict[str, Any]:
    model = _models(request).get(model_id)
    if model is not None:
        return model.view()
    with request.app.state.platform.store.transaction() as s:
        found = fine_tuned(s, who, model_id)
        if found is None:
            raise model_not_found(model_id)
        return {**_fine_tuned_view(*found, who), "id": model_id}


@router.delete("/v1/models/{model_id}")
def delete(model_id: str, request: Request, who: Submitter) -> dict[str, Any]:
    """A fine-tuned model: no longer listed nor served (its job and checkpoints stay)."""
    if model_id in _models(request):
        message = f"The model '{model_id}' is a base model: only fine-tuned models are deleted"
        raise ApiError(403, message, "model_not_deletable", "model")
    with request.app.state.platform.store.transaction() as s:
        found = fine_tuned(s, who, model_id)
        if found is None or ":ckpt-step-" in model_id:
            raise model_not_found(model_id)
        found[0].model_deleted = True
    return {"id": model_id, "object": "model", "deleted": True}
