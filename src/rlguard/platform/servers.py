"""Where the running servers' stores are, so an operator's command never writes elsewhere.

`rlguard serve` records itself (pid, port, data directory, store URL) in a per-user runtime
directory while it runs; `rlguard tenants create`, asked for no store in particular, checks that
the store it would open is a running server's, and refuses in one line naming the server's when
it is not (a tenant made in another store gets a key no server accepts). It also never creates a
store: the server makes and migrates its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from rlguard.errors import InputError
from rlguard.io import write_text

DATA_DIR_ENV = "RLGUARD_DATA_DIR"
DEFAULT_DATA_DIR = Path("runs/platform")
SQLITE = "sqlite:///"


@dataclass(frozen=True)
class Running:
    pid: int
    port: int
    data_dir: str
    db: str  # the store's URL


def data_dir_default() -> Path:
    """The data directory a command uses when given none: `RLGUARD_DATA_DIR`, else
    runs/platform (as `rlguard serve`)."""
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


def _registry() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"rlguard-{os.getuid()}" / "servers"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def recorded(port: int, data_dir: Path, db: str) -> Iterator[None]:
    """This server in the registry while the block runs."""
    registry = _registry()
    registry.mkdir(mode=0o700, parents=True, exist_ok=True)
    record = Running(os.getpid(), port, str(data_dir.resolve()), _absolute(db))
    path = registry / f"{record.pid}.json"
    write_text(path, json.dumps(asdict(record)))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def running() -> list[Running]:
    """The servers of this user whose process is alive."""
    found = []
    for path in sorted(_registry().glob("*.json")):
        with contextlib.suppress(OSError, ValueError, TypeError):
            record = Running(**json.loads(path.read_text()))
            if _alive(record.pid):
                found.append(record)
    return found


def _absolute(url: str) -> str:
    """A SQLite URL with its file's absolute path (a command may run from another directory)."""
    if url.startswith(SQLITE):
        return SQLITE + str(Path(url.removeprefix(SQLITE)).resolve())
    return url


def same_store(a: str, b: str) -> bool:
    return _absolute(a) == _absolute(b)


def operator_store(db: str | None, data_dir: Path | None) -> str:
    """The store URL an operator's command opens: `--db`, else SQLite in `--data-dir` (or
    `RLGUARD_DATA_DIR`, or runs/platform). InputError, one line, where it would write to a store
    no server made, or (asked for none in particular) to another than the running server's."""
    chosen = data_dir or data_dir_default()
    url = db or f"{SQLITE}{chosen / 'platform.db'}"
    if db is None and not (chosen / "platform.db").is_file():
        raise InputError(
            f"no platform store in {chosen} (the server makes it): pass the server's --data-dir "
            f"or --db, or set {DATA_DIR_ENV}"
        )
    implicit = db is None and data_dir is None and DATA_DIR_ENV not in os.environ
    servers = running()
    if implicit and servers and not any(same_store(url, s.db) for s in servers):
        s = servers[0]
        raise InputError(
            f"the running server (pid {s.pid}, port {s.port}) uses the store in {s.data_dir}, "
            f"not {chosen}: pass --data-dir {s.data_dir} (or set {DATA_DIR_ENV})"
        )
    return url
