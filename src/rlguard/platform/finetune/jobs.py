"""OpenAI's `/v1/fine_tuning/jobs`: create, list, retrieve, cancel, pause, resume, events and
checkpoints, each a view of the rlguard job that runs it (launch.py); another tenant's job
answers exactly as a missing one."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Query, Request
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from rlguard.errors import InputError
from rlguard.platform.api import Caller, Reader, Submitter
from rlguard.platform.artifacts import StoreUnavailable
from rlguard.platform.db import Event, FineTuningJob, Job
from rlguard.platform.errors import ApiError, store_unavailable
from rlguard.platform.finetune import job_views, launch, requests
from rlguard.platform.finetune.files import owned_file
from rlguard.platform.jobspec import input_error_field
from rlguard.platform.keys import new_id
from rlguard.platform.schemas import JobCreate
from rlguard.platform.service import Conflict, NotFound

router = APIRouter()
PATH = "/v1/fine_tuning/jobs"
T = TypeVar("T")


def _platform(request: Request):  # type: ignore[no-untyped-def]
    return request.app.state.platform


def owned_job(s: Session, ft_id: str, who: Caller) -> tuple[FineTuningJob, Job]:
    ft = s.get(FineTuningJob, ft_id)
    if ft is None or ft.tenant_id != who.tenant.id:
        message = f"Could not find fine-tuning job {ft_id}"
        raise ApiError(404, message, "fine_tuning_job_not_found", "fine_tuning_job_id")
    return ft, s.get(Job, ft.job_id)


def _object(s: Session, ft: FineTuningJob, job: Job, who: Caller) -> dict[str, Any]:
    fine_tuned = job_views.delivered(job, job_views.job_checkpoints(s, job.id))
    return job_views.job_object(ft, job, who.tenant.name, fine_tuned)


def _create(request: Request, body: requests.FineTuningJobCreate, who: Caller) -> str:
    platform = _platform(request)
    base = platform.models.get(body.model)
    if base is None:
        message = f"model: the model {body.model!r} does not exist or is not available to you"
        raise ApiError(400, message, "model_not_available", "model")
    method, settings = requests.method_of(body)
    extension = requests.extension_fields(body)
    training = owned_file(request, who.tenant.id, body.training_file, "training_file")
    validation = None
    if body.validation_file is not None:
        validation = owned_file(request, who.tenant.id, body.validation_file, "validation_file")
    store = request.app.state.deposits.store
    seed = body.seed if body.seed is not None else int(time.time()) % 2**31
    plan, stored_method = requests.plan(
        body, method, settings, base.path, (training, validation), store, seed, platform.models
    )
    cap = platform.software.working_dir_bytes
    try:
        working_dir = launch.working_dir(plan, store, who.tenant.id, cap)
    except InputError:  # the files, together, are past what a job's working directory holds
        message = (
            f"training_file: the job's files hold over {cap >> 20} MiB, the most a job's "
            "working directory takes (rlguard serve --max-working-dir-mb)"
        )
        raise ApiError(413, message, "files_too_large", "training_file") from None
    try:
        job_body = JobCreate.model_validate(launch.job_body(plan, working_dir, extension))
    except ValueError as e:
        raise ApiError(400, f"rlguard: {e}".splitlines()[0], "invalid_value", "rlguard") from None
    ft_id = new_id("ftjob")

    def row(job_id: str) -> FineTuningJob:
        return FineTuningJob(
            id=ft_id,
            tenant_id=who.tenant.id,
            job_id=job_id,
            model=body.model,
            method=stored_method,
            training_file=training.id,
            validation_file=None if validation is None else validation.id,
            suffix=body.suffix,
            seed=seed,
            meta=body.metadata,
            model_deleted=False,
            created_at=time.time(),
        )

    try:
        platform.submit(who.tenant, job_body, attach=row)
    except InputError as e:
        param, message = input_error_field(e)
        raise ApiError(400, message, "invalid_value", f"rlguard.{param}") from None
    return ft_id


@router.post(PATH)
async def create(
    body: requests.FineTuningJobCreate, request: Request, who: Submitter
) -> dict[str, Any]:
    try:
        ft_id = await run_in_threadpool(_create, request, body, who)
    except (StoreUnavailable, OSError) as e:
        raise store_unavailable(e) from None
    return retrieve(ft_id, request, who)


@router.get(PATH)
def list_jobs(
    request: Request,
    who: Reader,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    """Newest first; `metadata[KEY]=VALUE` query parameters keep the jobs whose metadata has
    each such pair, as OpenAI's list does."""
    wanted = {
        k.removeprefix("metadata[").removesuffix("]"): v
        for k, v in request.query_params.items()
        if k.startswith("metadata[") and k.endswith("]")
    }
    with _platform(request).store.transaction() as s:
        query = select(FineTuningJob).where(FineTuningJob.tenant_id == who.tenant.id)
        if after is not None:
            cursor = s.get(FineTuningJob, after)
            if cursor is not None and cursor.tenant_id == who.tenant.id:
                query = query.where(FineTuningJob.created_at < cursor.created_at)
        query = query.order_by(FineTuningJob.created_at.desc(), FineTuningJob.id)
        kept = (
            ft
            for ft in s.scalars(query)
            if all((ft.meta or {}).get(k) == v for k, v in wanted.items())
        )
        page, more = _page(kept, limit)
        data = [_object(s, ft, s.get(Job, ft.job_id), who) for ft in page]
    return {"object": "list", "data": data, "has_more": more}


