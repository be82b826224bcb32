"""What a tenant ships with a command job, checked at submission, before anything is stored.

Its working directory must be one of its own uploads (the key is under the tenant's prefix, so
another tenant's hash is simply not there); its requirements must resolve (jobenv.py). A set that
does not resolve is not a bad request but a failed job: the job is recorded failed, uv's message
in its `environment` event and its error, and never queued, so it never holds a GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rlguard.errors import InputError
from rlguard.platform import jobenv
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.schemas import JobCreate


@dataclass(frozen=True)
class Shipment:
    environment: dict[str, Any] | None = None  # jobenv.Environment.as_dict
    unresolved: str | None = None  # uv's message: the job fails at submission
    seconds: float = 0.0  # resolving took

    def event(self) -> tuple[dict[str, Any], str] | None:
        """The job's `environment` event (data, level), if it named requirements."""
        if self.unresolved is not None:
            return {"resolved": False, "message": self.unresolved}, "error"
        if self.environment is None:
            return None
        env = self.environment
        data = {"resolved": True, "packages": env["packages"], "hash": env["hash"]}
        return {**data, "base": env["base"], "seconds": self.seconds}, "info"

    def error(self) -> dict[str, Any]:
        assert self.unresolved is not None
        message = f"its requirements did not resolve: {self.unresolved}"
        return {"code": "requirements_unresolved", "message": message, "param": "requirements"}


def ship(
    body: JobCreate, tenant_id: str, software: jobenv.Software, artifacts: ArtifactStore | None
) -> Shipment:
    """Check the working directory (InputError naming it), then resolve the requirements."""
    if body.working_dir is not None:
        sha = body.working_dir.removeprefix("sha256:")
        if artifacts is None or not artifacts.exists(artifacts.working_dir_key(tenant_id, sha)):
            raise InputError(
                f"working_dir: {body.working_dir} is not a working directory you uploaded "
                "(POST /v1/working_dirs first)"
            )
    if body.requirements is None:
        return Shipment()
    start = time.monotonic()
    try:
        env = jobenv.resolve(body.requirements, software.base, software.index)
    except jobenv.ResolveFailed as e:
        return Shipment(unresolved=str(e), seconds=round(time.monotonic() - start, 3))
    return Shipment(env.as_dict(), seconds=round(time.monotonic() - start, 3))
