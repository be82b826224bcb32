"""what a job's reports hold in the store, for the operator's per-job allowance

`store_bytes` counts the rows the job's own reports stored (their JSON and a fixed cost per
row: job_writes.py), what `--job-store-mb` is held against. 0 for jobs recorded before this
revision: their earlier rows are not counted.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch table copy: see 0003); NOT NULL with a default for old rows.
    op.add_column(
        "jobs", sa.Column("store_bytes", sa.BigInteger(), nullable=False, server_default="0")
    )


def downgrade() -> None:
    op.drop_column("jobs", "store_bytes")
