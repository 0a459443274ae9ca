"""Whether the user confirmed that a run measured its declared model although the server named another.

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
    """Add probe_runs.model_confirmed (false for existing runs).

    A plain ADD COLUMN, not a batch: SQLite's batch mode rebuilds the table for a boolean, and the rebuild drops the
    runs' levels and samples through their ON DELETE CASCADE keys.
    """
    op.add_column("probe_runs", sa.Column("model_confirmed", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    """Drop probe_runs.model_confirmed."""
    with op.batch_alter_table("probe_runs") as batch:
        batch.drop_column("model_confirmed")
