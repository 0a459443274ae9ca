"""Saved scenarios (the cost calculator's first schema).

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the scenarios table."""
    op.create_table(
        "scenarios",
        sa.Column("id", sa.String(16), primary_key=True),
        sa.Column("page", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("params_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_scenarios_page", "scenarios", ["page"])


def downgrade() -> None:
    """Drop the scenarios table."""
    op.drop_index("ix_scenarios_page", table_name="scenarios")
    op.drop_table("scenarios")
