"""what a job has had uploaded to the artifact store, for the operator's per-job limits

`uploaded_files` and `uploaded_bytes` count every checkpoint uploaded for the job (sealed in the
store, pruned later or not), across its attempts: what `--job-max-upload-files` and
`--job-max-upload-mb` are held against. 0 for jobs recorded before this revision.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch table copy: see 0003); NOT NULL with a default for old rows.
    for column in ("uploaded_files", "uploaded_bytes"):
        op.add_column(
            "jobs", sa.Column(column, sa.BigInteger(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    op.drop_column("jobs", "uploaded_bytes")
    op.drop_column("jobs", "uploaded_files")
