"""What qualifies a probe run's figures (e.g. a trace replay's uncalibrated lengths), kept with the run.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add probe_runs.notes_json (a JSON list of texts; empty for existing runs)."""
    with op.batch_alter_table("probe_runs") as batch:
        batch.add_column(sa.Column("notes_json", sa.Text(), nullable=False, server_default="[]"))


def downgrade() -> None:
    """Drop probe_runs.notes_json."""
    with op.batch_alter_table("probe_runs") as batch:
        batch.drop_column("notes_json")
