"""Alembic's environment: runs migrations on the connection the store hands over."""

from alembic import context

from rlguard.platform.db import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying
)
with context.begin_transaction():
    context.run_migrations()
