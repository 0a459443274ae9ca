"""GPU power readings of a probe run that scraped a DCGM exporter (one row per GPU per scrape, or a failed scrape).

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create probe_power with its (run, time) index; existing runs have no readings."""
    op.create_table(
        "probe_power",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("probe_runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("gpu", sa.String(100), nullable=False),
        sa.Column("power_w", sa.Float(), nullable=True),
        sa.Column("energy_mj", sa.Float(), nullable=True),
        sa.Column("error", sa.String(300), nullable=True),
    )
    op.create_index("ix_probe_power_run_at", "probe_power", ["run_id", "at"])


def downgrade() -> None:
    """Drop probe_power."""
    op.drop_index("ix_probe_power_run_at", table_name="probe_power")
    op.drop_table("probe_power")
