"""Ray workers (--workers): each request's worker and scheduled and actual send time; a run's workers and partial.

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
    """Add the worker columns to probe_samples and the workers and partial columns to probe_runs (old runs: none).

    Plain ADD COLUMNs, not a batch: SQLite's batch mode rebuilds the table for a boolean, and rebuilding probe_runs
    drops it first, which cascades to its samples (see 0006).
    """
    op.add_column("probe_samples", sa.Column("worker", sa.Integer(), nullable=True))
    op.add_column("probe_samples", sa.Column("scheduled_s", sa.Float(), nullable=True))
    op.add_column("probe_samples", sa.Column("sent_s", sa.Float(), nullable=True))
    op.add_column("probe_runs", sa.Column("partial", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("probe_runs", sa.Column("partial_reason", sa.Text(), nullable=True))
    op.add_column("probe_runs", sa.Column("workers_json", sa.Text(), nullable=False, server_default="[]"))


def downgrade() -> None:
    """Drop the columns."""
    with op.batch_alter_table("probe_runs") as batch:
        batch.drop_column("workers_json")
        batch.drop_column("partial_reason")
        batch.drop_column("partial")
    with op.batch_alter_table("probe_samples") as batch:
        batch.drop_column("sent_s")
        batch.drop_column("scheduled_s")
        batch.drop_column("worker")
