"""checkpoints' place in the artifact store

A checkpoint is recorded only once its files and manifest are in the artifact store; `store_key`
is where. None: not held there (pruned by retention, or recorded before the store existed, when
`path` was a path on the job's node).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch table copy: see 0003).
    op.add_column("checkpoints", sa.Column("store_key", sa.String(length=400), nullable=True))


def downgrade() -> None:
    op.drop_column("checkpoints", "store_key")
