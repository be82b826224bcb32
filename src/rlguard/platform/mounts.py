"""What a job may read: its own directory plus the read-only roots the operator declares.

`rlguard serve --mount NAME=PATH:ro` declares a root for every tenant, `--mount TENANT/NAME=
PATH:ro` for one tenant; each is bound read-only, at its own path, into the sandbox of the jobs
that may see it. A train config's paths are checked against that view at submission, before any
of them is touched: a path outside (also through `..`, or a symlink pointing out) is refused in
one line naming the field and the value. Relative paths mean the job's directory.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from rlguard.errors import InputError

NAME = re.compile(r"^(?:(?P<tenant>[A-Za-z0-9_.-]+)/)?(?P<name>[A-Za-z0-9_.-]+)$")


@dataclass(frozen=True)
class Mount:
    name: str
    path: str  # absolute, symlinks resolved
    tenant: str | None  # None: every tenant


def parse_mount(raw: str) -> Mount:
    """`[TENANT/]NAME=PATH[:ro]`; InputError naming the option and the value."""
    where = f"option --mount: {raw!r}"
    name, sep, rest = raw.partition("=")
    matched = NAME.match(name)
    if not sep or not matched or not rest:
        raise InputError(f"{where}: expected [TENANT/]NAME=PATH:ro")
    if rest.endswith(":rw"):
        raise InputError(f"{where}: only read-only mounts (:ro) are supported")
    path = rest.removesuffix(":ro")
    if not os.path.isabs(path):
        raise InputError(f"{where}: PATH must be absolute")
    if not os.path.isdir(path):
        raise InputError(f"{where}: no such directory {path}")
    if os.stat(path).st_mode & 0o005 != 0o005:
        raise InputError(f"{where}: jobs run as their own uids and cannot read it (chmod o+rx)")
    return Mount(matched["name"], os.path.realpath(path), matched["tenant"])


def check_mounts(mounts: list[Mount], data_dir: Path) -> None:
    """A mount may not hold the platform's data directory, nor lie inside it."""
    data = os.path.realpath(data_dir)
    for m in mounts:
        if inside(data, m.path) or inside(m.path, data):
            raise InputError(
                f"option --mount: {m.name}={m.path}: overlaps the data directory {data}"
            )


def roots_for(mounts: list[Mount], tenant: str) -> list[str]:
    return [m.path for m in mounts if m.tenant in (None, tenant)]


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def check_config_paths(paths: list[tuple[str, str]], job_dir: Path, roots: list[str]) -> None:
    """Each (field, path) must lie in the job's directory or a root, as written and once its
    symlinks are resolved; the first that does not raises `config: FIELD: ...`."""
    allowed = [os.path.realpath(job_dir), *roots]
    for field, value in paths:
        if not os.path.isabs(value):  # the job's directory is empty when it is submitted
            raise InputError(f"config: {field}: {value!r} must be an absolute path")
        written = os.path.normpath(value)  # `..` resolved lexically
        if not any(inside(written, r) for r in allowed):
            raise InputError(f"config: {field}: {value!r} is outside this job's view")
        if not any(inside(os.path.realpath(written), r) for r in allowed):
            raise InputError(f"config: {field}: {value!r} leads outside this job's view")
