"""Where the running servers' stores are, so an operator's command never writes elsewhere.

`rlguard serve` records itself (pid, its start time, port, data directory, store URL) in a
per-user runtime directory while it runs; `rlguard tenants create`, asked for no store in
particular, checks that the store it would open is a running server's, and refuses in one line
naming the servers' when it is not (a tenant made in another store gets a key no server accepts).
It also never creates a store: the server makes and migrates its own.

The registry is trusted only if this user owns it and no one else may write to it: in /tmp another
user could otherwise plant a record that points the operator's next tenant at their own store.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from rlguard.errors import InputError
from rlguard.io import write_text
from rlguard.platform.ray_head import process_alive

DATA_DIR_ENV = "RLGUARD_DATA_DIR"
RUNTIME_DIR_ENV = "RLGUARD_RUNTIME_DIR"
DEFAULT_DATA_DIR = Path("runs/platform")
SQLITE = "sqlite:///"
log = logging.getLogger("rlguard.platform")


@dataclass(frozen=True)
class Running:
    pid: int
    started: int | None  # the process's start time (with the pid, it names one process)
    port: int
    data_dir: str
    db: str  # the store's URL

    def alive(self) -> bool:
        if self.started is None:
            return process_alive(self.pid)
        return _started(self.pid) == self.started

    def store(self) -> str:
        """Where its store is, in words (a URL's password hidden)."""
        return f"in {self.data_dir}" if self.db.startswith(SQLITE) else f"at {hidden(self.db)}"

    def option(self) -> str:
        """What an operator's command is to be passed to use its store."""
        if self.db.startswith(SQLITE):
            return f"--data-dir {self.data_dir} (or set {DATA_DIR_ENV})"
        return f"--db {hidden(self.db)}"


def hidden(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def data_dir_default() -> Path:
    """The data directory a command uses when given none: `RLGUARD_DATA_DIR`, else
    runs/platform (as `rlguard serve`)."""
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


def _registry() -> Path:
    """`$RLGUARD_RUNTIME_DIR/servers`, else rlguard-UID/servers in /run for root, in the temporary
    directory for other users: one place per user whatever the session (a systemd service and an
    ssh login have different XDG_RUNTIME_DIRs, so that variable is not used)."""
    chosen = os.environ.get(RUNTIME_DIR_ENV)
    if chosen:
        return Path(chosen) / "servers"
    uid = os.getuid()
    base = "/run" if uid == 0 and os.access("/run", os.W_OK) else tempfile.gettempdir()
    return Path(base) / f"rlguard-{uid}" / "servers"


def _trusted(registry: Path) -> bool:
    """This user's own, writable by no one else (the directory and the one above it)."""
    for path in (registry.parent, registry):
        info = path.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return False
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


def _started(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (Linux's /proc), None where unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[19])  # field 22, starttime; fields[0] is field 3


def _records(registry: Path) -> Iterator[tuple[Path, Running | None]]:
    """Each record file and what it says (None: unreadable or not a record)."""
    for path in sorted(registry.glob("*.json")):
        try:
            yield path, Running(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            yield path, None


@contextlib.contextmanager
def recorded(port: int, data_dir: Path, db: str) -> Iterator[None]:
    """This server in the registry while the block runs (records of dead servers are dropped)."""
    registry = _registry()
    try:
        registry.mkdir(mode=0o700, parents=True, exist_ok=True)
        problem = None if _trusted(registry) else f"other users can write to {registry}"
    except OSError as e:
        problem = str(e)
    if problem:  # the server runs on; operators' commands then only check the store exists
        log.warning("this server is not recorded for operators' commands: %s", problem)
        yield
        return
    for path, record in _records(registry):
        if record is None or not record.alive():
            path.unlink(missing_ok=True)
    pid = os.getpid()
    record = Running(pid, _started(pid), port, str(data_dir.resolve()), _absolute(db))
    path = registry / f"{pid}.json"
    write_text(path, json.dumps(asdict(record)))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def running() -> list[Running]:
    """The servers of this user whose process is alive (none from a registry others can write)."""
    registry = _registry()
    if not registry.is_dir() or not _trusted(registry):
        return []
    return [r for _, r in _records(registry) if r is not None and r.alive()]


def serving(db: str) -> Running | None:
    """A running server of this user on the store `db`, if any."""
    return next((s for s in running() if s.db == _absolute(db)), None)


def _absolute(url: str) -> str:
    """A SQLite URL with its file's absolute path (a command may run from another directory)."""
    if url.startswith(SQLITE):
        return SQLITE + str(Path(url.removeprefix(SQLITE)).resolve())
    return url


def operator_store(db: str | None, data_dir: Path | None) -> str:
    """The store URL an operator's command opens: `--db`, else SQLite in `--data-dir` (or
    `RLGUARD_DATA_DIR`, or runs/platform). InputError, one line, where (asked for no store in
    particular) it is not a running server's, or where it would make a store no server made."""
    from rlguard.platform.store import default_url

    chosen = data_dir or data_dir_default()
    url = db or default_url(chosen)
    implicit = db is None and data_dir is None and DATA_DIR_ENV not in os.environ
    servers = running() if implicit else []
    if servers and not any(_absolute(url) == s.db for s in servers):
        raise InputError(_elsewhere(servers, chosen))
    if db is None and not Path(url.removeprefix(SQLITE)).is_file():
        raise InputError(
            f"no platform store in {chosen} (the server makes it): pass the server's --data-dir "
            f"or --db, or set {DATA_DIR_ENV}"
        )
    return url


def _elsewhere(servers: list[Running], chosen: Path) -> str:
    """The refusal of a command aimed at `chosen` while `servers` run on other stores."""
    if len(servers) > 1:
        said = "; ".join(f"pid {s.pid}, port {s.port}, {s.store()}" for s in servers)
        return (
            f"{len(servers)} running servers use other stores than {chosen} ({said}): pass the "
            f"--data-dir or --db of the one you mean, or set {DATA_DIR_ENV}"
        )
    s = servers[0]
    return (
        f"the running server (pid {s.pid}, port {s.port}) uses the store {s.store()}, not "
        f"{chosen}: pass {s.option()}"
    )
