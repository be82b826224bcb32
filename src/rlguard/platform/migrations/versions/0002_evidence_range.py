"""decisions' evidence as a range of eval seqs, not a list of them

A rule that reads a job's whole history (gao-trend, patience) rested each decision on every eval
so far, so a list made a job's decisions grow with the square of its evals.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

decisions = sa.table(
    "decisions",
    sa.column("id", sa.String),
    sa.column("job_id", sa.String),
    sa.column("evidence", sa.JSON),
)
events = sa.table(
    "events",
    sa.column("job_id", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("type", sa.String),
)


def upgrade() -> None:
    connection = op.get_bind()
    for row in connection.execute(sa.select(decisions.c.id, decisions.c.evidence)).all():
        if isinstance(row.evidence, list) and row.evidence:
            seqs = row.evidence
            rested_on = {"from_seq": seqs[0], "to_seq": seqs[-1], "evals": len(seqs)}
            query = decisions.update().where(decisions.c.id == row.id)
            connection.execute(query.values(evidence=rested_on))


def downgrade() -> None:
    connection = op.get_bind()
    for row in connection.execute(sa.select(decisions)).all():
        if isinstance(row.evidence, dict):
            rested_on = row.evidence
            seqs = sa.select(events.c.seq).where(
                events.c.job_id == row.job_id,
                events.c.type == "eval",
                events.c.seq.between(rested_on["from_seq"], rested_on["to_seq"]),
            )
            listed = list(connection.scalars(seqs.order_by(events.c.seq)))
            query = decisions.update().where(decisions.c.id == row.id)
            connection.execute(query.values(evidence=listed))
