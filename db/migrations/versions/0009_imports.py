"""Imported runs: where each came from (tool, release, file SHA-256, part, the file's settings, aggregate-only).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create run_imports (existing runs are probe runs: no row)."""
    op.create_table(
        "run_imports",
        sa.Column(
            "run_id",
            sa.String(32),
            sa.ForeignKey("probe_runs.id", ondelete="CASCADE"),
            primary_key=True,
            nullable=False,
        ),
        sa.Column("format", sa.String(32), nullable=False),
        sa.Column("tool", sa.String(100), nullable=False),
        sa.Column("tool_version", sa.String(100), nullable=True),
        sa.Column("file_name", sa.String(300), nullable=False),
        sa.Column("file_sha256", sa.String(64), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("settings_json", sa.Text(), nullable=False),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("aggregate_only", sa.Boolean(), nullable=False),
        sa.UniqueConstraint("file_sha256", "part", name="uq_run_imports_file_part"),
    )
    op.create_index("ix_run_imports_file_sha256", "run_imports", ["file_sha256"])


def downgrade() -> None:
    """Drop run_imports."""
    op.drop_index("ix_run_imports_file_sha256", table_name="run_imports")
    op.drop_table("run_imports")
