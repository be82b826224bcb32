"""when a run's process really started, and on which Ray node

A run is committed before Ray is asked for its actor, and Ray may not place it at once (no alive
node has its GPUs free) or ever: `running_at` is when its process was spawned (None: it never
ran), and GPU-hours and the occupancy timeline count from there. `node_id` is the Ray node that
ran it.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch table copy: see 0003). Runs recorded before this revision ran
    # from their start (as they were billed then).
    op.add_column("runs", sa.Column("running_at", sa.Float(), nullable=True))
    op.add_column("runs", sa.Column("node_id", sa.String(length=64), nullable=True))
    op.execute("UPDATE runs SET running_at = started_at")


def downgrade() -> None:
    op.drop_column("runs", "node_id")
    op.drop_column("runs", "running_at")
