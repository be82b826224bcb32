"""The HTTP API's working-directory routes: a tenant uploads the zip of its code once
(`POST /v1/working_dirs`, the body the zip itself) and names it by hash in its jobs.

The body is read as it arrives into a temporary file, refused past the operator's cap (413),
checked whole (workdir.py: files only, names inside, CRCs) and only then stored under the
tenant's own prefix: a refused upload stores nothing. Uploading the same bytes again stores
nothing new. Another tenant's hash answers as a missing one (404).
"""

from __future__ import annotations

import re
import tempfile
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from rlguard.platform import workdir
from rlguard.platform.api import Reader, Submitter
from rlguard.platform.artifacts import ArtifactStore, StoreUnavailable
from rlguard.platform.errors import ApiError, store_unavailable

router = APIRouter()
PATH = "/v1/working_dirs"
SLACK_BYTES = 1 << 20
"""A zip's own headers on top of its files: what an upload may hold beyond the unpacked cap."""
SHA256 = re.compile(r"sha256:([0-9a-f]{64})")


def upload_limit(working_dir_bytes: int) -> int:
    return working_dir_bytes + SLACK_BYTES


def _store(request: Request) -> ArtifactStore:
    return request.app.state.deposits.store


def _view(archive: workdir.Archive, created: bool) -> dict[str, Any]:
    return {
        "object": "working_dir",
        "id": archive.id,
        "files": archive.files,
        "bytes": archive.bytes,
        "created": created,
    }


@router.post(PATH, status_code=201)
async def upload(request: Request, who: Submitter) -> dict[str, Any]:
    """Store a working directory's zip (Content-Type application/zip); its id, files and
    unpacked bytes (`created` false: it was stored already)."""
    cap = request.app.state.platform.software.working_dir_bytes
    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as body:
        async for chunk in request.stream():  # BodyLimit refuses it past upload_limit(cap)
            body.write(chunk)
        try:
            archive = await run_in_threadpool(workdir.check, body, cap)
        except workdir.ArchiveTooLarge as e:
            raise ApiError(
                413, f"working directory: {e}", "working_dir_too_large", "body"
            ) from None
        except workdir.BadArchive as e:
            raise ApiError(422, f"working directory: {e}", "invalid_working_dir", "body") from None
        store = _store(request)
        key = store.working_dir_key(who.tenant.id, archive.sha256)
        try:
            if await run_in_threadpool(store.exists, key):
                return _view(archive, created=False)
            await run_in_threadpool(_put, store, key, body)
        except (StoreUnavailable, OSError) as e:
            raise store_unavailable(e) from None
    return _view(archive, created=True)


def _put(store: ArtifactStore, key: str, body: Any) -> None:
    with tempfile.NamedTemporaryFile(prefix="rlguard-workdir-") as local:
        body.seek(0)
        while chunk := body.read(workdir.CHUNK):
            local.write(chunk)
        local.flush()
        store.put_file(key, local.name)


@router.get(PATH + "/{working_dir_id}")
def stored(working_dir_id: str, request: Request, who: Reader) -> dict[str, Any]:
    """Whether this tenant has the working directory (a client asks before uploading)."""
    match = SHA256.fullmatch(working_dir_id)
    store = _store(request)
    try:
        found = match is not None and store.exists(store.working_dir_key(who.tenant.id, match[1]))
    except StoreUnavailable as e:
        raise store_unavailable(e) from None
    if not found:
        message = f"no working directory {working_dir_id!r}"
        raise ApiError(404, message, "working_dir_not_found", "working_dir_id")
    return {"object": "working_dir", "id": working_dir_id}