def _page(rows: Iterator[T], limit: int) -> tuple[list[T], bool]:
    """The first `limit` rows and whether there are more, reading one row past the page only."""
    page = list(itertools.islice(rows, limit))
    return page, next(rows, None) is not None


@router.get(PATH + "/{fine_tuning_job_id}")
def retrieve(fine_tuning_job_id: str, request: Request, who: Reader) -> dict[str, Any]:
    with _platform(request).store.transaction() as s:
        return _object(s, *owned_job(s, fine_tuning_job_id, who), who)


def _act(request: Request, ft_id: str, who: Caller, action: str) -> dict[str, Any]:
    platform = _platform(request)
    with platform.store.transaction() as s:
        _, job = owned_job(s, ft_id, who)
    try:
        getattr(platform, action)(job.id)
    except Conflict as e:
        raise ApiError(409, str(e).replace(job.id, ft_id), "invalid_state") from None
    except NotFound:
        raise ApiError(
            404,
            f"Could not find fine-tuning job {ft_id}",
            "fine_tuning_job_not_found",
            "fine_tuning_job_id",
        ) from None
    return retrieve(ft_id, request, who)


@router.post(PATH + "/{fine_tuning_job_id}/cancel")
def cancel(fine_tuning_job_id: str, request: Request, who: Submitter) -> dict[str, Any]:
    return _act(request, fine_tuning_job_id, who, "cancel")


@router.post(PATH + "/{fine_tuning_job_id}/pause")
def pause(fine_tuning_job_id: str, request: Request, who: Submitter) -> dict[str, Any]:
    return _act(request, fine_tuning_job_id, who, "pause")


@router.post(PATH + "/{fine_tuning_job_id}/resume")
def resume(fine_tuning_job_id: str, request: Request, who: Submitter) -> dict[str, Any]:
    return _act(request, fine_tuning_job_id, who, "resume")


def _cursor(after: str | None, prefix: str) -> int | None:
    if after is None:
        return None
    try:
        return int(after.removeprefix(prefix))
    except ValueError:
        raise ApiError(
            400, f"after: not an id of this list (got {after!r})", "invalid_value", "after"
        ) from None


@router.get(PATH + "/{fine_tuning_job_id}/events")
def events(
    fine_tuning_job_id: str,
    request: Request,
    who: Reader,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
) -> dict[str, Any]:
    """Newest first, as OpenAI lists them; `after` an event id, the page goes on from it."""
    cursor = _cursor(after, "ftevent-")
    with _platform(request).store.transaction() as s:
        ft, job = owned_job(s, fine_tuning_job_id, who)
        query = select(Event).where(Event.job_id == job.id)
        if cursor is not None:
            query = query.where(Event.id < cursor)
        views = (job_views.event_object(ft, e) for e in s.scalars(query.order_by(Event.id.desc())))
        found, more = _page((v for v in views if v is not None), limit)
    return {"object": "list", "data": found, "has_more": more}


@router.get(PATH + "/{fine_tuning_job_id}/checkpoints")
def checkpoints(
    fine_tuning_job_id: str,
    request: Request,
    who: Reader,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> dict[str, Any]:
    """The models the job saved (each step's best by validation reward), newest first."""
    with _platform(request).store.transaction() as s:
        ft, job = owned_job(s, fine_tuning_job_id, who)
        saved = [c for c in job_views.job_checkpoints(s, job.id) if job_views.is_model(c)][::-1]
        views = [job_views.checkpoint_object(ft, c, who.tenant.name) for c in saved]
    if after is not None:
        ids = [v["id"] for v in views]
        views = views[ids.index(after) + 1 :] if after in ids else []
    page = views[:limit]
    return {
        "object": "list",
        "data": page,
        "has_more": len(views) > limit,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
    }
