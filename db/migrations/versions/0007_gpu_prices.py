"""Refreshed GPU prices (python -m tco prices refresh, the Refresh prices button on /tco).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the gpu_prices table (empty: the shipped snapshot stays in use until a refresh)."""
    op.create_table(
        "gpu_prices",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("gpu", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("region", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("price_per_gpu_hour", sa.Float(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("source", sa.String(500), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_gpu_prices_gpu", "gpu_prices", ["gpu"])


def downgrade() -> None:
    """Drop the gpu_prices table."""
    op.drop_index("ix_gpu_prices_gpu", table_name="gpu_prices")
    op.drop_table("gpu_prices")
