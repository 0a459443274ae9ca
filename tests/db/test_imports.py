"""Imported runs stored as runs (SQLite and PostgreSQL): whole files or nothing, recognized again, and calibrating."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from db import calibration_runs, get_run, import_of, init_db, list_runs, make_engine, store_imported
from db.engine import session_factory
from db.imports import ImportStoreError
from db.recorder import delete_run
from db.run_tables import ImportRow, LevelRow, RunRow, SampleRow
from perf import PerfRequest, estimate
from probes.deployment import Deployment
from probes.importers.common import with_given
from probes.importers.registry import read_runs
from tests.support import ROOT
from ui.calibration import from_stored

FIXTURES = ROOT / "tests" / "fixtures" / "imports"
NOW = datetime(2026, 12, 6, 1, 0, tzinfo=UTC)
H100 = Deployment(gpu="h100-80gb-sxm", gpu_count=1, engine="vllm", quant="bf16")


def engine_for(url: str) -> Engine:
    engine = make_engine(url)
    init_db(engine)
    return engine


def _count(engine: Engine, table: type) -> int:
    with session_factory(engine)() as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def _read(path: Path, deployment: Deployment = H100) -> list:
    return [with_given(run, deployment) for run in read_runs(path, NOW)]


def test_an_imported_run_reads_back_as_a_run_with_its_provenance(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    runs = _read(FIXTURES / "aiperf" / "run1")
    [run_id] = store_imported(engine, runs) or []
    stored = get_run(engine, run_id)
    assert stored is not None
    assert stored.levels == runs[0].result.levels
    assert len(stored.samples) == 40 and stored.samples[0].ttft_ms == runs[0].result.samples[0].ttft_ms
    assert stored.settings.deployment.model == "qwen2.5-7b" and stored.settings.deployment.gpu == "h100-80gb-sxm"
    assert [r.id for r in list_runs(engine)] == [run_id]
    where = import_of(engine, run_id)
    assert where is not None
    assert (where.format, where.tool_text, where.aggregate_only) == ("aiperf", "aiperf 0.13.0", False)
    assert where.file_sha256 == runs[0].provenance.file_sha256 and where.imported_at == NOW
    assert "cli_command" in where.settings


def test_the_same_file_imported_twice_stores_nothing_new(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    path = FIXTURES / "guidellm" / "benchmarks.json"
    first = store_imported(engine, _read(path))
    assert first is not None and len(first) == 2
    assert store_imported(engine, _read(path, Deployment())) is None  # other flags, same content: recognized
    assert _count(engine, RunRow) == 2 and _count(engine, ImportRow) == 2


def test_a_file_that_fails_midway_stores_nothing(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    good, second = _read(FIXTURES / "guidellm" / "benchmarks.json")
    clash = second.model_copy(update={"provenance": second.provenance.model_copy(update={"part": 0})})
    with pytest.raises(ImportStoreError):
        store_imported(engine, [good, clash])  # the second run's row is refused after the first was written
    for table in (RunRow, LevelRow, SampleRow, ImportRow):
        assert _count(engine, table) == 0
    assert store_imported(engine, [good, second]) is not None  # and the file can still come in whole


def test_deleting_an_imported_run_deletes_its_provenance(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    [run_id] = store_imported(engine, _read(FIXTURES / "vllm" / "vllm_aggregate.json")) or []
    assert delete_run(engine, run_id)
    assert _count(engine, ImportRow) == 0


def test_an_aggregate_only_import_calibrates_the_estimate_of_its_deployment(database_url: str) -> None:
    engine = engine_for(database_url)
    [run_id] = store_imported(engine, _read(FIXTURES / "vllm" / "vllm_aggregate.json")) or []
    found = calibration_runs(engine, gpu="h100-80gb-sxm", gpus=1, model="qwen2.5-7b", engine="vllm", quant="bf16")
    assert [r.run_id for r in found] == [run_id]
    level = found[0].levels[0]
    assert level.tpot_p50_ms == pytest.approx(3.005820129000049) and level.concurrency == 8  # the file's, as given
    request = PerfRequest(
        gpu="h100-80gb-sxm", gpus=1, model="qwen2.5-7b", engine="vllm", quant="bf16", input_tokens=256, output_tokens=32
    )
    plain, calibrated = estimate(request), estimate(request, [from_stored(found[0])])
    assert calibrated.basis.kind == "calibrated" and run_id in calibrated.basis.run_ids
    assert plain.basis.kind != "calibrated"
