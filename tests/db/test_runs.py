"""Probe runs in the database (SQLite and PostgreSQL): store as samples arrive, load, list, aggregate, delete,
interrupted-run recovery by stale heartbeat, and no secret in any stored row."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, text

from db import init_db, make_engine
from db.recorder import RunRecorder, add_sample, create_run, delete_run, finish_run, heartbeat
from db.recovery import recover_interrupted_runs
from db.run_queries import get_run, get_run_row, level_aggregates, list_runs, run_filters
from fakeserver import Behaviour, serve_in_thread
from probes import ProbeRun, RunSettings, RunStatus, run_probe
from probes.models import ErrorKind, RequestSample, TokenSource

KEY = "sk-db-test-SECRET-987"


def engine_for(url: str) -> Engine:
    engine = make_engine(url)
    init_db(engine)
    return engine


def settings(base_url: str = "http://user:pw@127.0.0.1:9/v1?token=abc", **changes) -> RunSettings:
    return RunSettings(
        base_url=base_url, model="fake", api_key=KEY, concurrency=(1, 2), requests_per_level=3, **changes
    )


def sample(level: int, index: int, ttft: float = 50.0, kind: ErrorKind | None = None) -> RequestSample:
    ok = kind is None
    return RequestSample(
        level_index=level,
        concurrency=level + 1,
        index=index,
        start_s=0.01 * index,
        ttft_ms=ttft,
        tpot_ms=5.0 if ok else None,
        e2e_ms=ttft + 100,
        chunk_ms=[ttft, ttft + 5],
        input_tokens=10 if ok else None,
        output_tokens=20 if ok else None,
        token_source=TokenSource.USAGE if ok else None,
        error_kind=kind,
        error="failed" if kind else None,
    )


def all_stored_text(engine: Engine) -> str:
    with engine.connect() as connection:
        rows = []
        for table in ("probe_runs", "probe_levels", "probe_samples"):
            rows += [str(tuple(r)) for r in connection.execute(text(f"SELECT * FROM {table}"))]
    return "\n".join(rows)


def test_a_real_run_is_stored_as_it_goes_and_loads_back(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=4), api_key=KEY) as server:
        run_settings = settings(server.base_url)
        recorder = RunRecorder(engine)
        probe = ProbeRun(run_settings, sink=recorder).start()
        assert probe.wait(20)
    result = probe.result()
    assert result.status == RunStatus.COMPLETED and not probe.sink_errors
    stored = get_run(engine, recorder.run_id)
    assert stored.run_id == recorder.run_id and stored.status == RunStatus.COMPLETED

    def order(samples: list) -> list:
        return sorted(samples, key=lambda sample: (sample.level_index, sample.index))

    # Stored samples come back in send order; the run lists them as they completed.
    assert order(stored.samples) == order(result.samples) and stored.levels == result.levels
    assert stored.best_concurrency_within_slo == result.best_concurrency_within_slo == 2
    assert stored.settings.api_key is None and stored.endpoint == server.base_url
    assert [a.completed for a in level_aggregates(engine, recorder.run_id)] == [3, 3]
    assert KEY not in all_stored_text(engine)
    engine.dispose()


def test_lifecycle_list_filter_aggregate_delete(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    first = create_run(engine, settings(), started_at=datetime.now(UTC) - timedelta(hours=1))
    second = create_run(engine, settings(base_url="http://other:8000/v1"))
    for i in range(3):
        add_sample(engine, first, sample(0, i, ttft=40.0 + 10 * i))
    add_sample(engine, first, sample(1, 0, kind=ErrorKind.RATE_LIMITED))
    add_sample(engine, first, sample(1, 1, ttft=90.0))
    finish_run(engine, first, RunStatus.COMPLETED)
    assert [r.id for r in list_runs(engine)] == [second, first]  # newest first
    assert [r.id for r in list_runs(engine, endpoint="http://127.0.0.1:9/v1")] == [first]
    assert [r.id for r in list_runs(engine, status=RunStatus.RUNNING)] == [second]
    assert list_runs(engine, model="nope") == []
    endpoints, models = run_filters(engine)
    assert endpoints == ["http://127.0.0.1:9/v1", "http://other:8000/v1"] and models == ["fake"]
    aggregates = level_aggregates(engine, first)
    assert [(a.level_index, a.requests, a.completed, a.failed) for a in aggregates] == [(0, 3, 3, 0), (1, 2, 1, 1)]
    assert aggregates[0].ttft_mean_ms == pytest.approx(50.0) and aggregates[0].output_tokens == 60
    assert aggregates[1].ttft_mean_ms == pytest.approx(90.0)  # failed requests are not averaged
    loaded = get_run(engine, first)
    assert [lv.completed for lv in loaded.levels] == [3, 1]  # recomputed from samples when no level row was stored
    assert loaded.levels[1].errors == {"rate_limited": 1}
    assert delete_run(engine, first) and not delete_run(engine, first)
    assert get_run(engine, first) is None and level_aggregates(engine, first) == []
    assert KEY not in all_stored_text(engine) and "pw" not in all_stored_text(engine)
    assert "token=abc" not in all_stored_text(engine)
    engine.dispose()


def test_a_run_whose_process_died_is_marked_interrupted_with_its_samples_kept(any_database_url: str) -> None:
    engine = engine_for(any_database_url)
    dead = create_run(engine, settings())
    alive = create_run(engine, settings())  # another replica's run, still beating
    add_sample(engine, dead, sample(0, 0))
    add_sample(engine, dead, sample(0, 1))
    later = datetime.now(UTC) + timedelta(seconds=300)
    with engine.begin() as connection:  # the dead one's last heartbeat was long ago
        connection.execute(
            text("UPDATE probe_runs SET heartbeat_at = :t WHERE id = :id"),
            {"t": datetime.now(UTC) - timedelta(seconds=600), "id": dead},
        )
    heartbeat(engine, alive)
    assert recover_interrupted_runs(engine, stale_after_s=120) == 1
    assert recover_interrupted_runs(engine, stale_after_s=120) == 0  # idempotent
    assert get_run_row(engine, alive).status == RunStatus.RUNNING
    interrupted = get_run(engine, dead)
    assert interrupted.status == RunStatus.INTERRUPTED and "stopped" in interrupted.error
    assert len(interrupted.samples) == 2 and interrupted.levels[0].completed == 2
    assert recover_interrupted_runs(engine, stale_after_s=120, now=later) == 1  # the alive one, once it stops
    engine.dispose()


def test_cli_style_run_with_unreachable_endpoint_is_stored_failed(database_url: str) -> None:
    engine = engine_for(database_url)
    run_settings = settings("http://127.0.0.1:9/v1")
    recorder = RunRecorder(engine)
    recorder.started(run_settings)
    result = asyncio.run(run_probe(run_settings, sink=recorder))
    recorder.finished(result)
    row = get_run_row(engine, recorder.run_id)
    assert row.status == RunStatus.FAILED and "cannot reach" in row.error and row.finished_at is not None
    engine.dispose()


def test_opening_a_run_without_samples_gives_the_same_levels_and_counts_in_sql(database_url: str) -> None:
    from db import init_db, make_engine
    from db.recorder import RunRecorder
    from db.run_queries import error_summary, get_run, sample_counts
    from fakeserver import serve_in_thread
    from probes.config import RunSettings
    from probes.figures import error_rows
    from probes.worker import ProbeRun

    engine = make_engine(database_url)
    init_db(engine)
    with serve_in_thread() as fake:
        settings = RunSettings(
            base_url=fake.base_url,
            model="fake:tokens=4,ttft_ms=1,tpot_ms=1",
            concurrency=(1, 2),
            requests_per_level=3,
            max_tokens=4,
        )
        rec = RunRecorder(engine)
        run = ProbeRun(settings, sink=rec).start()
        assert run.wait(30)
        failing = RunSettings(
            base_url=fake.base_url, model="fake:fault=500", concurrency=(1,), requests_per_level=2, max_tokens=4
        )
        rec2 = RunRecorder(engine)
        run2 = ProbeRun(failing, sink=rec2).start()
        assert run2.wait(30)
    for recorder in (rec, rec2):
        full = get_run(engine, recorder.run_id)
        light = get_run(engine, recorder.run_id, with_samples=False)
        assert light.samples == [] and light.levels == full.levels
        assert sample_counts(engine, recorder.run_id) == (len(full.samples), sum(not s.ok for s in full.samples))
        assert error_summary(engine, recorder.run_id) == error_rows(full)
    assert sample_counts(engine, rec2.run_id)[1] == 2
