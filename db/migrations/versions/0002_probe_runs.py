"""Probe runs, their levels and per-request samples.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create probe_runs, probe_levels and probe_samples with their indexes."""
    op.create_table(
        "probe_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("endpoint", sa.String(500), nullable=False),
        sa.Column("model", sa.String(300), nullable=False),
        sa.Column("api", sa.String(16), nullable=False),
        sa.Column("workload", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("settings_json", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("best_concurrency_within_slo", sa.Integer(), nullable=True),
    )
    op.create_index("ix_probe_runs_started_at", "probe_runs", ["started_at"])
    op.create_index("ix_probe_runs_endpoint_model_started", "probe_runs", ["endpoint", "model", "started_at"])
    op.create_index("ix_probe_runs_status_heartbeat", "probe_runs", ["status", "heartbeat_at"])
    op.create_table(
        "probe_levels",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("probe_runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("level_index", sa.Integer(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("completed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("output_tok_s", sa.Float(), nullable=True),
        sa.Column("ttft_p50_ms", sa.Float(), nullable=True),
        sa.Column("tpot_p50_ms", sa.Float(), nullable=True),
        sa.Column("slo_met", sa.Boolean(), nullable=False),
        sa.Column("result_json", sa.Text(), nullable=False),
        sa.UniqueConstraint("run_id", "level_index", name="uq_probe_levels_run_level"),
    )
    op.create_index("ix_probe_levels_run_id", "probe_levels", ["run_id"])
    op.create_table(
        "probe_samples",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), sa.ForeignKey("probe_runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("level_index", sa.Integer(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("request_index", sa.Integer(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("error_kind", sa.String(32), nullable=True),
        sa.Column("ttft_ms", sa.Float(), nullable=True),
        sa.Column("tpot_ms", sa.Float(), nullable=True),
        sa.Column("e2e_ms", sa.Float(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("token_source", sa.String(16), nullable=True),
        sa.Column("sample_json", sa.Text(), nullable=False),
    )
    op.create_index("ix_probe_samples_run_level", "probe_samples", ["run_id", "level_index"])


def downgrade() -> None:
    """Drop the probe tables."""
    op.drop_table("probe_samples")
    op.drop_table("probe_levels")
    op.drop_table("probe_runs")
