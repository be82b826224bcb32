"""a job's quote at submission and what it measured when it finished

`quote` is what the calibrated simulator predicted for the job's setup (or why it has none);
`measured` is written when the job finishes, beside it: GPU-hours, time on GPUs, progress and the
steps it reported. Both None for jobs recorded before this revision.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch table copy: see 0003).
    op.add_column("jobs", sa.Column("quote", sa.JSON(), nullable=True))
    op.add_column("jobs", sa.Column("measured", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "measured")
    op.drop_column("jobs", "quote")
