"""Stored probe runs of one deployment, level by level: the measurements an estimate of that deployment rests on."""

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, select

from db.engine import session_factory
from db.run_tables import LevelRow, RunRow
from probes.deployment import Deployment
from probes.models import LevelResult, RunStatus


@dataclass(frozen=True)
class CalibrationLevel:
    """One finished level of a run: its load and what was measured (None: not measured)."""

    concurrency: int
    request_rate_rps: float | None  # the offered Poisson rate; None: closed loop (concurrency alone set the load)
    req_s: float | None  # completed requests per second of the level's wall time
    input_tokens_mean: float | None  # per completed request, from the server's usage (None without it)
    output_tokens_mean: float | None  # per completed request
    ttft_p50_ms: float | None
    tpot_p50_ms: float | None
    output_tok_s: float | None  # output tokens per second of the level's wall time
    completed: int
    failed: int
    slo_met: bool


@dataclass(frozen=True)
class CalibrationRun:
    """A completed run of the deployment asked for, with its finished levels in order."""

    run_id: str
    label: str
    endpoint: str
    served_model: str  # the model name as the server served it
    model_confirmed: bool  # the user confirmed the run measured `model` whatever the server called it
    started_at: datetime
    workload: str
    max_tokens: int
    gpu: str
    gpu_count: int
    model: str
    engine: str
    quant: str
    levels: tuple[CalibrationLevel, ...]


def _level(row: LevelRow) -> CalibrationLevel:
    result = LevelResult.model_validate_json(row.result_json)
    return CalibrationLevel(
        concurrency=row.concurrency,
        request_rate_rps=result.request_rate_rps,
        req_s=result.req_s,
        input_tokens_mean=result.input_tokens_per_request,
        output_tokens_mean=result.output_tokens_per_request,
        ttft_p50_ms=row.ttft_p50_ms,
        tpot_p50_ms=row.tpot_p50_ms,
        output_tok_s=row.output_tok_s,
        completed=row.completed,
        failed=row.failed,
        slo_met=row.slo_met,
    )


def calibration_runs(
    bind: Engine,
    /,
    *,
    gpu: str | None = None,
    gpus: int | None = None,
    model: str | None = None,
    engine: str | None = None,
    quant: str | None = None,
) -> list[CalibrationRun]:
    """The completed runs that measured exactly this deployment, newest first, each with its finished levels.

    `gpu`, `model`, `engine` and `quant` are catalog ids or names matched as the probe's settings match them
    ('H100', 'Qwen/Qwen2.5-7B-Instruct', 'trtllm'); an unknown name raises ValueError naming it. `gpus` is the
    total GPU count of the deployment. A filter left out matches any value (no filter at all: every completed run
    whose deployment is known, as an estimate looking for its own configuration wants them). Runs whose deployment
    is partly unknown, and levels where no request
    completed (and so runs without such a level), are left out: they cannot say how that deployment performs.
    """
    wanted = Deployment(gpu=gpu, gpu_count=gpus, model=model, engine=engine, quant=quant)
    columns = (
        (RunRow.deploy_gpu, wanted.gpu),
        (RunRow.deploy_gpu_count, wanted.gpu_count),
        (RunRow.deploy_model, wanted.model),
        (RunRow.deploy_engine, wanted.engine),
        (RunRow.deploy_quant, wanted.quant),
    )
    conditions = [column == value if value is not None else column.is_not(None) for column, value in columns]
    runs = (
        select(RunRow)
        .where(RunRow.status == RunStatus.COMPLETED.value, *conditions)
        .order_by(RunRow.started_at.desc(), RunRow.id)
    )
    with session_factory(bind)() as session:
        rows = list(session.scalars(runs))
        levels = (
            list(
                session.scalars(
                    select(LevelRow)
                    .where(LevelRow.run_id.in_([r.id for r in rows]), LevelRow.completed > 0)
                    .order_by(LevelRow.run_id, LevelRow.level_index)
                )
            )
            if rows
            else []
        )
    by_run: dict[str, list[CalibrationLevel]] = {}
    for level in levels:
        by_run.setdefault(level.run_id, []).append(_level(level))
    # A run without a level that completed a request says nothing of the deployment: left out.
    return [_run(row, tuple(by_run[row.id])) for row in rows if row.id in by_run]


def _run(row: RunRow, levels: tuple[CalibrationLevel, ...]) -> CalibrationRun:
    """A stored run of a known deployment, with its finished levels."""
    return CalibrationRun(
        run_id=row.id,
        label=row.label,
        endpoint=row.endpoint,
        served_model=row.model,
        model_confirmed=bool(row.model_confirmed),
        started_at=row.started_at if row.started_at.tzinfo else row.started_at.replace(tzinfo=UTC),
        workload=row.workload,
        max_tokens=row.settings.max_tokens,
        gpu=str(row.deploy_gpu),
        gpu_count=int(row.deploy_gpu_count or 0),
        model=str(row.deploy_model),
        engine=str(row.deploy_engine),
        quant=str(row.deploy_quant),
        levels=levels,
    )
