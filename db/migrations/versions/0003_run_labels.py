"""A label people give a probe run, shown in run lists.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add probe_runs.label (empty for existing runs)."""
    with op.batch_alter_table("probe_runs") as batch:
        batch.add_column(sa.Column("label", sa.String(200), nullable=False, server_default=""))


def downgrade() -> None:
    """Drop probe_runs.label."""
    with op.batch_alter_table("probe_runs") as batch:
        batch.drop_column("label")
