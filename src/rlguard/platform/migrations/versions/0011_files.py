"""tenants' fine-tuning files (OpenAI's /v1/files)

A file's bytes live in the artifact store; its row names it, its tenant, purpose, size and how
many examples of each kind it holds (`shapes`, finetune/examples.py).

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "files",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("purpose", sa.String(40), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("shapes", sa.JSON(), nullable=False),
        sa.Column("store_key", sa.String(400), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_files_tenant_created", "files", ["tenant_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_files_tenant_created", table_name="files")
    op.drop_table("files")
