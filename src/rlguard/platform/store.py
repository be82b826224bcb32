"""The store: SQLAlchemy on embedded SQLite (WAL) by default, PostgreSQL by URL; alembic-migrated.

Every state change is committed inside `transaction()` before the API answers, so an
acknowledged submission, event or decision survives a crash of the server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker

from rlguard.errors import InputError


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
        return create_engine(parsed, pool_size=10, max_overflow=20, pool_pre_ping=True)
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
        command.upgrade(alembic_config(connection), revision)


class Store:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = open_engine(url)
        migrate(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session whose work is committed when the block ends, rolled back if it raises."""
        with self._sessions.begin() as session:
            yield session

    def close(self) -> None:
        self.engine.dispose()
