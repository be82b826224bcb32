"""The store: SQLAlchemy on embedded SQLite (WAL) by default, PostgreSQL by URL; alembic-migrated.

Every state change is committed inside `transaction()` before the API answers, so an
acknowledged submission, event or decision survives a crash of the server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker

from rlguard.errors import InputError

IDLE_IN_TRANSACTION_MS = 10_000
"""PostgreSQL ends a session left inside a transaction this long, and its locks with it: a server
that froze or was cut off mid-transaction cannot hold up the standby's takeover (lease.py)."""

MIGRATION_LOCK = 0x726C6775  # "rlgu": servers starting together on one store migrate in turn


def default_url(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / 'platform.db'}"


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across a process crash
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def open_engine(url: str) -> Engine:
    """An engine for `url` (sqlite:///path or postgresql://...); a bad URL is an InputError."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InputError(f"option --db: not a database URL {url!r}") from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"check_same_thread": False, "timeout": 10})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        options = f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"
        return create_engine(
            parsed,
            pool_size=10,
            max_overflow=20,
            pool_pre_ping=True,
            connect_args={"options": options},
        )
    raise InputError(f"option --db: use sqlite:/// or postgresql:// (got {url!r})")


def alembic_config(connection: Connection) -> Config:
    """Alembic's configuration for the platform's migrations, run on `connection`."""
    cfg = Config()
    cfg.set_main_option("script_location", str(files("rlguard.platform") / "migrations"))
    cfg.attributes["connection"] = connection
    return cfg


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision`, the newest by default (a no-op when it is there already)."""
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))
        command.upgrade(alembic_config(connection), revision)


class Store:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = open_engine(url)
        migrate(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self.fence: Callable[[Session], None] | None = None  # a leader's lease (lease.py)
        self.epoch = 0  # that lease's epoch, recorded on the runs this server launches

    @property
    def shared(self) -> bool:
        """Whether several servers may use this store (PostgreSQL: one leads by lease)."""
        return self.engine.dialect.name == "postgresql"

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session whose work is committed when the block ends, rolled back if it raises;
        on a leader's store, refused (lease.Deposed) once another server leads."""
        with self._sessions.begin() as session:
            if self.fence is not None:
                self.fence(session)
            yield session

    def confirm_lead(self) -> None:
        """On a leader's store, ask the lease before acting outside the store (Ray): a server
        that froze past its lease learns it no longer leads before it touches a job."""
        if self.fence is not None:
            with self.transaction():
                pass

    def close(self) -> None:
        self.engine.dispose()
