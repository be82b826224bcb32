"""The HTTP API (FastAPI): OpenAI's fine-tuning jobs conventions, Bearer keys, tenant isolation.

A tenant's key sees only its tenant's jobs; another tenant's job answers exactly as a job that
does not exist (404), so not even its existence leaks. An admin key sees every job. Job tokens
(`rlj_...`) are accepted only for their own job's reports. Handlers are plain functions (run in
FastAPI's thread pool) over the synchronous store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from sse_starlette.sse import EventSourceResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rlguard.errors import InputError
from rlguard.platform import states
from rlguard.platform.artifacts import StoredCheckpoint, StoreUnavailable
from rlguard.platform.dashboard import mount_dashboard
from rlguard.platform.db import ApiKey, Checkpoint, DecisionRecord, Event, Job, Run, Tenant
from rlguard.platform.deposits import Busy, Deposits
from rlguard.platform.errors import (
    ApiError,
    BodyLimit,
    on_api_error,
    on_http_error,
    on_unexpected_error,
    on_validation_error,
    store_unavailable,
)
from rlguard.platform.eval_route import REFUSALS, EvalRoute, refused
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.jobspec import input_error_field
from rlguard.platform.keys import digest
from rlguard.platform.metrics import registry as metrics_registry
from rlguard.platform.runlogs import read_log
from rlguard.platform.schemas import (
    CheckpointReport,
    DeliveryReport,
    EvalReport,
    JobCreate,
    StepReport,
    WatchWarningReport,
)
from rlguard.platform.service import Conflict, NotFound, Platform
from rlguard.platform.step_reports import StepReports
from rlguard.platform.uploader import BadCheckpointPath, CheckpointOverLimit
from rlguard.platform.usage import cluster_view, occupancy_view, usage_view
from rlguard.platform.views import checkpoint_view, decision_view, event_view, job_view, page
from rlguard.platform.watch_reports import WatchReports

MAX_PAGE = 1000
JobStatus = Literal[
    "validating",
    "queued",
    "starting",
    "running",
    "stopping",
    "paused",
    "succeeded",
    "early_stopped",
    "failed",
    "cancelled",
]
SSE_POLL_S = 0.25


@dataclass(frozen=True)
class Caller:
    tenant: Tenant
    scopes: frozenset[str]

    @property
    def admin(self) -> bool:
        return "admin" in self.scopes


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401, "missing API key: send 'Authorization: Bearer <key>'", "missing_api_key"
        )
    return token.strip()


def _platform(request: Request) -> Platform:
    return request.app.state.platform


def caller(request: Request) -> Caller:
    """The tenant behind a valid, unexpired, unrevoked API key."""
    key = _bearer(request)
    platform = _platform(request)
    with platform.store.transaction() as s:
        found = s.scalar(select(ApiKey).where(ApiKey.digest == digest(key)))
        now = time.time()
        if (
            found is None
            or found.revoked_at is not None
            or (found.expires_at is not None and found.expires_at <= now)
        ):
            raise ApiError(401, "invalid API key", "invalid_api_key")
        tenant = s.get(Tenant, found.tenant_id)
        return Caller(tenant, frozenset(found.scopes))


def needs(scope: str):  # type: ignore[no-untyped-def]
    def check(who: Annotated[Caller, Depends(caller)]) -> Caller:
        if scope not in who.scopes and not who.admin:
            raise ApiError(403, f"this key lacks the {scope!r} scope", "insufficient_scope")
        return who

    return check


Reader = Annotated[Caller, Depends(needs("read"))]
Submitter = Annotated[Caller, Depends(needs("submit"))]
Operator = Annotated[Caller, Depends(needs("admin"))]


def _visible_job(s: Session, job_id: str, who: Caller) -> Job:
    job = s.get(Job, job_id)
    if job is None or (job.tenant_id != who.tenant.id and not who.admin):
        raise ApiError(404, f"no job {job_id!r}", "job_not_found", "job_id")
    return job


def _job_views(
    s: Session, platform: Platform, jobs: list[Job], store_limit: int
) -> list[dict[str, Any]]:
    ids = [j.id for j in jobs]
    best = {
        c.job_id: c
        for c in s.scalars(select(Checkpoint).where(Checkpoint.job_id.in_(ids), Checkpoint.is_best))
    }
    attempts = dict(
        s.execute(
            select(Run.job_id, func.count()).where(Run.job_id.in_(ids)).group_by(Run.job_id)
        ).all()
    )
    owners = {j.tenant_id for j in jobs}
    names = dict(s.execute(select(Tenant.id, Tenant.name).where(Tenant.id.in_(owners))).all())
    last = (
        select(Event.job_id, func.max(Event.seq).label("seq"))
        .where(Event.job_id.in_(ids), Event.type == "eval")
        .group_by(Event.job_id)
        .subquery()
    )
    on_last = (Event.job_id == last.c.job_id) & (Event.seq == last.c.seq)
    latest = {e.job_id: e.data for e in s.scalars(select(Event).join(last, on_last))}
    # Only this page's jobs, each looked up once: the scheduler and submissions change `active`
    # meanwhile (iterating it raised "dictionary changed size" under load), and it may hold
    # 10,000 queued jobs.
    held = {j.id: platform.active.get(j.id) for j in jobs}
    positions = {job_id: a.queue_position for job_id, a in held.items() if a is not None}
    return [
        job_view(
            j,
            names[j.tenant_id],
            best.get(j.id),
            latest.get(j.id),
            positions.get(j.id),
            attempts.get(j.id, 0),
            store_limit,
        )
        for j in jobs
    ]


def create_app(platform: Platform, ingest: EvalIngest, deposits: Deposits) -> FastAPI:
    from rlguard.platform.api_artifacts import router as artifact_routes  # it imports this module
    from rlguard.platform.api_metrics import router as metrics_routes
    from rlguard.platform.api_workdirs import PATH as WORKDIRS
    from rlguard.platform.api_workdirs import router as workdir_routes
    from rlguard.platform.api_workdirs import upload_limit
    from rlguard.platform.finetune.chat import router as chat_routes
    from rlguard.platform.finetune.files import PATH as FILES
    from rlguard.platform.finetune.files import router as file_routes
    from rlguard.platform.finetune.grader_routes import router as grader_routes
    from rlguard.platform.finetune.jobs import router as fine_tuning_routes
    from rlguard.platform.finetune.models import router as model_routes

    app = FastAPI(title="rlguard platform", version="1", docs_url=None, redoc_url=None)
    app.state.platform, app.state.deposits = platform, deposits
    app.state.metrics = metrics_registry(platform, ingest.counts)
    app.include_router(metrics_routes, dependencies=[Depends(needs("admin"))])
    app.include_router(artifact_routes)
    app.include_router(workdir_routes)
    app.include_router(file_routes)
    app.include_router(model_routes)
    app.include_router(chat_routes)
    app.include_router(grader_routes)
    app.include_router(fine_tuning_routes)
    writes = ingest.reports.writes  # every job's report rate and allowance (job_writes.py)
    reports = WatchReports(platform, writes)  # watchers' warnings and deliveries
    steps = StepReports(platform, writes)  # jobs' step timings
    cap = upload_limit(platform.software.working_dir_bytes)
    files_cap = upload_limit(platform.software.file_mb << 20)  # with the form's own bytes
    app.add_middleware(EvalRoute, ingest=ingest)  # inside BodyLimit: added first
    app.add_middleware(BodyLimit, routes={WORKDIRS: cap, FILES: files_cap})
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected_error)
    mount_dashboard(app)

    @app.post("/v1/jobs", status_code=201)
    def submit(body: JobCreate, who: Submitter) -> dict[str, Any]:
        try:
            job_id = platform.submit(who.tenant, body)
        except InputError as e:
            param, message = input_error_field(e)
            raise ApiError(422, message, "invalid_value", param) from None
        return get_job(job_id, who)

    @app.get("/v1/jobs")
    def list_jobs(
        who: Reader,
        after: str | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
        status: Annotated[JobStatus | None, Query()] = None,
    ) -> dict[str, Any]:
        with platform.store.transaction() as s:
            query = select(Job).order_by(Job.created_at.desc(), Job.id.desc())
            if not who.admin:
                query = query.where(Job.tenant_id == who.tenant.id)
            if status is not None:
                query = query.where(Job.status == status)
            if after is not None:
                cursor = _visible_job(s, after, who)
                query = query.where(
                    (Job.created_at < cursor.created_at)
                    | ((Job.created_at == cursor.created_at) & (Job.id < cursor.id))
                )
            jobs = s.scalars(query.limit(limit + 1)).all()
            views = _job_views(s, platform, jobs[:limit], writes.limits.store_bytes)
            return page(views, len(jobs) > limit)

    @app.get("/v1/jobs/{job_id}")
    def get_job(job_id: str, who: Reader) -> dict[str, Any]:
        with platform.store.transaction() as s:
            job = _visible_job(s, job_id, who)
            return _job_views(s, platform, [job], writes.limits.store_bytes)[0]

    def _act(job_id: str, who: Caller, act: Callable[[str], None], conflict: str) -> dict[str, Any]:
        """A tenant's request on its job (cancel, pause, resume): the job as it is after it;
        a request its state does not allow is a 409 with `conflict` as its code."""
        with platform.store.transaction() as s:
            _visible_job(s, job_id, who)
        try:
            act(job_id)
        except Conflict as e:
            raise ApiError(409, str(e), conflict) from None
        except NotFound:
            raise ApiError(404, f"no job {job_id!r}", "job_not_found", "job_id") from None
        return get_job(job_id, who)

    @app.post("/v1/jobs/{job_id}/cancel")
    def cancel(job_id: str, who: Submitter) -> dict[str, Any]:
        return _act(job_id, who, platform.cancel, "job_finished")

    @app.post("/v1/jobs/{job_id}/pause")
    def pause(job_id: str, who: Submitter) -> dict[str, Any]:
        return _act(job_id, who, platform.pause, "invalid_state")

    @app.post("/v1/jobs/{job_id}/resume")
    def resume(job_id: str, who: Submitter) -> dict[str, Any]:
        return _act(job_id, who, platform.resume, "invalid_state")

    def _events(s: Session, job_id: str, after: int, limit: int) -> list[Event]:
        query = select(Event).where(Event.job_id == job_id, Event.seq > after)
        return s.scalars(query.order_by(Event.seq).limit(limit)).all()

    @app.get("/v1/jobs/{job_id}/events", response_model=None)
    def events(
        job_id: str,
        who: Reader,
        after: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
        stream: bool = False,
    ) -> dict[str, Any] | EventSourceResponse:
        with platform.store.transaction() as s:
            _visible_job(s, job_id, who)
            if not stream:
                found = _events(s, job_id, after, limit + 1)
                return page([event_view(e) for e in found[:limit]], len(found) > limit)

        def poll(cursor: int) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
            with platform.store.transaction() as s:
                found = _events(s, job_id, cursor, MAX_PAGE)
                finished = s.get(Job, job_id).status in states.TERMINAL
                return [(e.seq, event_view(e)) for e in found], finished

        return EventSourceResponse(_sse(poll, after))

    def _feed(
        s: Session, who: Caller, after: int, limit: int, newest_first: bool = False
    ) -> list[Event]:
        query = select(Event)
        if not who.admin:
            query = query.join(Job, Job.id == Event.job_id).where(Job.tenant_id == who.tenant.id)
        if newest_first:
            query = query.where(Event.id < after) if after else query
            return s.scalars(query.order_by(Event.id.desc()).limit(limit)).all()
        return s.scalars(query.where(Event.id > after).order_by(Event.id).limit(limit)).all()

    @app.get("/v1/events", response_model=None)
    def feed(
        who: Reader,
        after: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
        order: Literal["asc", "desc"] = "asc",
        stream: bool = False,
    ) -> dict[str, Any] | EventSourceResponse:
        """Every visible job's events in the order they were stored (cursor: the event's `id`):
        how a dashboard follows all its jobs with one stream. `order=desc` pages back from the
        newest (`after`: below this id); `limit=1` of it is where a stream starts "from now"."""
        if not stream:
            with platform.store.transaction() as s:
                found = _feed(s, who, after, limit + 1, newest_first=order == "desc")
                return page([event_view(e) for e in found[:limit]], len(found) > limit)

        def poll(cursor: int) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
            with platform.store.transaction() as s:
                return [(e.id, event_view(e)) for e in _feed(s, who, cursor, MAX_PAGE)], False

        return EventSourceResponse(_sse(poll, after))

    async def _sse(poll, after: int):  # type: ignore[no-untyped-def]
        """Server-sent events: every event after the cursor, then new ones as they are stored,
        until `poll` says no more can come and everything was sent. `id:` is the cursor (the
        Last-Event-ID a client resumes from)."""
        cursor = after
        while True:
            found, finished = await asyncio.to_thread(poll, cursor)
            for cursor, view in found:
                yield {"id": str(cursor), "event": view["type"], "data": _json(view)}
            if finished and not found:
                return
            await asyncio.sleep(SSE_POLL_S)

    @app.get("/v1/jobs/{job_id}/checkpoints")
    def checkpoints(job_id: str, who: Reader) -> dict[str, Any]:
        with platform.store.transaction() as s:
            _visible_job(s, job_id, who)
            found = s.scalars(
                select(Checkpoint)
                .where(Checkpoint.job_id == job_id)
                .order_by(Checkpoint.step, Checkpoint.created_at)
            ).all()
            return page([checkpoint_view(c) for c in found], False)

    @app.get("/v1/jobs/{job_id}/decisions")
    def decisions(job_id: str, who: Reader, stops_only: bool = False) -> dict[str, Any]:
        with platform.store.transaction() as s:
            _visible_job(s, job_id, who)
            query = select(DecisionRecord).where(DecisionRecord.job_id == job_id)
            if stops_only:
                query = query.where(DecisionRecord.stop)
            found = s.scalars(query.order_by(DecisionRecord.event_seq)).all()
            return page([decision_view(d) for d in found], False)

    @app.get("/v1/jobs/{job_id}/logs", response_class=PlainTextResponse)
    def logs(job_id: str, who: Reader, tail: Annotated[int, Query(ge=1, le=100_000)] = 200) -> str:
        """The current attempt's log, its last `tail` lines of at most its last 4 MiB, read
        wherever its node left it (runlogs.py: the run's actor, the server's disk, the store)."""
        with platform.store.transaction() as s:
            tenant_id = _visible_job(s, job_id, who).tenant_id
            attempts = s.scalar(select(func.count()).where(Run.job_id == job_id))
        if not attempts:
            return ""
        lines = read_log(platform, tenant_id, job_id, attempts).splitlines()
        return "".join(line + "\n" for line in lines[-tail:])

    def _job_token(request: Request) -> str:
        return _bearer(request)

    def _deposit(job_id: str, token: str, step: int, path: str, field: str) -> StoredCheckpoint:
        """The reported checkpoint, in the artifact store before anything records it."""
        try:
            return deposits.deposit(job_id, token, step, path)
        except BadCheckpointPath as e:
            message = str(e).replace("path:", f"{field}:", 1)
            raise ApiError(422, message, "invalid_value", field) from None
        except CheckpointOverLimit as e:  # the operator's limit, named with the value
            message = str(e).replace("path:", f"{field}:", 1)
            raise ApiError(413, message, "checkpoint_over_limit", field) from None
        except StoreUnavailable as e:
            raise store_unavailable(e) from None
        except Busy as e:  # the job's share of the server's threads is taken
            retry = {"Retry-After": str(e.retry_after_s)}
            raise ApiError(429, str(e), "rate_limited", headers=retry) from None

    @app.post("/v1/jobs/{job_id}/evals")
    async def report_eval(job_id: str, body: EvalReport, request: Request) -> dict[str, Any]:
        token, stored = _job_token(request), None
        try:
            writes.admit(job_id, token)
            if body.checkpoint is not None:
                args = (job_id, token, body.step, body.checkpoint, "checkpoint")
                stored = await asyncio.to_thread(_deposit, *args)
                body = body.model_copy(update={"checkpoint": stored.name})
            answer = await asyncio.wrap_future(ingest.submit(job_id, token, body, stored))
        except REFUSALS as e:
            raise refused(e) from None
        if stored is not None:
            await asyncio.to_thread(deposits.retain, job_id)
        return answer

    def _job_report(
        report: Callable[[str, str, Any], Any], job_id: str, body: Any, request: Request
    ) -> Any:
        """Store one of a running job's reports, its refusals in the API's shape."""
        token = _job_token(request)
        try:
            writes.admit(job_id, token)
            return report(job_id, token, body)
        except REFUSALS as e:
            raise refused(e) from None

    @app.post("/v1/jobs/{job_id}/checkpoints", status_code=201)
    def report_checkpoint(job_id: str, body: CheckpointReport, request: Request) -> dict[str, Any]:
        def store_then_record(job_id: str, token: str, body: CheckpointReport) -> None:
            stored = _deposit(job_id, token, body.step, body.path, "path")
            ingest.reports.checkpoint(job_id, token, body, stored)

        _job_report(store_then_record, job_id, body, request)
        deposits.retain(job_id)
        return {"object": "job.checkpoint.ack", "job": job_id, "step": body.step}

    @app.post("/v1/jobs/{job_id}/warnings", status_code=201)
    def report_warning(job_id: str, body: WatchWarningReport, request: Request) -> dict[str, Any]:
        """A watcher's warning about the job's files (watch_reports.py)."""
        _job_report(reports.warning, job_id, body, request)
        return {"object": "job.warning.ack", "job": job_id, "code": body.code}

    @app.post("/v1/jobs/{job_id}/delivery", status_code=201)
    def report_delivery(job_id: str, body: DeliveryReport, request: Request) -> dict[str, Any]:
        """The checkpoint a watcher delivers for the job's best eval (watch_reports.py)."""
        _job_report(reports.delivery, job_id, body, request)
        return {"object": "job.delivery.ack", "job": job_id, "step": body.step}

    @app.post("/v1/jobs/{job_id}/steps", status_code=201)
    def report_step(job_id: str, body: StepReport, request: Request) -> dict[str, Any]:
        """One training step's timers and lengths (step_reports.py)."""
        duplicate = _job_report(steps.step, job_id, body, request)
        return {"object": "job.step.ack", "job": job_id, "step": body.step, "duplicate": duplicate}

    @app.get("/v1/usage")
    def usage(who: Reader) -> dict[str, Any]:
        with platform.store.transaction() as s:
            view = usage_view(s, platform, s.get(Tenant, who.tenant.id))
        return {**view, "key_scopes": sorted(who.scopes)}  # what the caller's key may do

    @app.get("/v1/usage/tenants")
    def tenants_usage(who: Operator) -> dict[str, Any]:
        """Every tenant's usage against its quota (admin keys only)."""
        with platform.store.transaction() as s:
            tenants = s.scalars(select(Tenant).order_by(Tenant.name)).all()
            return page([usage_view(s, platform, t) for t in tenants], False)

    @app.get("/v1/cluster/occupancy")
    def occupancy(
        who: Reader, window_s: Annotated[float, Query(gt=0, le=30 * 86400)] = 3600
    ) -> dict[str, Any]:
        """The runs that held GPUs in the last `window_s` seconds (the dashboard's timeline)."""
        with platform.store.transaction() as s:
            tenant = None if who.admin else who.tenant.id
            return occupancy_view(s, tenant, time.time() - window_s)

    @app.get("/v1/cluster")
    def cluster(who: Reader) -> dict[str, Any]:
        with platform.lock:
            return cluster_view(platform, None if who.admin else who.tenant.id)

    return app


def _json(value: Any) -> str:
    import json

    return json.dumps(value)
