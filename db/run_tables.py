"""The probe's tables: a run, its levels, its requests, its GPU power and, for an imported run, where it came from."""

from datetime import datetime

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from db.base import Base
from probes.config import RunSettings
from probes.deployment import STORED


class RunRow(Base):
    """One probe run (the endpoint without credentials; the settings without the key)."""

    __tablename__ = "probe_runs"
    __table_args__ = (
        Index("ix_probe_runs_endpoint_model_started", "endpoint", "model", "started_at"),
        Index("ix_probe_runs_status_heartbeat", "status", "heartbeat_at"),
        Index("ix_probe_runs_deployment", "deploy_model", "deploy_gpu", "deploy_engine", "deploy_quant"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    endpoint: Mapped[str] = mapped_column(String(500))
    model: Mapped[str] = mapped_column(String(300))
    api: Mapped[str] = mapped_column(String(16))
    workload: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))
    settings_json: Mapped[str] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    owner: Mapped[str] = mapped_column(String(200), default="")
    label: Mapped[str] = mapped_column(String(200), default="")
    notes_json: Mapped[str] = mapped_column(Text, default="[]")  # what qualifies the figures (RunResult.notes)
    best_concurrency_within_slo: Mapped[int | None] = mapped_column(Integer, default=None)
    # The deployment measured (catalog ids; None: not known), copied from the settings to be queried.
    deploy_gpu: Mapped[str | None] = mapped_column(String(100), default=None)
    deploy_gpu_count: Mapped[int | None] = mapped_column(Integer, default=None)
    deploy_model: Mapped[str | None] = mapped_column(String(100), default=None)
    deploy_engine: Mapped[str | None] = mapped_column(String(100), default=None)
    deploy_quant: Mapped[str | None] = mapped_column(String(100), default=None)
    # The user confirmed the run measured deploy_model although the server named another model (calibrates then).
    model_confirmed: Mapped[bool] = mapped_column(Boolean, default=False)
    # --workers: a worker was lost (its requests after its last batch are missing), why; the workers (WorkerStats).
    partial: Mapped[bool] = mapped_column(Boolean, default=False)
    partial_reason: Mapped[str | None] = mapped_column(Text, default=None)
    workers_json: Mapped[str] = mapped_column(Text, default="[]")

    @property
    def settings(self) -> RunSettings:
        """The stored settings (never with a key); names the catalog no longer knows are kept as stored."""
        return RunSettings.model_validate_json(self.settings_json, context={STORED: True})


class LevelRow(Base):
    """One finished level: the full result as JSON, the figures lists and charts need as columns."""

    __tablename__ = "probe_levels"
    __table_args__ = (UniqueConstraint("run_id", "level_index", name="uq_probe_levels_run_level"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("probe_runs.id", ondelete="CASCADE"), index=True)
    level_index: Mapped[int] = mapped_column(Integer)
    concurrency: Mapped[int] = mapped_column(Integer)
    completed: Mapped[int] = mapped_column(Integer)
    failed: Mapped[int] = mapped_column(Integer)
    output_tok_s: Mapped[float | None] = mapped_column(Float, default=None)
    ttft_p50_ms: Mapped[float | None] = mapped_column(Float, default=None)
    tpot_p50_ms: Mapped[float | None] = mapped_column(Float, default=None)
    slo_met: Mapped[bool] = mapped_column(Boolean)
    result_json: Mapped[str] = mapped_column(Text)


class SampleRow(Base):
    """One finished request; the raw timings are in sample_json, the figures queries aggregate are columns."""

    __tablename__ = "probe_samples"
    __table_args__ = (Index("ix_probe_samples_run_level", "run_id", "level_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("probe_runs.id", ondelete="CASCADE"))
    level_index: Mapped[int] = mapped_column(Integer)
    concurrency: Mapped[int] = mapped_column(Integer)
    request_index: Mapped[int] = mapped_column(Integer)
    ok: Mapped[bool] = mapped_column(Boolean)
    error_kind: Mapped[str | None] = mapped_column(String(32), default=None)
    ttft_ms: Mapped[float | None] = mapped_column(Float, default=None)
    tpot_ms: Mapped[float | None] = mapped_column(Float, default=None)
    e2e_ms: Mapped[float | None] = mapped_column(Float, default=None)
    input_tokens: Mapped[int | None] = mapped_column(Integer, default=None)
    output_tokens: Mapped[int | None] = mapped_column(Integer, default=None)
    token_source: Mapped[str | None] = mapped_column(String(16), default=None)
    # --workers: the worker that sent it, and its scheduled and actual send time (s from the level's shared start).
    worker: Mapped[int | None] = mapped_column(Integer, default=None)
    scheduled_s: Mapped[float | None] = mapped_column(Float, default=None)
    sent_s: Mapped[float | None] = mapped_column(Float, default=None)
    sample_json: Mapped[str] = mapped_column(Text)


class PowerRow(Base):
    """One GPU's power reading at one scrape of a DCGM exporter, or a failed scrape (gpu empty, error set)."""

    __tablename__ = "probe_power"
    __table_args__ = (Index("ix_probe_power_run_at", "run_id", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("probe_runs.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    gpu: Mapped[str] = mapped_column(String(100))
    power_w: Mapped[float | None] = mapped_column(Float, default=None)
    energy_mj: Mapped[float | None] = mapped_column(Float, default=None)
    error: Mapped[str | None] = mapped_column(String(300), default=None)


class ImportRow(Base):
    """Where an imported run came from: the tool, its release, the file (by SHA-256), the file's settings."""

    __tablename__ = "run_imports"
    __table_args__ = (UniqueConstraint("file_sha256", "part", name="uq_run_imports_file_part"),)

    run_id: Mapped[str] = mapped_column(ForeignKey("probe_runs.id", ondelete="CASCADE"), primary_key=True)
    format: Mapped[str] = mapped_column(String(32))
    tool: Mapped[str] = mapped_column(String(100))
    tool_version: Mapped[str | None] = mapped_column(String(100), default=None)
    file_name: Mapped[str] = mapped_column(String(300))
    file_sha256: Mapped[str] = mapped_column(String(64), index=True)
    part: Mapped[int] = mapped_column(Integer, default=0)
    settings_json: Mapped[str] = mapped_column(Text, default="{}")
    imported_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    aggregate_only: Mapped[bool] = mapped_column(Boolean, default=False)
