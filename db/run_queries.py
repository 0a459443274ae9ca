"""Reads of stored probe runs, as read models: a run's summary row (StoredRun), its result, its figures in SQL."""

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, case, func, select

from db.engine import session_factory
from db.run_tables import LevelRow, PowerRow, RunRow, SampleRow
from probes.config import RunSettings
from probes.deployment import STORED
from probes.metrics import best_concurrency_within_slo, best_request_rate_within_slo, summarize_level, with_energy
from probes.models import LevelResult, RequestSample, RunResult, RunStatus, WorkerStats
from probes.power import PowerSample
from probes.ratesearch import search_of_levels
from probes.turn_stats import level_turn_stats
from settings import get_settings


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class StoredRun:
    """A stored run as lists show it: its row without the samples (the endpoint without credentials)."""

    id: str
    endpoint: str
    model: str
    api: str
    workload: str
    status: str  # a RunStatus value
    settings_json: str
    error: str | None
    started_at: datetime
    finished_at: datetime | None
    heartbeat_at: datetime
    owner: str
    label: str
    notes_json: str
    best_concurrency_within_slo: int | None
    deploy_gpu: str | None  # the deployment measured (catalog ids; None: not known)
    deploy_gpu_count: int | None
    deploy_model: str | None
    deploy_engine: str | None
    deploy_quant: str | None
    model_confirmed: bool  # the user confirmed the run measured deploy_model whatever the server called it
    partial: bool  # --workers: a worker was lost mid-run
    partial_reason: str | None
    workers_json: str  # --workers: the workers (WorkerStats), "[]" otherwise

    @classmethod
    def of_row(cls, row: RunRow) -> "StoredRun":
        """The read model of a table row."""
        return cls(**{name: getattr(row, name) for name in cls.__dataclass_fields__})

    @property
    def settings(self) -> RunSettings:
        """The stored settings (never with a key); names the catalog no longer knows are kept as stored."""
        return RunSettings.model_validate_json(self.settings_json, context={STORED: True})


def list_runs(
    engine: Engine,
    *,
    endpoint: str | None = None,
    model: str | None = None,
    status: RunStatus | None = None,
    limit: int = 200,
    offset: int = 0,
) -> list[StoredRun]:
    """Runs, newest first, optionally filtered by endpoint, model (exact) and status."""
    query = select(RunRow).order_by(RunRow.started_at.desc(), RunRow.id).limit(limit).offset(offset)
    if endpoint:
        query = query.where(RunRow.endpoint == endpoint)
    if model:
        query = query.where(RunRow.model == model)
    if status is not None:
        query = query.where(RunRow.status == status.value)
    with session_factory(engine)() as session:
        return [StoredRun.of_row(row) for row in session.scalars(query)]


def run_filters(engine: Engine) -> tuple[list[str], list[str]]:
    """The distinct endpoints and models stored (for filter widgets)."""
    with session_factory(engine)() as session:
        endpoints = list(session.scalars(select(RunRow.endpoint).distinct().order_by(RunRow.endpoint)))
        models = list(session.scalars(select(RunRow.model).distinct().order_by(RunRow.model)))
    return endpoints, models


def get_run_row(engine: Engine, run_id: str) -> StoredRun | None:
    """The run's row, or None."""
    with session_factory(engine)() as session:
        row = session.get(RunRow, run_id)
        return StoredRun.of_row(row) if row is not None else None


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


def load_power(engine: Engine, run_id: str) -> list[PowerSample]:
    """The run's GPU power readings and failed scrapes, in time order (none: it scraped no DCGM exporter)."""
    query = select(PowerRow).where(PowerRow.run_id == run_id).order_by(PowerRow.at, PowerRow.id)
    with session_factory(engine)() as session:
        return [
            PowerSample(
                at=_aware(row.at) or _now(),
                gpu=row.gpu,
                power_w=row.power_w,
                energy_mj=row.energy_mj,
                error=row.error,
            )
            for row in session.scalars(query)
        ]


def load_levels(engine: Engine, run_id: str) -> list[LevelResult]:
    """The run's stored level results, in order."""
    query = select(LevelRow.result_json).where(LevelRow.run_id == run_id).order_by(LevelRow.level_index)
    with session_factory(engine)() as session:
        return [LevelResult.model_validate_json(text) for text in session.scalars(query)]


def _levels_from_samples(
    row: StoredRun, settings: RunSettings, samples: list[RequestSample], stored: list[LevelResult]
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
    result = RunResult(
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
        workers=[WorkerStats.model_validate(worker) for worker in json.loads(row.workers_json or "[]")],
        partial=row.partial,
        partial_reason=row.partial_reason,
    )
    power = load_power(engine, run_id) if settings.dcgm_url else []
    return with_energy(result, power) if power else result


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
