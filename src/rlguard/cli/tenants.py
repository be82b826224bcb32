"""`rlguard tenants ...`: the platform's tenants, made in its store by the operator (on the server
host), the store found as the server finds it (servers.py). On argparse (cli/argparsing.py):
`rlguard tenants --help` imports nothing of the store."""

from __future__ import annotations

import json
from pathlib import Path

from rlguard.cli.argparsing import Arg, Flag, Group, Opt, integer, json_flag, number

group = Group("tenants", "Tenants of the platform (operator).")


@group.command(
    Arg("name", "the tenant's unique name"),
    Opt("--quota-gpus", "GPUs it may hold at once", integer(), required=True),
    Opt("--weight", "its fair-share weight", number, 1.0),
    Flag("--admin", "the key also gets the admin scope"),
    Opt("--db", "store URL [default: SQLite in --data-dir]"),
    Opt(
        "--data-dir",
        "the platform's data directory [default: $RLGUARD_DATA_DIR or runs/platform]",
        Path,
    ),
    json_flag("print one JSON object"),
)
def create(
    name: str,
    quota_gpus: int,
    weight: float,
    admin: bool,
    db: str | None,
    data_dir: Path | None,
    json_out: bool,
) -> None:
    """Create a tenant in the store and print its API key (shown this once)."""
    from rlguard.platform.servers import operator_store
    from rlguard.platform.store import Store
    from rlguard.platform.tenants import create_tenant

    store = Store(operator_store(db, data_dir))
    try:
        tenant_id, key = create_tenant(store, name, quota_gpus, weight, admin)
    finally:
        store.close()
    if json_out:
        print(json.dumps({"tenant_id": tenant_id, "api_key": key}))
    else:
        print(f"tenant {name} ({tenant_id}); API key (shown once): {key}")
