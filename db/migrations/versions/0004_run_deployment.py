"""The deployment a probe run measured (GPU, GPU count, model, engine, quantization), to find runs by it.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMNS = ("deploy_gpu", "deploy_gpu_count", "deploy_model", "deploy_engine", "deploy_quant")


def upgrade() -> None:
    """Add probe_runs.deploy_* (empty for existing runs: their deployment is not known) and their index."""
    with op.batch_alter_table("probe_runs") as batch:
        batch.add_column(sa.Column("deploy_gpu", sa.String(100), nullable=True))
        batch.add_column(sa.Column("deploy_gpu_count", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("deploy_model", sa.String(100), nullable=True))
        batch.add_column(sa.Column("deploy_engine", sa.String(100), nullable=True))
        batch.add_column(sa.Column("deploy_quant", sa.String(100), nullable=True))
    op.create_index(
        "ix_probe_runs_deployment", "probe_runs", ["deploy_model", "deploy_gpu", "deploy_engine", "deploy_quant"]
    )


def downgrade() -> None:
    """Drop the index and probe_runs.deploy_*."""
    op.drop_index("ix_probe_runs_deployment", table_name="probe_runs")
    with op.batch_alter_table("probe_runs") as batch:
        for column in COLUMNS:
            batch.drop_column(column)
