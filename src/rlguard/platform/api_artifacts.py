"""The HTTP API's artifact routes: a checkpoint's files (listed from its manifest, each
streamed from the store) and deleting a finished job. Same rules as api.py: a tenant sees only
its own jobs, and another tenant's job answers exactly as a missing one (404)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from rlguard.platform.api import Caller, Reader, Submitter
from rlguard.platform.api import _visible_job as visible_job
from rlguard.platform.artifacts import StoreUnavailable
from rlguard.platform.db import Checkpoint
from rlguard.platform.deletion import delete_job
from rlguard.platform.deposits import Deposits
from rlguard.platform.errors import ApiError, store_unavailable
from rlguard.platform.service import Conflict, NotFound

router = APIRouter()


def _deposits(request: Request) -> Deposits:
    return request.app.state.deposits


def _manifest(
    deposits: Deposits, who: Caller, job_id: str, checkpoint_id: str
) -> tuple[str, dict[str, Any]]:
    """The store key and manifest of a visible job's stored checkpoint (404 otherwise)."""
    with deposits.platform.store.transaction() as s:
        visible_job(s, job_id, who)
        checkpoint = _checkpoint(s, job_id, checkpoint_id)
        key = checkpoint.store_key
    if key is None:
        message = f"checkpoint {checkpoint_id!r} is not held (pruned by retention)"
        raise ApiError(404, message, "checkpoint_not_stored", "checkpoint_id")
    try:
        manifest = deposits.store.manifest(key)
    except StoreUnavailable as e:
        raise store_unavailable(e) from None
    if manifest is None:  # recorded only once sealed: gone from the store behind our back
        raise ApiError(404, f"checkpoint {checkpoint_id!r} is missing", "checkpoint_missing")
    return key, manifest


def _checkpoint(s: Session, job_id: str, checkpoint_id: str) -> Checkpoint:
    checkpoint = s.get(Checkpoint, checkpoint_id)
    if checkpoint is None or checkpoint.job_id != job_id:
        message = f"no checkpoint {checkpoint_id!r} of job {job_id!r}"
        raise ApiError(404, message, "checkpoint_not_found", "checkpoint_id")
    return checkpoint


@router.get("/v1/jobs/{job_id}/checkpoints/{checkpoint_id}/files")
def checkpoint_files(job_id: str, checkpoint_id: str, request: Request, who: Reader) -> dict:
    """The checkpoint's files, named relative to it, with sizes and sha256 (its manifest)."""
    _, manifest = _manifest(_deposits(request), who, job_id, checkpoint_id)
    base = f"/v1/jobs/{job_id}/checkpoints/{checkpoint_id}/files"
    files = [
        {**f, "object": "job.checkpoint.file", "url": f"{base}/{f['name']}"}
        for f in manifest["files"]
    ]
    return {"object": "list", "data": files, "has_more": False, "bytes": manifest["bytes"]}


@router.get("/v1/jobs/{job_id}/checkpoints/{checkpoint_id}/files/{name:path}")
def checkpoint_file(
    job_id: str, checkpoint_id: str, name: str, request: Request, who: Reader
) -> StreamingResponse:
    """One file, streamed from the store (only a name its manifest lists)."""
    deposits = _deposits(request)
    key, manifest = _manifest(deposits, who, job_id, checkpoint_id)
    entry = next((f for f in manifest["files"] if f["name"] == name), None)
    if entry is None:
        message = f"checkpoint {checkpoint_id!r} has no file {name!r}"
        raise ApiError(404, message, "file_not_found", "name")
    headers = {
        "Content-Length": str(entry["size"]),
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(name.rsplit('/', 1)[-1])}",
        "X-Checksum-Sha256": entry["sha256"],
    }
    return StreamingResponse(
        deposits.store.read(key, name), media_type="application/octet-stream", headers=headers
    )


@router.delete("/v1/jobs/{job_id}")
def delete(job_id: str, request: Request, who: Submitter) -> dict[str, Any]:
    """A finished job's artifacts, its files on every node and its rows (409 while it has not
    finished); `left_on_nodes`: the nodes that may still hold its files (not alive, or no
    answer), for the operator."""
    deposits = _deposits(request)
    with deposits.platform.store.transaction() as s:
        visible_job(s, job_id, who)
    try:
        left = delete_job(deposits.platform, deposits.store, job_id)
    except NotFound:
        raise ApiError(404, f"no job {job_id!r}", "job_not_found", "job_id") from None
    except Conflict as e:
        raise ApiError(409, str(e), "job_not_finished", "job_id") from None
    except StoreUnavailable as e:
        raise store_unavailable(e) from None
    return {"object": "job.deleted", "id": job_id, "deleted": True, "left_on_nodes": left}
