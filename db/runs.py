"""Probe runs, their levels and per-request samples: tables, every query, and a recorder for the probe's callbacks."""

import json
import os
import socket
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from sqlalchemy import (
    Boolean,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    case,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column

from db.base import Base
from db.engine import rowcount, session_factory
from probes.config import RunSettings, redact_url
from probes.deployment import STORED, Deployment
from probes.metrics import best_concurrency_within_slo, best_request_rate_within_slo, summarize_level
from probes.models import LevelResult, RequestSample, RunResult, RunStatus
from probes.ratesearch import search_of_levels
from probes.sessions import level_turn_stats
from probes.worker import HEARTBEAT_INTERVAL_S
from settings import get_settings

MISSED_HEARTBEATS = 4  # a running run that missed this many heartbeats in a row is taken as interrupted
HEARTBEAT_STALE_S = MISSED_HEARTBEATS * HEARTBEAT_INTERVAL_S
MAX_TEXT_CHARS = 2000
INTERRUPTED_ERROR = "the process running this probe stopped (crash or restart); finished requests are kept"


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


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
    sample_json: Mapped[str] = mapped_column(Text)


def _deployment_columns(deployment: Deployment) -> dict[str, object]:
    """The deployment as RunRow's deploy_* columns."""

    def cut(value: str | None) -> str | None:
        return value[:100] if value is not None else None

    return {
        "deploy_gpu": cut(deployment.gpu),
        "deploy_gpu_count": deployment.gpu_count,
        "deploy_model": cut(deployment.model),
        "deploy_engine": cut(deployment.engine),
        "deploy_quant": cut(deployment.quant),
    }


def _settings_json(settings: RunSettings) -> str:
    text = settings.model_dump_json()
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    if key and key in text:  # defence in depth: the model never serialises it
        text = text.replace(key, "***")
    return text


_PROCESS_TOKEN = uuid.uuid4().hex[:12]  # tells this process from an earlier one that had the same pid


@cache
def _host() -> str:
    """The host part of an owner: the host name, and the PID namespace where there is one.

    Two containers can share a host name, and their pids mean nothing to each other.
    """
    try:
        namespace = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return socket.gethostname()
    return f"{socket.gethostname()}/{namespace.removeprefix('pid:[').removesuffix(']')}"


def _owner() -> str:
    return f"{_host()}:{os.getpid()}:{_PROCESS_TOKEN}"[:200]


def _owner_is_dead(owner: str) -> bool:
    """True when the owner ran on this host and its process is gone (or its pid now belongs to this process)."""
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    if host != _host() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return token != _PROCESS_TOKEN
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def create_run(engine: Engine, settings: RunSettings, *, started_at: datetime | None = None) -> str:
    """Insert a RUNNING run and return its id."""
    now = started_at or _now()
    run_id = uuid.uuid4().hex
    row = RunRow(
        id=run_id,
        endpoint=redact_url(settings.base_url)[:500],
        model=settings.model[:300],
        api=str(settings.api),
        workload=str(settings.workload),
        status=RunStatus.RUNNING.value,
        settings_json=_settings_json(settings),
        started_at=now,
        heartbeat_at=now,
        owner=_owner(),
        label=settings.label,
        **_deployment_columns(settings.deployment),
    )
    with session_factory(engine)() as session, session.begin():
        session.add(row)
    return run_id


def set_deployment(engine: Engine, run_id: str, deployment: Deployment) -> None:
    """Record the deployment a run measured (what the server told filled in) in its settings and columns."""
    with session_factory(engine)() as session, session.begin():
        row = session.get(RunRow, run_id)
        if row is None:
            return
        row.settings_json = _settings_json(row.settings.model_copy(update={"deployment": deployment}))
        for column, value in _deployment_columns(deployment).items():
            setattr(row, column, value)
        row.heartbeat_at = _now()


def _sample_row(run_id: str, sample: RequestSample) -> SampleRow:
    return SampleRow(
        run_id=run_id,
        level_index=sample.level_index,
        concurrency=sample.concurrency,
        request_index=sample.index,
        ok=sample.ok,
        error_kind=str(sample.error_kind) if sample.error_kind else None,
        ttft_ms=sample.ttft_ms,
        tpot_ms=sample.tpot_ms,
        e2e_ms=sample.e2e_ms,
        input_tokens=sample.input_tokens,
        output_tokens=sample.output_tokens,
        token_source=str(sample.token_source) if sample.token_source else None,
        sample_json=sample.model_dump_json(),
    )


def add_samples(engine: Engine, run_id: str, samples: list[RequestSample]) -> None:
    """Store finished requests in one short transaction, and beat the run's heartbeat."""
    if not samples:
        return
    with session_factory(engine)() as session, session.begin():
        session.add_all([_sample_row(run_id, s) for s in samples])
        session.execute(update(RunRow).where(RunRow.id == run_id).values(heartbeat_at=_now()))


def add_sample(engine: Engine, run_id: str, sample: RequestSample) -> None:
    """Store one finished request (as it arrives)."""
    add_samples(engine, run_id, [sample])


def add_level(engine: Engine, run_id: str, level: LevelResult) -> None:
    """Store a finished level's result (replacing one stored before for the same index)."""
    with session_factory(engine)() as session, session.begin():
        session.execute(delete(LevelRow).where(LevelRow.run_id == run_id, LevelRow.level_index == level.index))
        session.add(
            LevelRow(
                run_id=run_id,
                level_index=level.index,
                concurrency=level.concurrency,
                completed=level.completed,
                failed=level.failed,
                output_tok_s=level.output_tok_s,
                ttft_p50_ms=level.ttft_ms.p50,
                tpot_p50_ms=level.tpot_ms.p50,
                slo_met=level.slo.met,
                result_json=level.model_dump_json(),
            )
        )
        session.execute(update(RunRow).where(RunRow.id == run_id).values(heartbeat_at=_now()))


def heartbeat(engine: Engine, run_id: str) -> None:
    """Tell other processes this run is alive."""
    with session_factory(engine)() as session, session.begin():
        session.execute(
            update(RunRow)
            .where(RunRow.id == run_id, RunRow.status == RunStatus.RUNNING.value)
            .values(heartbeat_at=_now())
        )


def finish_run(
    engine: Engine,
    run_id: str,
    status: RunStatus,
    *,
    error: str | None = None,
    best_concurrency_within_slo: int | None = None,
    finished_at: datetime | None = None,
    notes: Sequence[str] = (),
) -> None:
    """Set the final status (completed, cancelled, failed) and the notes that qualify the figures."""
    with session_factory(engine)() as session, session.begin():
        session.execute(
            update(RunRow)
            .where(RunRow.id == run_id)
            .values(
                status=status.value,
                error=error[:MAX_TEXT_CHARS] if error else None,
                finished_at=finished_at or _now(),
                heartbeat_at=_now(),
                best_concurrency_within_slo=best_concurrency_within_slo,
                notes_json=json.dumps([note[:MAX_TEXT_CHARS] for note in notes]),
            )
        )


def recover_interrupted_runs(
    engine: Engine, stale_after_s: float = HEARTBEAT_STALE_S, now: datetime | None = None
) -> int:
    """Mark RUNNING runs whose heartbeat is stale as INTERRUPTED (their samples stay); safe with several replicas.

    The heartbeat was written with its writer's clock and is compared with this one's: hosts keep NTP time.
    """
    cutoff = (now or _now()) - timedelta(seconds=stale_after_s)
    with session_factory(engine)() as session, session.begin():
        result = session.execute(
            update(RunRow)
            .where(RunRow.status == RunStatus.RUNNING.value, RunRow.heartbeat_at < cutoff)
            .values(status=RunStatus.INTERRUPTED.value, finished_at=RunRow.heartbeat_at, error=INTERRUPTED_ERROR)
        )
        return rowcount(result)


def recover_orphaned_runs(engine: Engine) -> int:
    """Mark RUNNING runs of this host whose process is gone INTERRUPTED at once (samples stay); returns how many.

    Runs of other hosts wait for their heartbeat to go stale (recover_interrupted_runs).
    """
    with session_factory(engine)() as session:  # read, then write only when needed (SQLite: no lock upgrade)
        rows = session.execute(select(RunRow.id, RunRow.owner).where(RunRow.status == RunStatus.RUNNING.value)).all()
    dead = [run_id for run_id, owner in rows if _owner_is_dead(owner)]
    if not dead:
        return 0
    with session_factory(engine)() as session, session.begin():
        result = session.execute(
            update(RunRow)
            .where(RunRow.id.in_(dead), RunRow.status == RunStatus.RUNNING.value)
            .values(status=RunStatus.INTERRUPTED.value, finished_at=RunRow.heartbeat_at, error=INTERRUPTED_ERROR)
        )
        return rowcount(result)


def list_runs(
    engine: Engine,
    *,
    endpoint: str | None = None,
    model: str | None = None,
    status: RunStatus | None = None,
    limit: int = 200,
    offset: int = 0,
) -> list[RunRow]:
    """Runs, newest first, optionally filtered by endpoint, model (exact) and status."""
    query = select(RunRow).order_by(RunRow.started_at.desc(), RunRow.id).limit(limit).offset(offset)
    if endpoint:
        query = query.where(RunRow.endpoint == endpoint)
    if model:
        query = query.where(RunRow.model == model)
    if status is not None:
        query = query.where(RunRow.status == status.value)
    with session_factory(engine)() as session:
        return list(session.scalars(query))


def run_filters(engine: Engine) -> tuple[list[str], list[str]]:
    """The distinct endpoints and models stored (for filter widgets)."""
    with session_factory(engine)() as session:
        endpoints = list(session.scalars(select(RunRow.endpoint).distinct().order_by(RunRow.endpoint)))
        models = list(session.scalars(select(RunRow.model).distinct().order_by(RunRow.model)))
    return endpoints, models


def get_run_row(engine: Engine, run_id: str) -> RunRow | None:
    """The run's row, or None."""
    with session_factory(engine)() as session:
        return session.get(RunRow, run_id)


def load_samples(engine: Engine, run_id: str, *, skip_levels: Collection[int] = ()) -> list[RequestSample]:
    """The run's stored requests, by level then send order (optionally without some levels)."""
    query = (
        select(SampleRow.sample_json)
        .where(SampleRow.run_id == run_id)
        .order_by(SampleRow.level_index, SampleRow.request_index, SampleRow.id)
    )
    if skip_levels:
        query = query.where(SampleRow.level_index.not_in(list(skip_levels)))
    with session_factory(engine)() as session:
        return [RequestSample.model_validate_json(text) for text in session.scalars(query)]


def load_levels(engine: Engine, run_id: str) -> list[LevelResult]:
    """The run's stored level results, in order."""
    query = select(LevelRow.result_json).where(LevelRow.run_id == run_id).order_by(LevelRow.level_index)
    with session_factory(engine)() as session:
        return [LevelResult.model_validate_json(text) for text in session.scalars(query)]


def _levels_from_samples(
    row: RunRow, settings: RunSettings, samples: list[RequestSample], stored: list[LevelResult]
) -> list[LevelResult]:
    """Stored levels, plus levels recomputed from the samples of a level that never finished (interrupted)."""
    have = {level.index for level in stored}
    levels = list(stored)
    by_level: dict[int, list[RequestSample]] = {}
    for sample in samples:
        by_level.setdefault(sample.level_index, []).append(sample)
    for index, group in sorted(by_level.items()):
        if index in have or index < 0:
            continue
        duration_s = max((s.start_s + (s.e2e_ms or 0.0) / 1000.0 for s in group), default=0.0)
        when = _aware(row.heartbeat_at) or _now()
        levels.append(
            summarize_level(
                index,
                group[0].concurrency,
                group,
                started_at=_aware(row.started_at) or when,
                finished_at=when,
                duration_s=duration_s,
                slo=settings.slo,
                request_rate_rps=settings.rate_of_level(index),
            ).model_copy(update={"turns": level_turn_stats(group) if settings.sessions_mode else None})
        )
    return sorted(levels, key=lambda level: level.index)


def get_run(engine: Engine, run_id: str, *, with_samples: bool = True) -> RunResult | None:
    """The run (settings, levels, samples) as the probe's result model, or None.

    Without samples only the stored levels are read (and the samples of a level that never finished, to
    summarise it): what a page needs to chart a run, at a cost that does not grow with its requests.
    """
    row = get_run_row(engine, run_id)
    if row is None:
        return None
    settings = row.settings
    stored = load_levels(engine, run_id)
    partial = load_samples(engine, run_id, skip_levels=[level.index for level in stored])
    samples = load_samples(engine, run_id) if with_samples else []
    levels = _levels_from_samples(row, settings, partial, stored)
    best = row.best_concurrency_within_slo
    if best is None and row.status != RunStatus.RUNNING.value and not (settings.trace_mode or settings.sessions_mode):
        best = best_concurrency_within_slo(levels)
    finished = row.status != RunStatus.RUNNING.value
    best_rate = best_request_rate_within_slo(levels) if finished else None
    search = None
    if finished and settings.find_max_rate:
        search = search_of_levels(
            levels,
            max_levels=settings.search_max_levels,
            max_requests=get_settings().probe_max_requests_per_run - settings.warmup_requests,
            max_duration_s=settings.search_max_duration_s,
        )
    return RunResult(
        run_id=row.id,
        endpoint=row.endpoint,
        model=row.model,
        settings=settings,
        status=RunStatus(row.status),
        error=row.error,
        started_at=_aware(row.started_at) or _now(),
        finished_at=_aware(row.finished_at),
        best_concurrency_within_slo=best,
        best_request_rate_within_slo_rps=best_rate,
        rate_search=search,
        levels=levels,
        samples=samples,
        notes=json.loads(row.notes_json or "[]"),
    )


def sample_counts(engine: Engine, run_id: str) -> tuple[int, int]:
    """(requests stored, requests failed) for a run, counted in SQL."""
    query = select(func.count(), func.coalesce(func.sum(case((SampleRow.ok.is_(False), 1), else_=0)), 0)).where(
        SampleRow.run_id == run_id, SampleRow.level_index >= 0
    )
    with session_factory(engine)() as session:
        total, failed = session.execute(query).one()
        return int(total), int(failed)


def error_summary(engine: Engine, run_id: str) -> list[dict[str, object]]:
    """Failed requests by concurrency and kind with the first message of each kind (as probes.figures.error_rows)."""
    groups = (
        select(SampleRow.concurrency, SampleRow.error_kind, func.count(), func.min(SampleRow.id))
        .where(SampleRow.run_id == run_id, SampleRow.ok.is_(False), SampleRow.level_index >= 0)
        .group_by(SampleRow.concurrency, SampleRow.error_kind)
        .order_by(SampleRow.concurrency, SampleRow.error_kind)
    )
    with session_factory(engine)() as session:
        found = session.execute(groups).all()
        firsts = {
            row_id: text
            for row_id, text in session.execute(
                select(SampleRow.id, SampleRow.sample_json).where(SampleRow.id.in_([r[3] for r in found]))
            )
        }
    rows: list[dict[str, object]] = []
    for concurrency, kind, count, first_id in found:
        example = RequestSample.model_validate_json(firsts[first_id]).error if first_id in firsts else None
        rows.append(
            {"concurrency": concurrency, "error kind": str(kind), "requests": int(count), "example": example or ""}
        )
    return rows


def delete_run(engine: Engine, run_id: str) -> bool:
    """Delete a run with its levels and samples; True if it existed."""
    with session_factory(engine)() as session, session.begin():
        session.execute(delete(SampleRow).where(SampleRow.run_id == run_id))
        session.execute(delete(LevelRow).where(LevelRow.run_id == run_id))
        result = session.execute(delete(RunRow).where(RunRow.id == run_id))
        return rowcount(result) > 0


def confirm_served_model(engine: Engine, run_id: str) -> bool:
    """Record that a run measured its declared model whatever the server called it; True if the run exists."""
    with session_factory(engine)() as session, session.begin():
        result = session.execute(update(RunRow).where(RunRow.id == run_id).values(model_confirmed=True))
        return rowcount(result) > 0


def model_confirmed(engine: Engine, run_id: str) -> bool:
    """Whether the user confirmed the run measured its declared model (False for an unknown run)."""
    with session_factory(engine)() as session:
        return bool(session.scalar(select(RunRow.model_confirmed).where(RunRow.id == run_id)))


@dataclass(frozen=True)
class LevelAggregate:
    """Per-level figures computed in SQL from the stored samples (means; percentiles need get_run)."""

    level_index: int
    concurrency: int
    requests: int
    completed: int
    failed: int
    ttft_mean_ms: float | None
    tpot_mean_ms: float | None
    e2e_mean_ms: float | None
    input_tokens: int
    output_tokens: int


def level_aggregates(engine: Engine, run_id: str) -> list[LevelAggregate]:
    """Counts, token totals and mean latencies per level of a run, from its samples (warm-up excluded)."""
    ok_int = case((SampleRow.ok.is_(True), 1), else_=0)

    def ok_only(column: object) -> object:
        return case((SampleRow.ok.is_(True), column), else_=None)

    query = (
        select(
            SampleRow.level_index,
            func.max(SampleRow.concurrency),
            func.count(),
            func.sum(ok_int),
            func.avg(ok_only(SampleRow.ttft_ms)),
            func.avg(ok_only(SampleRow.tpot_ms)),
            func.avg(ok_only(SampleRow.e2e_ms)),
            func.coalesce(func.sum(ok_only(SampleRow.input_tokens)), 0),
            func.coalesce(func.sum(ok_only(SampleRow.output_tokens)), 0),
        )
        .where(SampleRow.run_id == run_id, SampleRow.level_index >= 0)
        .group_by(SampleRow.level_index)
        .order_by(SampleRow.level_index)
    )
    with session_factory(engine)() as session:
        rows = session.execute(query).all()
    return [
        LevelAggregate(
            level_index=int(r[0]),
            concurrency=int(r[1]),
            requests=int(r[2]),
            completed=int(r[3] or 0),
            failed=int(r[2]) - int(r[3] or 0),
            ttft_mean_ms=_float(r[4]),
            tpot_mean_ms=_float(r[5]),
            e2e_mean_ms=_float(r[6]),
            input_tokens=int(r[7]),
            output_tokens=int(r[8]),
        )
        for r in rows
    ]


def _float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


class RunRecorder:
    """Persists a run as it goes: hand its on_* methods to probes.ProbeRun, which calls them as the run goes."""

    def __init__(self, engine: Engine, settings: RunSettings) -> None:
        self.engine = engine
        self.run_id = create_run(engine, settings)

    def on_sample(self, sample: RequestSample) -> None:
        """Store one finished request."""
        add_sample(self.engine, self.run_id, sample)

    def on_level(self, level: LevelResult) -> None:
        """Store one finished level."""
        add_level(self.engine, self.run_id, level)

    def on_heartbeat(self) -> None:
        """Keep the run from being taken as interrupted."""
        heartbeat(self.engine, self.run_id)

    def on_deployment(self, deployment: Deployment) -> None:
        """Record the deployment as the server told it."""
        set_deployment(self.engine, self.run_id, deployment)

    def on_finish(self, result: RunResult | None, error: BaseException | None) -> None:
        """Final status: the result's, or FAILED with the exception's message."""
        if result is not None:
            finish_run(
                self.engine,
                self.run_id,
                result.status,
                error=result.error,
                best_concurrency_within_slo=result.best_concurrency_within_slo,
                notes=result.notes,
            )
        else:
            message = f"{type(error).__name__}: {error}" if error is not None else "cancelled before it started"
            status = RunStatus.FAILED if error is not None else RunStatus.CANCELLED
            finish_run(self.engine, self.run_id, status, error=message)


def peak_output_tok_s(engine: Engine, run_ids: list[str]) -> dict[str, float]:
    """Each run's highest output tokens/s over its finished levels (runs without one are left out)."""
    if not run_ids:
        return {}
    query = (
        select(LevelRow.run_id, func.max(LevelRow.output_tok_s))
        .where(LevelRow.run_id.in_(run_ids), LevelRow.output_tok_s.is_not(None))
        .group_by(LevelRow.run_id)
    )
    with session_factory(engine)() as session:
        return {run_id: float(value) for run_id, value in session.execute(query).all() if value is not None}


def best_request_rates(engine: Engine, run_ids: list[str]) -> dict[str, float]:
    """Each run's highest request rate whose level met the SLO (runs without rate levels, or none met, left out)."""
    if not run_ids:
        return {}
    query = select(LevelRow.run_id, LevelRow.result_json).where(
        LevelRow.run_id.in_(run_ids), LevelRow.slo_met.is_(True)
    )
    best: dict[str, float] = {}
    with session_factory(engine)() as session:
        for run_id, result_json in session.execute(query).all():
            rate = json.loads(result_json).get("request_rate_rps")
            if isinstance(rate, (int, float)) and rate > best.get(run_id, 0.0):
                best[run_id] = float(rate)
    return best
