"""Writes of a probe run: the recorder (the run's sink, probes/sink.py) as it runs, and the user's later changes."""

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import Engine, delete, update

from db.engine import rowcount, session_factory
from db.recovery import owner
from db.run_tables import ImportRow, LevelRow, PowerRow, RunRow, SampleRow
from probes.config import RunSettings, redact_url
from probes.deployment import Deployment
from probes.models import LevelResult, RequestSample, RunResult, RunStatus, WorkerStats
from probes.power import PowerSample

MAX_TEXT_CHARS = 2000


def _now() -> datetime:
    return datetime.now(UTC)


def deployment_columns(deployment: Deployment) -> dict[str, object]:
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


def settings_json_text(settings: RunSettings) -> str:
    text = settings.model_dump_json()
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    if key and key in text:  # defence in depth: the model never serialises it
        text = text.replace(key, "***")
    return text


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
        settings_json=settings_json_text(settings),
        started_at=now,
        heartbeat_at=now,
        owner=owner(),
        label=settings.label,
        **deployment_columns(settings.deployment),
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
        row.settings_json = settings_json_text(row.settings.model_copy(update={"deployment": deployment}))
        for column, value in deployment_columns(deployment).items():
            setattr(row, column, value)
        row.heartbeat_at = _now()


def sample_row(run_id: str, sample: RequestSample) -> SampleRow:
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
        worker=sample.worker,
        scheduled_s=sample.scheduled_s,
        sent_s=sample.start_s,
        sample_json=sample.model_dump_json(),
    )


def add_samples(engine: Engine, run_id: str, samples: list[RequestSample]) -> None:
    """Store finished requests in one short transaction, and beat the run's heartbeat."""
    if not samples:
        return
    with session_factory(engine)() as session, session.begin():
        session.add_all([sample_row(run_id, s) for s in samples])
        session.execute(update(RunRow).where(RunRow.id == run_id).values(heartbeat_at=_now()))


def add_sample(engine: Engine, run_id: str, sample: RequestSample) -> None:
    """Store one finished request (as it arrives)."""
    add_samples(engine, run_id, [sample])


def add_power(engine: Engine, run_id: str, samples: Sequence[PowerSample]) -> None:
    """Store GPU power readings (and failed scrapes) in one short transaction."""
    if not samples:
        return
    rows = [
        PowerRow(
            run_id=run_id,
            at=s.at,
            gpu=s.gpu[:100],
            power_w=s.power_w,
            energy_mj=s.energy_mj,
            error=s.error[:300] if s.error else None,
        )
        for s in samples
    ]
    with session_factory(engine)() as session, session.begin():
        session.add_all(rows)


def level_row(run_id: str, level: LevelResult) -> LevelRow:
    """A level's row: its figures the lists sort by, and the whole result as JSON."""
    return LevelRow(
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


def add_level(engine: Engine, run_id: str, level: LevelResult) -> None:
    """Store a finished level's result (replacing one stored before for the same index)."""
    with session_factory(engine)() as session, session.begin():
        session.execute(delete(LevelRow).where(LevelRow.run_id == run_id, LevelRow.level_index == level.index))
        session.add(level_row(run_id, level))
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
    workers: Sequence[WorkerStats] = (),
    partial_reason: str | None = None,
) -> None:
    """Set the final status, the notes that qualify the figures, and (--workers) the workers and why it is partial."""
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
                workers_json=json.dumps([worker.model_dump(mode="json") for worker in workers]),
                partial=partial_reason is not None,
                partial_reason=partial_reason[:MAX_TEXT_CHARS] if partial_reason else None,
            )
        )


def delete_run(engine: Engine, run_id: str) -> bool:
    """Delete a run with its levels, samples and (imported) provenance; True if it existed."""
    with session_factory(engine)() as session, session.begin():
        session.execute(delete(ImportRow).where(ImportRow.run_id == run_id))
        session.execute(delete(SampleRow).where(SampleRow.run_id == run_id))
        session.execute(delete(PowerRow).where(PowerRow.run_id == run_id))
        session.execute(delete(LevelRow).where(LevelRow.run_id == run_id))
        result = session.execute(delete(RunRow).where(RunRow.id == run_id))
        return rowcount(result) > 0


def confirm_served_model(engine: Engine, run_id: str) -> bool:
    """Record that a run measured its declared model whatever the server called it; True if the run exists."""
    with session_factory(engine)() as session, session.begin():
        result = session.execute(update(RunRow).where(RunRow.id == run_id).values(model_confirmed=True))
        return rowcount(result) > 0


class RunRecorder:
    """The run's sink (probes/sink.py) that stores it as it goes: hand it to probes.ProbeRun(settings, sink=...).

    Each event is one short transaction; every write also beats the run's heartbeat.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.run_id: str | None = None  # set by started()

    def _id(self) -> str:
        if self.run_id is None:
            raise RuntimeError("the recorder was not told the run started")
        return self.run_id

    def started(self, settings: RunSettings) -> str | None:
        """Insert the RUNNING run; its id."""
        self.run_id = create_run(self.engine, settings)
        return self.run_id

    def deployment(self, deployment: Deployment) -> None:
        """Record the deployment as the server told it."""
        set_deployment(self.engine, self._id(), deployment)

    def samples(self, samples: Sequence[RequestSample]) -> None:
        """Store finished requests in one transaction."""
        add_samples(self.engine, self._id(), list(samples))

    def level_finished(self, level: LevelResult) -> None:
        """Store one finished level."""
        add_level(self.engine, self._id(), level)

    def power(self, samples: Sequence[PowerSample]) -> None:
        """Store the GPU power readings of a scrape."""
        add_power(self.engine, self._id(), samples)

    def heartbeat(self) -> None:
        """Keep the run from being taken as interrupted."""
        heartbeat(self.engine, self._id())

    def finished(self, result: RunResult) -> None:
        """Final status, the best concurrency within the SLO and the notes: the result's."""
        finish_run(
            self.engine,
            self._id(),
            result.status,
            error=result.error,
            best_concurrency_within_slo=result.best_concurrency_within_slo,
            notes=result.notes,
            workers=result.workers,
            partial_reason=(result.partial_reason or "a worker was lost") if result.partial else None,
        )

    def failed(self, error: BaseException | None) -> None:
        """FAILED with the exception's message; CANCELLED when the run was cancelled before it started."""
        message = f"{type(error).__name__}: {error}" if error is not None else "cancelled before it started"
        status = RunStatus.FAILED if error is not None else RunStatus.CANCELLED
        finish_run(self.engine, self._id(), status, error=message)
