"""Tenants and their API keys: the operator's side (`rlguard tenants create` on the server host)."""

from __future__ import annotations

import time

from sqlalchemy import select

from rlguard.errors import InputError
from rlguard.platform.db import ApiKey, Tenant
from rlguard.platform.keys import API_KEY_PREFIX, digest, new_id, new_secret, visible_prefix
from rlguard.platform.store import Store

SCOPES = ("admin", "submit", "read")


def create_tenant(
    store: Store, name: str, quota_gpus: int, weight: float = 1.0, admin: bool = False
) -> tuple[str, str]:
    """A new tenant and its first key: (tenant id, the key, shown this once)."""
    if not name.strip() or len(name) > 100:
        raise InputError(f"name: must be 1-100 characters (got {name!r})")
    if quota_gpus < 0:
        raise InputError(f"option --quota-gpus: must be >= 0 (got {quota_gpus})")
    if not weight > 0:
        raise InputError(f"option --weight: must be > 0 (got {weight})")
    with store.transaction() as s:
        if s.scalar(select(Tenant).where(Tenant.name == name)) is not None:
            raise InputError(f"name: a tenant named {name!r} exists already")
        tenant = Tenant(
            id=new_id("tenant"),
            name=name,
            quota_gpus=quota_gpus,
            weight=weight,
            created_at=time.time(),
        )
        s.add(tenant)
        s.flush()
        key = issue_key(s, tenant.id, ["admin", "submit", "read"] if admin else ["submit", "read"])
    return tenant.id, key


def issue_key(session, tenant_id: str, scopes: list[str], expires_at: float | None = None) -> str:  # type: ignore[no-untyped-def]
    key = new_secret(API_KEY_PREFIX)
    session.add(
        ApiKey(
            id=new_id("key"),
            tenant_id=tenant_id,
            digest=digest(key),
            prefix=visible_prefix(key),
            scopes=scopes,
            created_at=time.time(),
            expires_at=expires_at,
        )
    )
    return key
