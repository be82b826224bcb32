"""The control lease of servers sharing a store, and the epoch of the leader that launched a run

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    lease = op.create_table(
        "control_lease",
        sa.Column("epoch", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("url", sa.String(300), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("acquired_at", sa.Float(), nullable=False),
    )
    free = {"epoch": 0, "holder": "", "url": "", "expires_at": 0.0, "acquired_at": 0.0}
    op.bulk_insert(lease, [free])  # expired: the first server to start takes it
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("epoch", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("epoch")
    op.drop_table("control_lease")
