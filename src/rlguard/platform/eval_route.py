"""POST /v1/jobs/{id}/evals past FastAPI's router: the request every running job sends over and
over, and the one a cloud of jobs makes the server's bottleneck.

On these 2 cores an app of one FastAPI route answered about 2,300 small POSTs/s under wrk and a
bare ASGI app 11,000 (by hand; benchmarks/bench_platform.py measures the whole path). The FastAPI
route is kept: this middleware answers only a well-formed eval without a checkpoint
(the common report) from a caller with a Bearer token, and hands every other request, the body
it read replayed, to the app, which answers it as it always has (a validation error, a missing
key, an eval with a checkpoint to upload). It sits inside `BodyLimit`, so the body it reads is
bounded the same way.
"""

from __future__ import annotations

import asyncio
import re

from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rlguard.platform.errors import ApiError, error_body
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.job_writes import RateLimited, StoreFull
from rlguard.platform.schemas import EvalReport
from rlguard.platform.service import Conflict, Unauthorized

PATH = re.compile(r"/v1/jobs/([^/]+)/evals")

REFUSALS = (Unauthorized, Conflict, RateLimited, StoreFull)
"""What a running job's report may be refused for (`refused` says how)."""


def refused(e: Exception) -> ApiError:
    """A running job's report refused, in the API's shape."""
    if isinstance(e, Unauthorized):
        return ApiError(401, "invalid job token for this job", "invalid_job_token")
    if isinstance(e, RateLimited):
        retry = {"Retry-After": str(e.retry_after_s)}
        return ApiError(429, str(e), "rate_limited", headers=retry)
    if isinstance(e, StoreFull):
        return ApiError(413, str(e), "job_store_full")
    return ApiError(409, str(e), "job_not_running")


class EvalRoute:
    def __init__(self, app: ASGIApp, ingest: EvalIngest) -> None:
        self.app, self.ingest = app, ingest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = (
            scope["type"] == "http" and scope["method"] == "POST" and PATH.fullmatch(scope["path"])
        )
        if not match:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        body = await _body(receive)
        report, token = _plain_report(headers, body)
        if report is None or token is None:
            await self.app(scope, _replay(body, receive), send)
            return
        job_id = match.group(1)
        try:
            self.ingest.reports.writes.admit(job_id, token)
            answer = await asyncio.wrap_future(self.ingest.submit(job_id, token, report))
        except REFUSALS as e:
            error = refused(e)
            response = error_body(error.status, error.message, error.code, headers=error.headers)
        else:
            response = JSONResponse(answer)
        await response(scope, receive, send)


def _plain_report(headers: dict[bytes, bytes], body: bytes) -> tuple[EvalReport | None, str | None]:
    """The eval this route answers itself, and its caller's token: JSON, valid, no checkpoint."""
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None, None
    if headers.get(b"content-type", b"").split(b";")[0].strip() != b"application/json":
        return None, None
    try:
        report = EvalReport.model_validate_json(body)
    except ValidationError:
        return None, None
    return (None, None) if report.checkpoint is not None else (report, token.strip())


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The request's body once more, then what the connection says next (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed
