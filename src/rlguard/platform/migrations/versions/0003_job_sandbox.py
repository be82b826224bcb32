"""jobs' sandbox: the uid each job runs as, and the sandbox its runs got

A job keeps one uid for its whole life (its directory belongs to it across attempts), unique
across the platform's jobs, so no two jobs ever share an identity on a node.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN and an index (no batch table copy: SQLite would drop the table that the
    # runs, events and checkpoints reference).
    op.add_column("jobs", sa.Column("uid", sa.Integer(), nullable=True))
    op.add_column("jobs", sa.Column("sandbox", sa.String(length=40), nullable=True))
    op.create_index("ix_jobs_uid", "jobs", ["uid"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_jobs_uid", table_name="jobs")
    op.drop_column("jobs", "sandbox")
    op.drop_column("jobs", "uid")
