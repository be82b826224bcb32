"""a step may hold several checkpoints, one per name

A trainer reports the weights of a new best eval (`best/`, what is delivered) and, at the same
step, its resumable state (`checkpoints/step-N`, what a new attempt restores from the store on
any node): a checkpoint is unique by (job, step, path), no longer by (job, step). Downgrading
keeps the first recorded of each step.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

OLD_PG = "checkpoints_job_id_step_key"  # PostgreSQL's name for 0001's unnamed constraint
OLD_SQLITE = "uq_checkpoints_job_id"  # the name the convention below gives it, reflected
NEW = "uq_checkpoints_job_id_step_path"
CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _swap(drop: str, drop_sqlite: str, create: str, columns: list[str]) -> None:
    if op.get_context().dialect.name == "sqlite":  # a table copy: nothing references this one
        with op.batch_alter_table("checkpoints", naming_convention=CONVENTION) as batch:
            batch.drop_constraint(drop_sqlite, type_="unique")
            batch.create_unique_constraint(create, columns)
        return
    op.drop_constraint(drop, "checkpoints", type_="unique")
    op.create_unique_constraint(create, "checkpoints", columns)


def upgrade() -> None:
    _swap(OLD_PG, OLD_SQLITE, NEW, ["job_id", "step", "path"])


def downgrade() -> None:
    op.execute(
        "DELETE FROM checkpoints WHERE EXISTS (SELECT 1 FROM checkpoints AS d"
        " WHERE d.job_id = checkpoints.job_id AND d.step = checkpoints.step"
        " AND (d.created_at < checkpoints.created_at"
        " OR (d.created_at = checkpoints.created_at AND d.id < checkpoints.id)))"
    )
    _swap(NEW, NEW, OLD_PG, ["job_id", "step"])
