"""OpenAI's `/v1/files` for fine-tuning: upload (multipart, purpose `fine-tune`), list,
retrieve, content, delete; each tenant sees only its own (another's answers as a missing one).

An upload is read through before anything is stored: every line must be a fine-tuning example
(examples.py), else a 400 naming the file, the line and the field, and nothing is kept. Its
bytes go to the artifact store under the tenant's prefix, then its row is committed.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Query, Request, UploadFile
from fastapi.responses import StreamingResponse
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from rlguard.platform.api import Reader, Submitter
from rlguard.platform.artifacts import ArtifactStore, StoreUnavailable
from rlguard.platform.db import File
from rlguard.platform.errors import ApiError, store_unavailable
from rlguard.platform.finetune.examples import BadExample, read_lines
from rlguard.platform.keys import new_id

router = APIRouter()
PATH = "/v1/files"
PURPOSE = "fine-tune"
MAX_FILENAME = 255


def file_view(row: File) -> dict[str, Any]:
    """OpenAI's File object; `expires_at` and `status_details` are left out, as the published
    spec types them integer and string, not null (the SDK reads them as optional)."""
    return {
        "id": row.id,
        "object": "file",
        "bytes": row.bytes,
        "created_at": int(row.created_at),
        "filename": row.filename,
        "purpose": row.purpose,
        "status": "processed",
    }


def _store(request: Request) -> ArtifactStore:
    return request.app.state.deposits.store


def owned_file(request: Request, tenant_id: str, file_id: str, param: str = "file_id") -> File:
    """The tenant's file of this id; 404 in OpenAI's words for any other."""
    with request.app.state.platform.store.transaction() as s:
        row = s.get(File, file_id)
        if row is None or row.tenant_id != tenant_id:
            raise ApiError(404, f"No such File object: {file_id}", "file_not_found", param)
        s.expunge(row)
    return row


@router.post(PATH)
async def upload(
    request: Request, who: Submitter, file: UploadFile, purpose: Annotated[str, Form()]
) -> dict[str, Any]:
    if purpose != PURPOSE:
        message = f"purpose: only {PURPOSE!r} files are taken here (got {purpose!r})"
        raise ApiError(400, message, "invalid_purpose", "purpose")
    name = (file.filename or "upload.jsonl").rsplit("/", 1)[-1][:MAX_FILENAME]
    file.file.seek(0)
    try:
        shapes = await run_in_threadpool(read_lines, file.file)
    except BadExample as e:
        raise ApiError(400, f"{name}: {e}", "invalid_file", "file") from None
    file_id = new_id("file")
    key = f"{who.tenant.id}/files/{file_id}.jsonl"
    size = file.size if file.size is not None else file.file.seek(0, 2)
    try:
        await run_in_threadpool(_put, _store(request), key, file)
    except (StoreUnavailable, OSError) as e:
        raise store_unavailable(e) from None
    row = File(
        id=file_id,
        tenant_id=who.tenant.id,
        filename=name,
        purpose=purpose,
        bytes=size,
        shapes=shapes,
        store_key=key,
        created_at=time.time(),
    )
    with request.app.state.platform.store.transaction() as s:
        s.add(row)
    return file_view(row)


def _put(store: ArtifactStore, key: str, file: UploadFile) -> None:
    """The upload's bytes into the store (spooled to a named file first: the store copies from
    a path)."""
    file.file.seek(0)
    with tempfile.NamedTemporaryFile(prefix="rlguard-file-") as local:
        shutil.copyfileobj(file.file, local)
        local.flush()
        store.put_file(key, local.name)


@router.get(PATH)
def list_files(
    request: Request,
    who: Reader,
    purpose: str | None = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 10_000,
    after: str | None = None,
    order: Literal["asc", "desc"] = "desc",
) -> dict[str, Any]:
    with request.app.state.platform.store.transaction() as s:
        query = select(File).where(File.tenant_id == who.tenant.id)
        if purpose is not None:
            query = query.where(File.purpose == purpose)
        if after is not None:
            cursor = s.get(File, after)
            if cursor is not None and cursor.tenant_id == who.tenant.id:
                newer = File.created_at > cursor.created_at
                older = File.created_at < cursor.created_at
                query = query.where(newer if order == "asc" else older)
        by = File.created_at.asc() if order == "asc" else File.created_at.desc()
        rows = list(s.scalars(query.order_by(by, File.id).limit(limit + 1)))
    data = [file_view(r) for r in rows[:limit]]
    return {
        "object": "list",
        "data": data,
        "has_more": len(rows) > limit,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


@router.get(PATH + "/{file_id}")
def retrieve(file_id: str, request: Request, who: Reader) -> dict[str, Any]:
    return file_view(owned_file(request, who.tenant.id, file_id))


@router.get(PATH + "/{file_id}/content")
def content(file_id: str, request: Request, who: Reader) -> StreamingResponse:
    row = owned_file(request, who.tenant.id, file_id)
    store = _store(request)
    try:
        stream = store.open_object(row.store_key)
    except (StoreUnavailable, OSError) as e:
        raise store_unavailable(e) from None

    def chunks():  # type: ignore[no-untyped-def]
        with stream:
            while chunk := stream.read(1 << 20):
                yield chunk

    headers = {"Content-Length": str(row.bytes)}
    return StreamingResponse(chunks(), media_type="application/octet-stream", headers=headers)


@router.delete(PATH + "/{file_id}")
def delete(file_id: str, request: Request, who: Submitter) -> dict[str, Any]:
    row = owned_file(request, who.tenant.id, file_id)
    try:
        _store(request).remove(row.store_key)
    except StoreUnavailable as e:
        raise store_unavailable(e) from None
    with request.app.state.platform.store.transaction() as s:
        found = s.get(File, file_id)
        if found is not None:
            s.delete(found)
    return {"id": file_id, "object": "file", "deleted": True}
