"""Imported runs stored as runs: one transaction per file (all of its runs or none), recognized again by SHA-256."""

import json
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, exists, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from db.engine import session_factory
from db.recorder import MAX_TEXT_CHARS, deployment_columns, level_row, sample_row, settings_json_text
from db.recovery import owner
from db.run_tables import ImportRow, RunRow
from probes.importers.base import ImportedRun


class ImportStoreError(Exception):
    """The file's runs could not be stored; nothing of the file was."""


@dataclass(frozen=True)
class StoredImport:
    """Where a stored run came from (read model of run_imports)."""

    run_id: str
    format: str
    tool: str
    tool_version: str | None
    file_name: str
    file_sha256: str
    part: int
    settings: dict[str, object]
    imported_at: datetime
    aggregate_only: bool

    @property
    def tool_text(self) -> str:
        """The tool and its release, as lists show it ('guidellm 0.8.1'; the tool alone when the file gave none)."""
        return f"{self.tool} {self.tool_version}" if self.tool_version else self.tool


def is_imported(engine: Engine, file_sha256: str) -> bool:
    """Whether a file with this content was imported before."""
    with session_factory(engine)() as session:
        return bool(session.scalar(select(exists().where(ImportRow.file_sha256 == file_sha256))))


def _add_run(session: Session, run: ImportedRun) -> str:
    """Insert one run with its levels, samples and provenance (inside the caller's transaction)."""
    result, provenance = run.result, run.provenance
    settings = result.settings
    run_id = uuid.uuid4().hex
    session.add(
        RunRow(
            id=run_id,
            endpoint=result.endpoint[:500],
            model=result.model[:300],
            api=str(settings.api),
            workload=str(settings.workload),
            status=result.status.value,
            settings_json=settings_json_text(settings),
            started_at=result.started_at,
            finished_at=result.finished_at,
            heartbeat_at=result.finished_at or result.started_at,
            owner=owner(),
            label=settings.label,
            notes_json=json.dumps([note[:MAX_TEXT_CHARS] for note in result.notes]),
            best_concurrency_within_slo=result.best_concurrency_within_slo,
            **deployment_columns(settings.deployment),
        )
    )
    session.flush()  # the run before the rows that refer to it
    session.add_all([level_row(run_id, level) for level in result.levels])
    session.add_all([sample_row(run_id, sample) for sample in result.samples])
    session.add(
        ImportRow(
            run_id=run_id,
            format=provenance.format[:32],
            tool=provenance.tool[:100],
            tool_version=provenance.tool_version[:100] if provenance.tool_version else None,
            file_name=provenance.file_name[:300],
            file_sha256=provenance.file_sha256,
            part=provenance.part,
            settings_json=json.dumps(provenance.settings, default=str),
            imported_at=provenance.imported_at,
            aggregate_only=run.aggregate_only,
        )
    )
    session.flush()
    return run_id


def store_imported(engine: Engine, runs: Sequence[ImportedRun]) -> list[str] | None:
    """Store one file's runs in one transaction; their ids, or None when the file was imported before.

    Anything failing stores nothing of the file (ImportStoreError says why).
    """
    if not runs:
        return []
    shas = {run.provenance.file_sha256 for run in runs}
    try:
        with session_factory(engine)() as session, session.begin():
            if session.scalar(select(exists().where(ImportRow.file_sha256.in_(shas)))):
                return None
            return [_add_run(session, run) for run in runs]
    except IntegrityError as exc:
        if any(is_imported(engine, sha) for sha in shas):  # the same file, stored meanwhile by another import
            return None
        raise ImportStoreError(f"the runs could not be stored: {exc.orig}") from None


def _stored(row: ImportRow) -> StoredImport:
    imported = row.imported_at if row.imported_at.tzinfo else row.imported_at.replace(tzinfo=UTC)
    settings = json.loads(row.settings_json or "{}")
    return StoredImport(
        run_id=row.run_id,
        format=row.format,
        tool=row.tool,
        tool_version=row.tool_version,
        file_name=row.file_name,
        file_sha256=row.file_sha256,
        part=row.part,
        settings=settings if isinstance(settings, dict) else {},
        imported_at=imported,
        aggregate_only=bool(row.aggregate_only),
    )


def imports_of(engine: Engine, run_ids: Collection[str]) -> dict[str, StoredImport]:
    """The provenance of those runs that were imported (probe runs are left out)."""
    if not run_ids:
        return {}
    with session_factory(engine)() as session:
        rows = session.scalars(select(ImportRow).where(ImportRow.run_id.in_(list(run_ids))))
        return {row.run_id: _stored(row) for row in rows}


def import_of(engine: Engine, run_id: str) -> StoredImport | None:
    """Where the run came from, or None for a probe run."""
    return imports_of(engine, [run_id]).get(run_id)
