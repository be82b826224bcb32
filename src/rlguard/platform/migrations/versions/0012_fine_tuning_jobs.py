"""OpenAI's fine-tuning jobs (/v1/fine_tuning/jobs), each over the rlguard job that runs it

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "fine_tuning_jobs",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("tenant_id", sa.String(40), sa.ForeignKey("tenants.id"), nullable=False),
        sa.Column("job_id", sa.String(40), sa.ForeignKey("jobs.id"), nullable=False, unique=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("method", sa.JSON(), nullable=False),
        sa.Column("training_file", sa.String(40), nullable=False),
        sa.Column("validation_file", sa.String(40), nullable=True),
        sa.Column("suffix", sa.String(64), nullable=True),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("model_deleted", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.create_index(
        "ix_fine_tuning_jobs_tenant_created", "fine_tuning_jobs", ["tenant_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_fine_tuning_jobs_tenant_created", table_name="fine_tuning_jobs")
    op.drop_table("fine_tuning_jobs")
