"""how a job's disk limit is held on the node its last run ran on

`disk` is `{"limit_bytes": N, "enforced": "kernel" | "polled"}` (volume.py): the kernel's where
the node mounted the job a volume of its limit's size, a polled watch where it could not. NULL
for jobs that never ran sandboxed.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("disk", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "disk")
